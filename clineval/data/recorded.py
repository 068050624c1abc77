"""Two ways a benchmark fetches a file whose hash the package manifest does not pin.

`fetch_recorded`: a data file for which no public source states a hash (a blob store's JSONL).
The first fetch into a cache records the copy's sha256 and size in the cache manifest
(clineval.data.cache_manifest); every later fetch, and a file already there, is checked
against that record, so the data can no longer change under a cache without being refused.
The first fetch trusts what it received: its digest is shown and kept, for a user to compare
with another machine's.

`fetch_pinned`: a file of someone else's text (an official prompt) that clineval never ships,
fetched at the moment it is used into the cache, at a pinned address, checked against the
sha256 the benchmark pins, and checked again on every later use.

Both stream through clineval.data.download (bounded, staged, renamed into place only once the
check passed); `validate(path)` may raise InputError to refuse what came (nothing is kept).
"""

from __future__ import annotations

import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path

from clineval.data.cache import cache_root
from clineval.data.cache_manifest import record_files, recorded_files
from clineval.data.checksums import sha256_file
from clineval.data.digests import Sha256Check, StreamCheck
from clineval.data.download import DOWNLOAD_RETRY, SizeBound, download_verified, safe_url
from clineval.errors import InputError
from clineval.retry import RetryPolicy

# A file without a published size is bounded all the same: far above any benchmark file.
RECORDED_SIZE_CAP = 1 << 30


class _Unchecked:
    """The first fetch of a file nobody states a hash for: any bytes are the file."""

    def update(self, chunk: bytes) -> None:
        return None

    def problem(self) -> str | None:
        return None


def _matches(path: Path, sha256: str) -> bool:
    return path.is_file() and sha256_file(path) == sha256


def fetch_recorded(
    root: Path,
    relative: str,
    url: str,
    base_url: str | None = None,
    retry: RetryPolicy = DOWNLOAD_RETRY,
    validate: Callable[[Path], object] | None = None,
) -> Path:
    """`relative` in the cache `root`, from `url` (or `<base_url>/<relative>`), checked against
    the digest its first fetch recorded (see the module doc); its record updated."""
    source = url if base_url is None else base_url.rstrip("/") + "/" + urllib.parse.quote(relative)
    target = root / relative
    record = recorded_files(root).get(relative, {})
    expected = record.get("sha256") if isinstance(record.get("sha256"), str) else None
    if expected is None or not _matches(target, expected):

        def check() -> StreamCheck:
            return _Unchecked() if expected is None else Sha256Check(expected)

        bound = SizeBound(RECORDED_SIZE_CAP, f"the fixed cap for {relative}")
        download_verified(
            source, target, staging_root=root, bound=bound, check=check, what=relative, retry=retry
        )
    if validate is not None:
        try:
            validate(target)
        except InputError:
            target.unlink(missing_ok=True)  # refused: not left in the cache
            raise
    digest = sha256_file(target)
    first = record.get("first_fetched") or time.strftime("%Y-%m-%dT%H:%M:%S%z")
    entry = {
        "sha256": digest,
        "size": target.stat().st_size,
        "source": safe_url(source),
        "first_fetched": first,
        "fetched": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "pinned": "by its first fetch (no public source states a hash)",
    }
    record_files(root, {relative: entry})
    return target


def fetch_pinned(
    relative: str,
    url: str,
    sha256: str,
    size: int | None = None,
    cache_dir: str | Path | None = None,
    retry: RetryPolicy = DOWNLOAD_RETRY,
) -> Path:
    """The file at `relative` in the data cache, fetched from `url` when it is not there with
    the pinned `sha256` (bounded by `size` when given); a copy that differs is replaced."""
    root = cache_root(cache_dir)
    target = root / relative
    if _matches(target, sha256):
        return target
    bound = SizeBound(size or RECORDED_SIZE_CAP, f"the pinned size of {relative}")
    return download_verified(
        url,
        target,
        staging_root=root,
        bound=bound,
        check=lambda: Sha256Check(sha256),
        what=relative,
        retry=retry,
    )
