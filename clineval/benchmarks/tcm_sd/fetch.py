"""`clineval data fetch tcm-sd`: the official TCM-SD splits by one command.

Where they are: the authors' repository Borororo/ZY-BERT at the pinned commit (COMMIT), as
docs/data-sources.md describes. Three files are downloaded, each verified by its git blob id
(sha1 of ``blob <size>\\0`` + the bytes: the one integrity value the repository publishes
for them; their sizes are not published, so the check spools the bytes to the cache's
staging area and hashes them once complete, clineval.data.digests.SpooledGitBlobSha1Check):

  TCM_SD_train_dev.zip   -> tcm-sd/upstream/TCM_SD_train_dev.zip  (train.json, dev.json, ...)
  test.json              -> tcm-sd/test.json                      (the labelled test split)
  TCM Code.zip           -> tcm-sd/upstream/TCM Code.zip          (the label vocabulary and the
                                                                   normalization table)

then the members the loader reads are unpacked beside test.json (clineval.data.unzip: by name
into paths chosen here, bounded, CRC-checked, all renamed into place together):

  tcm-sd/train.json, tcm-sd/dev.json             from TCM_SD_train_dev.zip (any folder in it)
  tcm-sd/syndrome_knowledge.json                 from the same zip, when it holds one
  tcm-sd/syndrome_vocab.txt, tcm-sd/syndrome.txt from TCM Code.zip TCM/data_preprocess/, each
                                                 also checked against the sha256 the package
                                                 manifest pins for tcm-sd/zy-bert/<same name>

So the cache is a data root for `clineval run tcm-sd` (which also looks in the default cache
when its data root has no splits). Each file's sha256, size and origin go into the cache
manifest (clineval.data.cache_manifest), which `clineval data verify` checks. A second fetch
keeps every file that still matches (an archive by its blob id, a member by its size and
CRC-32 in the verified archive) and downloads or unpacks only what does not.

`base_url` takes the three downloads from a mirror laid out like the cache
(`<base_url>/tcm-sd/test.json`, `<base_url>/tcm-sd/upstream/TCM_SD_train_dev.zip`, ...: a cache
served by `python -m http.server` is one); they must still have the pinned blob ids.

The dataset is CC BY-NC-SA 4.0 (LICENSE_NOTICE, printed when the fetch finishes).
"""

from __future__ import annotations

import hashlib
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clineval.data.cache import STAGING, remove_empty_staging, remove_stale_partials
from clineval.data.cache_manifest import record_files
from clineval.data.checksums import manifest_entry, sha256_file
from clineval.data.digests import Sha256Check, SpooledGitBlobSha1Check, StreamCheck
from clineval.data.download import DOWNLOAD_RETRY, SizeBound, download_verified
from clineval.data.unzip import Extraction, extract, find_member, member_matches, open_archive
from clineval.errors import InputError
from clineval.progress import track
from clineval.retry import RetryPolicy

REPOSITORY = "Borororo/ZY-BERT"
COMMIT = "72a89518392ec28f5dc1c8ed252a6c127ca2145b"
RAW = f"https://raw.githubusercontent.com/{REPOSITORY}/{COMMIT}"
LICENSE_NOTICE = (
    "TCM-SD (Ren et al., CCL 2022; github.com/Borororo/ZY-BERT) is licensed CC BY-NC-SA 4.0: "
    "non-commercial use only; give attribution (cite the paper and the repository) and say "
    "what you changed; share what you build on it under the same license. The records are "
    "clinical text: do not republish them."
)
# Bounds for files whose size nobody published: far above the release (54,152 records of a
# few kB each) yet a stop for a server that sends without end.
ARCHIVE_CAP = 512 << 20
SPLIT_CAP = 256 << 20
MEMBER_CAP = 1 << 30


@dataclass(frozen=True)
class UpstreamFile:
    path: str  # in the repository at COMMIT
    relative: str  # in the cache (and on a --base-url mirror)
    blob: str  # its git blob id at COMMIT
    size: int | None  # bytes, when known (it then bounds the download exactly)
    cap: int  # the bound when the size is not known


@dataclass(frozen=True)
class MemberFile:
    archive: str  # the UpstreamFile.relative it comes from
    name: str  # its full name in the archive, or (any_folder) its file name in any folder
    relative: str  # in the cache
    sha256: str | None = None  # pinned content, when the package manifest has it
    size: int | None = None  # pinned size (else MEMBER_CAP bounds it)
    any_folder: bool = False
    required: bool = True


@dataclass(frozen=True)
class Release:
    files: tuple[UpstreamFile, ...]
    members: tuple[MemberFile, ...]


_TRAIN_DEV = "tcm-sd/upstream/TCM_SD_train_dev.zip"
_CODE = "tcm-sd/upstream/TCM Code.zip"


def official_release() -> Release:
    """The pinned release; the vocabulary and normalization table pinned by the package
    manifest's entries for the copies in the shared data (the same bytes)."""

    def pinned(name: str) -> tuple[str | None, int | None]:
        entry = manifest_entry(f"tcm-sd/zy-bert/{name}")
        if entry is None or entry.sha256 is None:
            raise InputError(f"no checksum for tcm-sd/zy-bert/{name} in the package manifest")
        return entry.sha256, entry.size

    vocab_sha, vocab_size = pinned("syndrome_vocab.txt")
    table_sha, table_size = pinned("syndrome.txt")
    return Release(
        files=(
            UpstreamFile(
                "TCM_SD_train_dev.zip",
                _TRAIN_DEV,
                "4ad8f687eaf95de7b335c4370ea5e14f12b5efa7",
                None,
                ARCHIVE_CAP,
            ),
            UpstreamFile(
                "test.json", "tcm-sd/test.json", "1334879e6eccacd0de4a6711d08eab6dde0c74b0", None,
                SPLIT_CAP,
            ),
            UpstreamFile(
                "TCM Code.zip", _CODE, "7260cad13f6e4b3992a6c47b284b972ee2b6ce21", 3281398,
                ARCHIVE_CAP,
            ),
        ),
        members=(
            MemberFile(_TRAIN_DEV, "train.json", "tcm-sd/train.json", any_folder=True),
            MemberFile(_TRAIN_DEV, "dev.json", "tcm-sd/dev.json", any_folder=True),
            MemberFile(
                _TRAIN_DEV,
                "syndrome_knowledge.json",
                "tcm-sd/syndrome_knowledge.json",
                any_folder=True,
                required=False,
            ),
            MemberFile(
                _CODE,
                "TCM/data_preprocess/syndrome_vocab.txt",
                "tcm-sd/syndrome_vocab.txt",
                vocab_sha,
                vocab_size,
            ),
            MemberFile(
                _CODE, "TCM/data_preprocess/syndrome.txt", "tcm-sd/syndrome.txt", table_sha,
                table_size,
            ),
        ),
    )  # fmt: skip


def git_blob_id(path: Path) -> str:
    """The git blob id of a file on disk (sha1 of its header and bytes)."""
    digest = hashlib.sha1(f"blob {path.stat().st_size}\0".encode("ascii"), usedforsecurity=False)
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch_tcm_sd(
    root: Path,
    base_url: str | None = None,
    retry: RetryPolicy = DOWNLOAD_RETRY,
    release: Release | None = None,
) -> list[Path]:
    """Download, verify and unpack the release into the cache `root`; the paths of the files
    the loader reads, then of the archives. `release` replaces the pinned one (tests)."""
    release = release or official_release()
    remove_stale_partials(root)  # left by a fetch that was killed
    try:
        return _fetch(root, base_url, retry, release)
    finally:
        remove_empty_staging(root)


def _fetch(root: Path, base_url: str | None, retry: RetryPolicy, release: Release) -> list[Path]:
    records: dict[str, dict[str, Any]] = {}
    downloaded = []
    for upstream in track(release.files, len(release.files), "fetch tcm-sd", unit="files"):
        downloaded.append(_download(upstream, root, base_url, retry))
        records[upstream.relative] = {
            "git_blob": upstream.blob,
            "source": _source(upstream.path),
        }
    unpacked = []
    by_relative = {u.relative: u for u in release.files}
    for archive in dict.fromkeys(m.archive for m in release.members):
        members = [m for m in release.members if m.archive == archive]
        for member, name in _unpack(root, archive, members):
            unpacked.append(root / member.relative)
            records[member.relative] = {"source": _source(f"{by_relative[archive].path}!{name}")}
    fetched = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    for relative, record in records.items():
        path = root / relative
        record.update(sha256=sha256_file(path), size=path.stat().st_size, fetched=fetched)
    record_files(root, records)
    tests = [p for p in downloaded if not p.name.endswith(".zip")]
    archives = [p for p in downloaded if p.name.endswith(".zip")]
    return [*unpacked, *tests, *archives]


def _source(path: str) -> str:
    return f"github:{REPOSITORY}@{COMMIT}/{path}"


def _download(upstream: UpstreamFile, root: Path, base_url: str | None, retry: RetryPolicy) -> Path:
    target = root / upstream.relative
    if target.is_file() and git_blob_id(target) == upstream.blob:
        return target  # already here and the pinned file
    if base_url is None:
        url = f"{RAW}/{urllib.parse.quote(upstream.path)}"
    else:
        url = base_url.rstrip("/") + "/" + urllib.parse.quote(upstream.relative)
    if upstream.size is not None:
        bound = SizeBound(upstream.size, f"the size of {upstream.path} at {REPOSITORY}@{COMMIT}")
    else:
        bound = SizeBound(upstream.cap, f"the fixed cap: no size is published for {upstream.path}")
    staging = root / STAGING

    def check() -> StreamCheck:
        return SpooledGitBlobSha1Check(upstream.blob, staging)

    return download_verified(
        url,
        target,
        staging_root=root,
        bound=bound,
        check=check,
        what=upstream.relative,
        retry=retry,
    )


def _unpack(
    root: Path, archive_relative: str, members: list[MemberFile]
) -> list[tuple[MemberFile, str]]:
    """Unpack the members of one downloaded archive that the cache does not already hold;
    each member present with its name in the archive."""
    path = root / archive_relative
    found: list[tuple[MemberFile, Extraction]] = []
    with open_archive(path) as archive:
        names = set(archive.namelist())
        for member in members:
            if member.any_folder:
                try:
                    name = find_member(archive, member.name, path)
                except InputError:
                    if member.required:
                        raise
                    continue
            elif member.name in names:
                name = member.name
            elif member.required:
                raise InputError(f"the archive has no member {member.name!r}", path=path)
            else:
                continue
            bound = member.size if member.size is not None else MEMBER_CAP
            item = Extraction(name, root / member.relative, bound, _pin(member.sha256))
            found.append((member, item))
        todo = [item for _, item in found if not member_matches(archive, item, path)]
    if todo:
        extract(path, todo, root, archive_relative)
    return [(member, item.member) for member, item in found]


def _pin(sha256: str | None) -> Callable[[], StreamCheck] | None:
    if sha256 is None:
        return None
    return lambda: Sha256Check(sha256)
