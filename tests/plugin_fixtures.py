"""What the tests of the example plugins and of the judging kit's test-only benchmarks share:
an example installed the way a user installs it (pip, its own pyproject.toml, the
`clineval.benchmarks` entry point) into a directory put on this process's import path, and
the local stub server. tests/conftest.py hands them out as the `site` and `stub` fixtures.

A test module of an example names it as `EXAMPLE` (the example's folder); `example_cli`
runs `clineval` in this process, in that folder, where the plugin is found on `sys.path` as
a process finds it on `PYTHONPATH`; `example_process` runs the console entry in a new
interpreter, for the tests whose point is the process (a kill, the plugin on the path of a
fresh interpreter).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from cli_inprocess import Done, clineval_inprocess
from cli_process import clineval_process
from llm_stub_server import StubServer

from clineval.benchmarks import registry


def install(example: Path, target: Path) -> None:
    """`pip install --target TARGET EXAMPLE`, without dependencies (clineval is here)."""
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
         "--target", str(target), str(example)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip


@contextlib.contextmanager
def on_path(target: Path) -> Iterator[Path]:
    """`target` first on `sys.path` (the registry reads entry points from it), then gone."""
    sys.path.insert(0, str(target))
    registry.benchmarks.cache_clear()
    try:
        yield target
    finally:
        sys.path.remove(str(target))
        registry.benchmarks.cache_clear()


@contextlib.contextmanager
def stub_server() -> Iterator[StubServer]:
    """The stub answering at once (tests script their own latency)."""
    with StubServer(latency=0.0) as server:
        yield server


def example_cli(example: Path, *args: str) -> Done:
    """`clineval --quiet ARGS` in this process, in the example's folder."""
    return clineval_inprocess(*args, cwd=example)


def process_env(site: Path) -> dict[str, str]:
    """This process's environment with the installed plugin first on `PYTHONPATH`."""
    path = os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path, "PYTHONUNBUFFERED": "1"}


def example_process(example: Path, site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`clineval --quiet ARGS` in a new interpreter, in the example's folder, with the
    installed plugin on its `PYTHONPATH`."""
    return clineval_process(*args, cwd=example, paths=[site], env={"PYTHONUNBUFFERED": "1"})
