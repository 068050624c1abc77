"""What `clineval data fetch` put into a cache, and from where: `<cache>/cache_manifest.json`.

The package manifest (each benchmark package's resources/data_manifest.json) pins the files
whose hash is published. Some fetched files have none to pin (the ClinConsensus cases on the
Hugging Face hub can change with the dataset's revision): for those the cache manifest records
the sha256 and size of the copy that was fetched and validated, the address and revision it
came from, and when. `clineval data verify` then checks the cached copy against that record,
and a run can name the exact data it used.

    {"format": 1, "files": {"clinconsensus/clinconsensus_low.jsonl": {"sha256": ..., "size": ...,
     "source": ..., "revision": ..., "fetched": "2026-...", ...}}}

Read-modify-write under an exclusive flock on a lock file beside it, written atomically, so two
fetches into one cache each leave their record.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from clineval.errors import InputError
from clineval.jsonio import read_json_file
from clineval.rundir import atomic_write_text

CACHE_MANIFEST = "cache_manifest.json"
_FORMAT = 1


@contextlib.contextmanager
def _locked(root: Path) -> Iterator[None]:
    lock = root / (CACHE_MANIFEST + ".lock")
    try:
        root.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise InputError(f"cannot write to the cache: {exc.strerror or exc}", path=lock) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def recorded_files(root: Path) -> dict[str, dict[str, Any]]:
    """{relative path: record} of a cache ({} when it has no manifest yet)."""
    path = root / CACHE_MANIFEST
    if not path.is_file():
        return {}
    try:
        data = read_json_file(path, "cache manifest")
    except InputError as exc:
        raise InputError(
            f"damaged cache manifest ({exc.message}); delete it and fetch again",
            path=path,
            line=exc.line,
        ) from None
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, dict):
        raise InputError("damaged cache manifest (no 'files' object)", path=path)
    return {str(k): v for k, v in files.items() if isinstance(v, dict)}


def record_files(root: Path, records: Mapping[str, Mapping[str, Any]]) -> Path:
    """Add or replace the records of `records` (by relative path); the manifest's path."""
    path = root / CACHE_MANIFEST
    with _locked(root):
        files = recorded_files(root)
        files.update({relative: dict(record) for relative, record in records.items()})
        text = json.dumps({"format": _FORMAT, "files": dict(sorted(files.items()))}, indent=1)
        atomic_write_text(path, text + "\n")
    return path
