"""Where the data lives.

The data root: --data-dir, then $CLINEVAL_DATA_DIR, then ../shared/data if it exists. The fetch
cache, where `clineval data fetch` puts corpora: $CLINEVAL_CACHE_DIR, else
~/.cache/clineval/data, laid out like a data root.

One rule for every data file a task reads by its path relative to the data root: it is taken
from the data root when it is there, else from the fetch cache (`search_roots`, `data_file`).
So a corpus fetched once is found from any working directory, with or without a data root.
"""

from __future__ import annotations

import os
from pathlib import Path

from clineval.errors import InputError

ENV_VAR = "CLINEVAL_DATA_DIR"
CACHE_ENV = "CLINEVAL_CACHE_DIR"


def default_cache_dir() -> Path:
    """Where `clineval data fetch` puts corpora unless told otherwise (--cache-dir)."""
    env = os.environ.get(CACHE_ENV)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "clineval" / "data"


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


def search_roots(root: Path | str | None) -> list[Path]:
    """Where a data file is looked for, in order: the data root (if any), then the fetch cache."""
    roots = [] if root is None else [Path(root)]
    cache = default_cache_dir()
    if all(os.path.abspath(cache) != os.path.abspath(r) for r in roots):
        roots.append(cache)
    return roots


def data_base(root: Path | str | None, relative: str) -> Path | None:
    """The first of `search_roots(root)` that holds the file at `relative`."""
    for base in search_roots(root):
        if os.path.isfile(base / relative):  # never raises (a name too long, a loop)
            return base
    return None


def data_file(root: Path | str | None, relative: str) -> Path | None:
    """The file at `relative` under the first of `search_roots(root)` that holds it."""
    base = data_base(root, relative)
    return None if base is None else base / relative


class MissingDataFile(InputError):
    """A data file in neither the data root nor the fetch cache. `relative` is its path under
    either; whoever knows which corpus holds it can name the command that fetches it."""

    def __init__(self, relative: str, root: Path | str | None, hint: str | None = None) -> None:
        self.relative = relative
        self.root = root
        cache = default_cache_dir()
        if root is None:
            where = f"data file not in the fetch cache, and no data root (--data-dir, ${ENV_VAR})"
            path = cache / relative
        else:
            where = f"data file not found, nor in the fetch cache {cache}"
            path = Path(root) / relative
        self.hint = hint
        super().__init__(where if hint is None else f"{where}; {hint}", path=path)

    def __reduce__(self) -> tuple[type[MissingDataFile], tuple[str, Path | str | None, str | None]]:
        # rebuilt from its own arguments when it crosses a process boundary (a CRF worker)
        return (MissingDataFile, (self.relative, self.root, self.hint))

    def with_hint(self, hint: str) -> MissingDataFile:
        """The same error, telling what to do."""
        return MissingDataFile(self.relative, self.root, hint)


def require_file(root: Path | str | None, relative: str) -> Path:
    """The path of a data file (data root first, then the fetch cache); MissingDataFile when
    neither holds it."""
    path = data_file(root, relative)
    if path is None:
        raise MissingDataFile(relative, root)
    return path
