"""Where the data lives: --data-dir, then $CLINEVAL_DATA_DIR, then ../shared/data if it exists."""

from __future__ import annotations

import os
from pathlib import Path

from clineval.errors import InputError

ENV_VAR = "CLINEVAL_DATA_DIR"


def _default_candidates() -> list[Path]:
    # The shared data folder sits beside the project checkout (../shared/data from its root).
    project_root = Path(__file__).resolve().parent.parent
    return [project_root.parent / "shared" / "data", Path.cwd().parent / "shared" / "data"]


def resolve_data_root(data_dir: str | Path | None = None, required: bool = False) -> Path | None:
    """The data root in order of precedence; None when nothing is configured or found."""
    if data_dir is not None:
        root = Path(data_dir).expanduser()
        if not root.is_dir():
            raise InputError("data directory does not exist", path=root)
        return root.resolve()
    env = os.environ.get(ENV_VAR)
    if env:
        root = Path(env).expanduser()
        if not root.is_dir():
            raise InputError(f"data directory from ${ENV_VAR} does not exist", path=root)
        return root.resolve()
    for candidate in _default_candidates():
        if candidate.is_dir():
            return candidate.resolve()
    if required:
        raise InputError(f"no data directory: pass --data-dir or set ${ENV_VAR}")
    return None


def require_file(root: Path, relative: str) -> Path:
    path = root / relative
    if not path.is_file():
        raise InputError("data file not found", path=path)
    return path
