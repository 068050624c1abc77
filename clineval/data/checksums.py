"""sha256 of data files (placeholder; the manifest and verify_all follow)."""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path


def sha256_file(path: str | Path) -> str:
    """Hex sha256 of a file, cached per (path, size, mtime) so a changed file is re-hashed."""
    p = Path(path)
    stat = p.stat()
    return _sha256_cached(str(p.resolve()), stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=256)
def _sha256_cached(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
