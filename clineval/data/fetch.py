"""``clineval data fetch NAME``: download a corpus from its official public address.

Files land in a cache directory laid out like the data root (``ner/ncbi_disease/...``), so the
cache can be passed as ``--data-dir``. Default cache: ``$CLINEVAL_CACHE_DIR`` or
``~/.cache/clineval/data``. Every file is checked against the package's sha256 manifest before
it is moved into place (temp file in the same directory + atomic rename), so the cache never
holds a partial or corrupt file; files already present with the right hash are skipped.

Official addresses are the raw GitHub URLs, at pinned commits, of the public mirrors named in
the data's SOURCE.md files. Two upstream files are served uncompressed while the data root
keeps them gzipped (BioC XML): those are checked against the manifest's
``sha256_uncompressed`` and gzipped here. ``base_url`` replaces the whole address with
``<base_url>/<relative path>``: a mirror laid out like the data root (e.g. ``python -m
http.server`` in a data directory); files are then taken as they are, gzipped or not.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from clineval.data.checksums import (
    OK,
    ManifestEntry,
    entry_status,
    manifest_entry,
    sha256_bytes,
)
from clineval.errors import InputError
from clineval.progress import track

CACHE_ENV = "CLINEVAL_CACHE_DIR"
MAX_ATTEMPTS = 3
TIMEOUT_S = 60.0
_BACKOFF_S = 1.0

_NCBI = "https://raw.githubusercontent.com/spyysalo/ncbi-disease/5a266c6fc76fb2b5184cfa397ff0a5ecdb133aec/original-data"
_CDR = "https://raw.githubusercontent.com/cryptoradon/biomedRelExt/{commit}/CDR_Data"
_CDR_FIRST = "c3f40f6f28da6c2f227f487bd3c46a78215a2b2f"
_CDR_TRAIN_PUBTATOR = "e42e94570138158963ae4696298bf09232071740"
_BIORED = "https://raw.githubusercontent.com/ndlongvn/BioRED-NER-RE/637e02c9746de045ef56dbf543d77602783d63d9/NER%20BioRED/BioRED"
_CHIA = (
    "https://raw.githubusercontent.com/Vidhate/CHIA-NER-RE/ed84384ba70275eac69d273eb5325b321cda1c72"
)


@dataclass(frozen=True, slots=True)
class Source:
    relative: str  # path under the data root / cache
    url: str | None  # official address; None = no official source (mirror only)
    gzip_here: bool = False  # upstream is the uncompressed file; gzip it after checking


def _cdr(name: str, commit: str = _CDR_FIRST) -> str:
    return f"{_CDR.format(commit=commit)}/CDR.Corpus.v010516/{name}"


SOURCES: dict[str, tuple[Source, ...]] = {
    "ncbi": (
        Source(
            "ner/ncbi_disease/NCBItrainset_corpus.txt", f"{_NCBI}/train/NCBItrainset_corpus.txt"
        ),
        Source(
            "ner/ncbi_disease/NCBIdevelopset_corpus.txt", f"{_NCBI}/devel/NCBIdevelopset_corpus.txt"
        ),
        Source("ner/ncbi_disease/NCBItestset_corpus.txt", f"{_NCBI}/test/NCBItestset_corpus.txt"),
        Source("ner/ncbi_disease/LICENSE.txt", f"{_NCBI}/LICENSE"),
    ),
    "bc5cdr": (
        Source(
            "ner/bc5cdr/CDR_TrainingSet.PubTator.txt",
            _cdr("CDR_TrainingSet.PubTator.txt", _CDR_TRAIN_PUBTATOR),
        ),
        Source(
            "ner/bc5cdr/CDR_DevelopmentSet.PubTator.txt", _cdr("CDR_DevelopmentSet.PubTator.txt")
        ),
        Source("ner/bc5cdr/CDR_TestSet.PubTator.txt", _cdr("CDR_TestSet.PubTator.txt")),
        Source("ner/bc5cdr/CDR_TrainingSet.BioC.xml.gz", _cdr("CDR_TrainingSet.BioC.xml"), True),
        Source(
            "ner/bc5cdr/CDR_DevelopmentSet.BioC.xml.gz", _cdr("CDR_DevelopmentSet.BioC.xml"), True
        ),
        Source("ner/bc5cdr/CDR_TestSet.BioC.xml.gz", _cdr("CDR_TestSet.BioC.xml"), True),
        Source(
            "ner/bc5cdr/README_original_release.txt",
            f"{_CDR.format(commit=_CDR_FIRST)}/README.txt",
        ),
    ),
    "biored": (
        Source("ner/biored/Train.PubTator", f"{_BIORED}/Train.PubTator"),
        Source("ner/biored/Dev.PubTator", f"{_BIORED}/Dev.PubTator"),
        Source("ner/biored/Test.PubTator", f"{_BIORED}/Test.PubTator"),
        Source("ner/biored/Train.BioC.XML.gz", f"{_BIORED}/Train.BioC.XML", True),
        Source("ner/biored/Dev.BioC.XML.gz", f"{_BIORED}/Dev.BioC.XML", True),
        Source("ner/biored/Test.BioC.XML.gz", f"{_BIORED}/Test.BioC.XML", True),
    ),
    "chia": (
        Source("ner/chia/chia_without_scope.zip", f"{_CHIA}/chia_without_scope.zip"),
        Source("ner/chia/chia_with_scope.zip", f"{_CHIA}/chia_with_scope.zip"),
        # Derived by the data's curators, not published upstream: only a mirror has it
        # (without it, load_ner_split recomputes the same split from the zip).
        Source("ner/chia/ncer_split_ids.json", None),
    ),
}


def default_cache_dir() -> Path:
    env = os.environ.get(CACHE_ENV)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "clineval" / "data"


def fetch(
    name: str, cache_dir: str | Path | None = None, base_url: str | None = None
) -> list[Path]:
    """Download corpus ``name`` into the cache; return the paths of its files (all verified)."""
    if name not in SOURCES:
        raise InputError(f"unknown corpus {name!r} (known: {', '.join(SOURCES)})")
    root = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    wanted = [s for s in SOURCES[name] if s.url is not None or base_url is not None]
    out = []
    for source in track(wanted, total=len(wanted), description=f"fetch {name}"):
        entry = manifest_entry(source.relative)
        if entry is None or entry.sha256 is None:
            raise InputError(f"no checksum for {source.relative} in the package manifest")
        out.append(_fetch_one(source, entry, root, base_url))
    return out


def _fetch_one(source: Source, entry: ManifestEntry, root: Path, base_url: str | None) -> Path:
    target = root / source.relative
    # The same check as `data verify` (a re-gzipped copy with the right content is kept; a
    # corrupt cached file, gzip or not, is downloaded again).
    if entry_status(root, entry) == OK:
        return target
    if base_url is not None:
        url = base_url.rstrip("/") + "/" + urllib.parse.quote(source.relative)
        data = _download(url)
        ok = sha256_bytes(data) == entry.sha256 or (
            entry.sha256_uncompressed is not None
            and _looks_gzip(data)
            and sha256_bytes(_gunzip(data, url)) == entry.sha256_uncompressed
        )
    else:
        assert source.url is not None
        url = source.url
        data = _download(url)
        if source.gzip_here:
            ok = sha256_bytes(data) == entry.sha256_uncompressed
            data = gzip.compress(data, compresslevel=9, mtime=0)
        else:
            ok = sha256_bytes(data) == entry.sha256
    if not ok:
        raise InputError(
            f"checksum mismatch for {source.relative} downloaded from {url}; nothing was written",
            path=target,
        )
    _write_atomic(target, data)
    return target


def _looks_gzip(data: bytes) -> bool:
    return data[:2] == b"\x1f\x8b"


def _gunzip(data: bytes, where: str) -> bytes:
    try:
        return gzip.decompress(data)
    except (OSError, EOFError) as exc:
        raise InputError(f"corrupt gzip data ({exc})", path=where) from None


def _download(url: str) -> bytes:
    """GET ``url`` with at most MAX_ATTEMPTS tries; 4xx answers are not retried."""
    last: Exception | None = None
    for attempt in range(MAX_ATTEMPTS):
        try:
            request = urllib.request.Request(url, headers={"User-Agent": "clineval-fetch"})
            with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
                data: bytes = response.read()
                return data
        except urllib.error.HTTPError as exc:
            if 400 <= exc.code < 500:
                raise InputError(f"HTTP {exc.code} {exc.reason} for {url}") from None
            last = exc
        except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
            last = exc
        if attempt + 1 < MAX_ATTEMPTS:
            time.sleep(_BACKOFF_S * (2**attempt))
    raise InputError(f"download failed after {MAX_ATTEMPTS} attempts: {last} ({url})")


def _write_atomic(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
