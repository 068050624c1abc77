"""`python -m clineval` as a separate process: what a user's shell runs, for the tests that
need a fresh interpreter (plugins on the path, import-time behaviour, exit codes and streams
exactly as printed)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def clineval_process(
    *args: str,
    cwd: Path,
    paths: Sequence[Path] = (),
    env: dict[str, str] | None = None,
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    """`clineval --quiet ARGS` run in `cwd` with this checkout (and `paths`, e.g. a directory
    of installed plugins) first on the import path; `env` adds to the environment."""
    path = [*map(str, paths), str(ROOT), os.environ.get("PYTHONPATH", "")]
    full_env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in path if p),
        "PYTHONUNBUFFERED": "1",
        **(env or {}),
    }
    return subprocess.run(
        [sys.executable, "-m", "clineval", "--quiet", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def default_sigint() -> None:
    """In a child before exec: SIGINT back to its default action. A child inherits an ignored
    SIGINT (pytest started from a background job or under nohup), and a Python that starts
    with SIGINT ignored never raises KeyboardInterrupt: a Ctrl-C test would then test the
    shell it was started from, not clineval."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


# `clineval ARGS...` that sends itself SIGNAL while it imports typer, the start-up's first
# heavy import: argv is [SIGNAL, ARGS...]
_SIGNAL_WHILE_STARTING = """
import builtins, os, signal, sys
which = getattr(signal, sys.argv[1])
original = builtins.__import__
def importing(name, *args, **kwargs):
    if name == "typer":
        os.kill(os.getpid(), which)
    return original(name, *args, **kwargs)
builtins.__import__ = importing
sys.argv = ["clineval", *sys.argv[2:]]
from clineval.entry import main
sys.exit(main())
"""


def signal_while_starting(signame: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`clineval ARGS` in a fresh process that receives `signame` mid-start-up."""
    return subprocess.run(
        [sys.executable, "-c", _SIGNAL_WHILE_STARTING, signame, *args],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=default_sigint,
    )
