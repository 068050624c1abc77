"""The download cache of ``clineval data fetch``: where it is, and its staging area.

The cache is laid out like a data root (``ner/ncbi_disease/...``), so it can be passed as
``--data-dir``; ``clineval data verify`` checks it too. Default: ``$CLINEVAL_CACHE_DIR`` or
``~/.cache/clineval/data``.

Where it is (``default_cache_dir``) is decided in clineval.datapaths, beside the data root,
because every task reads its data files from the cache too when the data root lacks them.

Downloads in progress live in ``<cache>/.partial/`` (same file system as the cache, so moving a
finished file into place is an atomic rename), never beside the data files. Each holds an
exclusive ``flock`` for as long as its writer runs; the kernel drops it when the writer dies, even
by SIGKILL, so a partial file nobody holds is a leftover, and the next fetch deletes it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

from clineval.datapaths import (
    CACHE_ENV as CACHE_ENV,  # re-exported: where the cache is
    default_cache_dir as default_cache_dir,
)
from clineval.errors import InputError
from clineval.rundir import new_file

STAGING = ".partial"
PARTIAL_SUFFIX = ".part"


def cache_root(cache_dir: str | Path | None) -> Path:
    """The cache directory to write into: refused when it exists and is not a directory."""
    root = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    if root.exists() and not root.is_dir():
        raise InputError("the cache directory is not a directory (--cache-dir)", path=root)
    return root


def _unwritable(exc: OSError, path: Path) -> InputError:
    return InputError(f"cannot write to the cache: {exc.strerror or exc}", path=path)


def open_partial(root: Path, name: str) -> tuple[int, Path]:
    """A new, empty staging file for `name`, locked by this process: (fd, path)."""
    staging = root / STAGING
    try:
        staging.mkdir(parents=True, exist_ok=True)
        while True:
            fd, tmp = new_file(staging, f"{name}.", PARTIAL_SUFFIX)  # the umask's mode
            fcntl.flock(fd, fcntl.LOCK_EX)
            # Another fetch's clean-up may have deleted the file between its creation and our
            # lock (it was unlocked then): start again with a new one.
            with contextlib.suppress(FileNotFoundError):
                if os.stat(tmp).st_ino == os.fstat(fd).st_ino:
                    return fd, Path(tmp)
            os.close(fd)
    except OSError as exc:
        raise _unwritable(exc, staging) from None


def remove_stale_partials(root: Path) -> int:
    """Delete staging files no live process holds (left by a killed fetch); how many."""
    staging = root / STAGING
    if not staging.is_dir():
        return 0
    removed = 0
    for path in staging.glob(f"*{PARTIAL_SUFFIX}"):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            continue  # gone already, or not ours to read
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue  # a running fetch is writing it
        with contextlib.suppress(OSError):
            path.unlink()
            removed += 1
        os.close(fd)
    return removed


def remove_empty_staging(root: Path) -> None:
    """Leave no empty staging directory behind (best effort: another fetch may be using it)."""
    with contextlib.suppress(OSError):
        (root / STAGING).rmdir()
