"""Data-file checksums: the manifest shipped in the package, per-file status, ``data verify``.

The manifest (each benchmark package's ``resources/data_manifest.json``, read together) lists
every data file clineval reads, relative to the data root, with its sha256 and size in bytes
(taken from, and cross-checked against, the notes that come with the data; the size bounds a
download). A ``.gz`` entry also carries ``sha256_uncompressed`` and ``size_uncompressed``: the
hash and size of the upstream file it compresses, so a copy gzipped by another gzip build
(different bytes, same content, e.g. after ``clineval data fetch`` from the official
uncompressed source) still checks.

Statuses: ``ok``, ``missing``, ``checksum mismatch``, and ``not checked`` for an entry without a
published hash (the TCM-SD full splits, which users place by hand).

``verify_all`` checks the data root and the cache of ``clineval data fetch`` (see
``verify_targets``: those named, or by default both where they exist), and fails (returns False,
CLI exit 2) when, in any of them,
  * any present file has the wrong checksum, or
  * a required file is missing from a group (dataset) of which other required files are present:
    a half-copied corpus would otherwise fail later with a confusing error, or
  * no known file is present at all (the data directory is probably wrong).
A group that is entirely absent is reported as missing but is not a failure (a user may only have
fetched some corpora), and optional files (TCM-SD full splits, the derived CHIA split ids, which
are recomputed when absent) never fail the check.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import itertools
import time
import zlib
from collections import defaultdict
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from clineval.console import make_console
from clineval.data.cache import default_cache_dir
from clineval.datapaths import ENV_VAR as DATA_ENV_VAR, data_base, require_file, resolve_data_root
from clineval.errors import InputError
from clineval.jsonio import loads_input

OK = "ok"
MISSING = "missing"
MISMATCH = "checksum mismatch"
NOT_CHECKED = "not checked"


@dataclass(frozen=True, slots=True)
class ManifestEntry:
    path: str  # relative to the data root, POSIX separators
    sha256: str | None
    size: int | None
    group: str  # "ner:ncbi", ..., "tcm-sd"
    optional: bool
    sha256_uncompressed: str | None = None
    size_uncompressed: int | None = None
    note: str = ""


# Each benchmark package pins its own data files: <package>/resources/data_manifest.json.
MANIFEST_NAME = "resources/data_manifest.json"


@functools.lru_cache(maxsize=1)
def load_manifest() -> tuple[ManifestEntry, ...]:
    """The manifests shipped in the benchmark packages, by package name, each in file order.
    Read by the package layout, not by name: this layer knows no benchmark."""
    packages = resources.files("clineval").joinpath("benchmarks")
    entries: dict[str, ManifestEntry] = {}
    for package in sorted(packages.iterdir(), key=lambda p: p.name):
        manifest = package.joinpath(MANIFEST_NAME)
        if not manifest.is_file():
            continue
        where = f"clineval/benchmarks/{package.name}/{MANIFEST_NAME}"
        for row in loads_input(manifest.read_text("utf-8"), where)["files"]:
            if row["path"] in entries:  # two packages cannot both pin one file
                raise InputError(f"{row['path']} is pinned twice", path=where)
            entries[row["path"]] = ManifestEntry(
                path=row["path"],
                sha256=row.get("sha256"),
                size=row.get("size"),
                group=row["group"],
                optional=bool(row.get("optional", False)),
                sha256_uncompressed=row.get("sha256_uncompressed"),
                size_uncompressed=row.get("size_uncompressed"),
                note=row.get("note", ""),
            )
    return tuple(entries.values())


def manifest_entry(relative: str) -> ManifestEntry | None:
    for entry in load_manifest():
        if entry.path == relative:
            return entry
    return None


# A file modified this recently may be modified again within the same mtime tick without its
# (size, mtime) changing ("racy" stat data, as git calls it): its cache key gets a fresh nonce,
# so per-process caches never serve a stale parse or hash of it.
_RACY_NS = 2_000_000_000
_nonce = itertools.count(1)

FileVersion = tuple[str, int, int, int]


def version_key(path: str | Path) -> FileVersion:
    """(path, size, mtime_ns, nonce): the cache key of a file's current content.

    Raises InputError when the file does not exist."""
    p = Path(path)
    try:
        stat = p.stat()
    except FileNotFoundError:
        raise InputError("data file not found", path=p) from None
    racy = time.time_ns() - stat.st_mtime_ns < _RACY_NS
    return (str(p), stat.st_size, stat.st_mtime_ns, next(_nonce) if racy else 0)


def sha256_file(path: str | Path) -> str:
    """Hex sha256 of a file, cached per content version (see ``version_key``)."""
    return _sha256_cached(*version_key(Path(path).resolve()))


@functools.lru_cache(maxsize=256)
def _sha256_cached(path: str, size: int, mtime_ns: int, nonce: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _gunzip_sha256(path: Path) -> str | None:
    """sha256 of a gzip file's content, or None when it is not valid gzip."""
    digest = hashlib.sha256()
    try:
        with gzip.open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except (OSError, EOFError, zlib.error):
        return None
    return digest.hexdigest()


def entry_status(root: Path, entry: ManifestEntry) -> str:
    path = root / entry.path
    if not path.is_file():
        return MISSING
    if entry.sha256 is None:
        return NOT_CHECKED
    if sha256_file(path) == entry.sha256:
        return OK
    if entry.sha256_uncompressed is not None:
        return _gz_content_status(version_key(path.resolve()), entry)
    return MISMATCH


@functools.lru_cache(maxsize=64)
def _gz_content_status(version: FileVersion, entry: ManifestEntry) -> str:
    return OK if _gunzip_sha256(Path(version[0])) == entry.sha256_uncompressed else MISMATCH


def file_status(root: Path | str | None, relative: str) -> str:
    """ "ok" | "missing" | "checksum mismatch" | "not checked" (file not in the manifest or
    without a published hash) for one data file, by its path relative to the data root, where
    a task reads it: under the data root, else in the fetch cache (clineval.datapaths)."""
    base = data_base(root, relative)
    if base is None:
        return MISSING
    entry = manifest_entry(relative)
    return NOT_CHECKED if entry is None else entry_status(base, entry)


def verify_root(root: Path) -> tuple[list[tuple[ManifestEntry, str]], list[str]]:
    """(entry, status) for every manifest file and the reasons the check fails (empty = pass)."""
    recorded = {entry.path: entry for entry in _recorded_entries(root)}
    # A file the package lists without a hash (the TCM-SD splits) is checked against the
    # fetch's record when there is one; the rest of the records follow the package's files.
    entries = [
        recorded.pop(entry.path) if entry.sha256 is None and entry.path in recorded else entry
        for entry in load_manifest()
    ]
    rows = [(entry, entry_status(root, entry)) for entry in (*entries, *recorded.values())]
    # full paths: `data verify` may check the data root and the fetch cache in one go
    failures = [f"{root / e.path}: {MISMATCH}" for e, s in rows if s == MISMATCH]
    required: dict[str, list[tuple[ManifestEntry, str]]] = defaultdict(list)
    for entry, status in rows:
        if not entry.optional:
            required[entry.group].append((entry, status))
    for group, members in required.items():
        present = [e for e, s in members if s != MISSING]
        if present and len(present) < len(members):
            failures += [
                f"{root / e.path}: missing ({group} is incomplete)"
                for e, s in members
                if s == MISSING
            ]
    if all(status == MISSING for _, status in rows):
        failures.append(f"no known data file under {root}")
    return rows, failures


def _recorded_entries(root: Path) -> list[ManifestEntry]:
    """Files a fetch recorded in the cache's own manifest and the package manifest does not pin
    (the ClinConsensus cases, the TCM-SD splits): checked against the sha256 recorded when they
    were fetched."""
    from clineval.data.cache_manifest import recorded_files

    pinned = {entry.path for entry in load_manifest() if entry.sha256 is not None}
    return [
        ManifestEntry(
            path=relative,
            sha256=str(record["sha256"]) if record.get("sha256") else None,
            size=record.get("size") if isinstance(record.get("size"), int) else None,
            group=relative.split("/")[0],
            optional=True,
            note="recorded in the cache manifest by clineval data fetch",
        )
        for relative, record in recorded_files(root).items()
        if relative not in pinned
    ]


_STYLE = {OK: "green", MISSING: "yellow", MISMATCH: "bold red", NOT_CHECKED: "cyan"}


def verify_targets(
    data_dir: str | Path | None, cache_dir: str | Path | None
) -> list[tuple[str, Path]]:
    """The directories ``data verify`` checks, each with a title for its table.

    The directories named (--data-dir, --cache-dir) and only those; naming neither, the data
    root found as usual (resolve_data_root) and the default fetch cache when it holds any known
    file, so a corrupt download is reported without the user having to know where it went."""
    targets: list[tuple[str, Path]] = []
    if data_dir is not None or cache_dir is not None:
        if data_dir is not None:
            root = resolve_data_root(data_dir, required=True)
            assert root is not None  # required=True raises instead
            targets.append(("data files under", root))
        if cache_dir is not None:
            cache = Path(cache_dir).expanduser()
            if not cache.is_dir():
                raise InputError("cache directory does not exist (--cache-dir)", path=cache)
            targets.append(("fetch cache", cache.resolve()))
    else:
        found = resolve_data_root(None)
        if found is not None:
            targets.append(("data files under", found))
        cache = default_cache_dir()
        if any((cache / entry.path).is_file() for entry in load_manifest()):
            targets.append(("fetch cache", cache.resolve()))
        if not targets:
            raise InputError(
                f"no data directory: pass --data-dir or set ${DATA_ENV_VAR} "
                "(or --cache-dir for the cache of `clineval data fetch`)"
            )
    unique: dict[Path, str] = {}
    for title, root in targets:
        unique.setdefault(root, title)  # one directory named twice is checked once
    return [(title, root) for root, title in unique.items()]


def verify_all(
    data_dir: str | Path | None,
    console: Console | None = None,
    cache_dir: str | Path | None = None,
) -> bool:
    """Check every manifest file in each directory of ``verify_targets``; print a table per
    directory; False when any of them fails."""
    console = console or make_console()
    passed = True
    for title, root in verify_targets(data_dir, cache_dir):
        passed = _verify_and_print(title, root, console) and passed
    return passed


def _verify_and_print(title: str, root: Path, console: Console) -> bool:
    rows, failures = verify_root(root)
    table = Table(title=f"{title} {root}", show_header=True)
    table.add_column("file", overflow="fold")
    table.add_column("group")
    table.add_column("status", no_wrap=True)
    for entry, status in rows:
        label = "MISMATCH" if status == MISMATCH else status
        if status == MISSING and entry.optional:
            label = "missing (optional)"
        table.add_row(entry.path, entry.group, Text(label, style=_STYLE[status]))
    console.print(table)
    counts = {s: sum(1 for _, st in rows if st == s) for s in (OK, MISMATCH, MISSING, NOT_CHECKED)}
    console.print(", ".join(f"{n} {s}" for s, n in counts.items()))
    for reason in failures:
        console.print(Text.assemble(("FAIL", "bold red"), " ", reason))
    return not failures


def require_verified(root: Path | None, relative: str) -> Path:
    """The path of a data file (the data root's, else the fetch cache's), raising InputError
    when it is in neither (MissingDataFile) or corrupt."""
    path = require_file(root, relative)
    if file_status(root, relative) == MISMATCH:
        raise InputError("checksum mismatch (run `clineval data verify`)", path=path)
    return path
