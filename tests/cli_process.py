"""`python -m clineval` as a separate process: what a user's shell runs, for the tests that
need a fresh interpreter (plugins on the path, import-time behaviour, exit codes and streams
exactly as printed)."""

from __future__ import annotations

import os
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
