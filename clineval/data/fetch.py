"""``clineval data fetch NAME``: download a corpus from its official public address.

Files land in the cache (clineval.data.cache), laid out like the data root (``ner/ncbi_disease/
...``), so the cache can be passed as ``--data-dir``. Each file goes through
clineval.data.download: streamed to a staging file, bounded by its size in the package manifest
(SIZE_CAP when the manifest has none), checked against its sha256 while it streams, and renamed
into place only when it passed. A file already in the cache is checked again first, with the same
rule as ``clineval data verify``: kept when it is good, downloaded again when it is not.

Official addresses are the raw GitHub URLs, at pinned commits, of the public mirrors named in
docs/data-sources.md (for ClinConsensus: the authors' repository for the judge prompt, and
the Hugging Face hub for the cases, which have no published hash: see
clineval.benchmarks.clinconsensus.fetch; for TCM-SD: the authors' repository, its files checked by
their git blob ids and its archives unpacked: clineval.benchmarks.tcm_sd.fetch). Two upstream
files are served uncompressed while the data root keeps them gzipped (BioC XML): those are
checked against the manifest's ``sha256_uncompressed`` (bounded by ``size_uncompressed``) and
gzipped on the way to disk.
``base_url`` replaces the whole address with ``<base_url>/<relative path>``: a mirror laid out
like the data root (e.g. ``python -m http.server`` in a data directory); files are then taken as
they are: the exact bytes, or for a ``.gz`` another gzip of the same content.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from clineval.data.cache import (
    CACHE_ENV,
    cache_root,
    default_cache_dir,
    remove_empty_staging,
    remove_stale_partials,
)
from clineval.data.checksums import OK, ManifestEntry, entry_status, manifest_entry
from clineval.data.digests import AnyOfCheck, GzipContentSha256Check, Sha256Check, StreamCheck
from clineval.data.download import (
    DOWNLOAD_FAILED,
    DOWNLOAD_RETRY,
    SizeBound,
    check_http_url,
    download_verified,
)
from clineval.errors import InputError
from clineval.progress import track
from clineval.retry import RetryPolicy

__all__ = ["CACHE_ENV", "SIZE_CAP", "Source", "default_cache_dir", "fetch"]

# Bound for a file whose size the manifest does not give: far above any corpus file clineval
# fetches (the largest is under 4 MB) yet small enough that a server sending without end is
# stopped long before it fills a disk.
SIZE_CAP = 1 << 30


# The unpinned step of a source: step(cache_root, base_url, retry) -> the paths fetched.
FetchStep = Callable[[Path, "str | None", RetryPolicy], list[Path]]


class Fetchable(Protocol):
    """What `fetch` reads of a source (a benchmark declares it as a `DataSource`; the data
    layer lies below the benchmarks and names none of their types)."""

    @property
    def name(self) -> str: ...
    @property
    def files(self) -> Sequence[Source]: ...
    @property
    def offline_hint(self) -> str | None: ...
    def fetch_step(self) -> FetchStep | None: ...


@dataclass(frozen=True, slots=True)
class Source:
    """One pinned file of a source (a benchmark's `DataSource`): where it goes under the data
    root or cache, its official address (None: only a mirror has it), and whether to gzip it
    once checked."""

    relative: str  # path under the data root / cache
    url: str | None  # official address; None = no official source (mirror only)
    gzip_here: bool = False  # upstream is the uncompressed file; gzip it after checking


def fetch(
    source: Fetchable,
    cache_dir: str | Path | None = None,
    base_url: str | None = None,
    retry: RetryPolicy = DOWNLOAD_RETRY,
) -> list[Path]:
    """Download the files `source` declares into the cache; return their paths (all verified).
    Its pinned files come first, then its step for files without a published hash."""
    if base_url is not None:
        check_http_url(base_url, "--base-url", base=True)
    root = cache_root(cache_dir)
    remove_stale_partials(root)
    wanted = [s for s in source.files if s.url is not None or base_url is not None]
    out = []
    try:
        for file in (
            track(wanted, len(wanted), f"fetch {source.name}", unit="files") if wanted else ()
        ):
            entry = manifest_entry(file.relative)
            if entry is None or entry.sha256 is None:
                raise InputError(f"no checksum for {file.relative} in the package manifest")
            out.append(_fetch_one(file, entry, root, base_url, retry))
        step = source.fetch_step()
        if step is not None:
            out.extend(step(root, base_url, retry))
    except InputError as exc:
        if not exc.message.startswith(DOWNLOAD_FAILED):
            raise
        # Every download of every corpus fails here: the one place to say what to do next
        # (a machine without network got a DNS error and nothing else).
        raise InputError(f"{exc.message}; {next_steps(source, root)}", path=exc.path) from None
    finally:
        remove_empty_staging(root)
    return out


# Where a corpus's files go when placed by hand, under the data root (what `run` reads).
def next_steps(source: Fetchable, root: Path) -> str:
    """What a user can do when a corpus cannot be downloaded from here."""
    name = source.name
    hand = source.offline_hint or "its files under DATA_DIR as 'clineval data verify' lists them"
    return (
        f"without access to the official address: fetch from a mirror laid out like the cache "
        f"(clineval data fetch {name} --base-url URL), or run 'clineval data fetch {name} "
        f"--cache-dir DIR' where there is network and copy DIR to {root}, or place {hand}"
    )


@dataclass(frozen=True, slots=True)
class _Plan:
    url: str
    bound: SizeBound
    check: Callable[[], StreamCheck]
    gzip_output: bool


def _fetch_one(
    source: Source,
    entry: ManifestEntry,
    root: Path,
    base_url: str | None,
    retry: RetryPolicy = DOWNLOAD_RETRY,
) -> Path:
    target = root / source.relative
    # The same check as `data verify`, made afresh: a re-gzipped copy with the right content is
    # kept; a corrupt cached file, gzip or not, is downloaded again (and replaced only once the
    # new one has passed).
    if entry_status(root, entry) == OK:
        return target
    plan = _plan(source, entry, base_url)
    return download_verified(
        plan.url,
        target,
        staging_root=root,
        bound=plan.bound,
        check=plan.check,
        what=source.relative,
        gzip_output=plan.gzip_output,
        retry=retry,
    )


def _bound(size: int | None, what: str) -> SizeBound:
    if size is None:
        return SizeBound(SIZE_CAP, f"the fixed cap: the package manifest gives no size for {what}")
    return SizeBound(size, f"the size of {what} in the package manifest")


def _gzip_bound(content: int) -> int:
    """More bytes than any gzip of `content` bytes can take: deflate grows incompressible data
    by about 0.03% at most, and the gzip header and trailer add a few bytes."""
    return content + content // 1000 + 1024


def _plan(source: Source, entry: ManifestEntry, base_url: str | None) -> _Plan:
    """Where to get a file, how large it may be, and what it must hash to."""
    assert entry.sha256 is not None  # fetch() refuses entries without one
    exact, gz_content = entry.sha256, entry.sha256_uncompressed
    if base_url is None:
        assert source.url is not None  # fetch() only plans files that have an address
        if source.gzip_here:
            assert gz_content is not None
            bound = _bound(entry.size_uncompressed, f"{source.relative} uncompressed")
            return _Plan(source.url, bound, lambda: Sha256Check(gz_content), True)
        return _Plan(
            source.url, _bound(entry.size, source.relative), lambda: Sha256Check(exact), False
        )
    url = base_url.rstrip("/") + "/" + urllib.parse.quote(source.relative)
    if gz_content is None:
        return _Plan(url, _bound(entry.size, source.relative), lambda: Sha256Check(exact), False)
    # A mirror may hold another gzip of the same content: its size can differ from ours.
    content_limit = entry.size_uncompressed if entry.size_uncompressed is not None else SIZE_CAP
    sizes = [entry.size, _gzip_bound(content_limit)]
    limit = max(s for s in sizes if s is not None)
    bound = SizeBound(limit, f"the most a gzip of {source.relative} can take")

    def check() -> StreamCheck:
        return AnyOfCheck(Sha256Check(exact), GzipContentSha256Check(gz_content, content_limit))

    return _Plan(url, bound, check, False)
