"""Members of a downloaded zip archive into the cache: safe, bounded, checked, atomic.

  * Safe: a member is looked up by name and written to a target path the caller chose; the
    member's own path never becomes a path on disk, so `../`, absolute names or symlink
    entries in an archive cannot place a file anywhere. Encrypted members are refused.
  * Bounded: a member whose declared size exceeds its bound is refused before a byte is
    inflated, and inflating stops one chunk past the bound whatever the header said (a zip
    bomb costs at most bound + CHUNK bytes of disk, never memory).
  * Checked: zipfile checks every member's CRC-32 as the last byte arrives; a StreamCheck
    (clineval.data.digests) may pin its content too. A truncated or corrupt archive fails.
  * Atomic: every member of one call is inflated into its own locked staging file in the
    cache's `.partial/` (clineval.data.cache) and renamed into place only after ALL of them
    passed: an interrupted extraction (an exception, Ctrl-C, SIGKILL) leaves no partial file
    in the cache; a killed one leaves unheld staging files that the next fetch deletes.

`member_matches` says whether a file already in the cache is that member (same size and
CRC-32, and the pinned check when there is one), so a second fetch extracts nothing again.
"""

from __future__ import annotations

import contextlib
import os
import zipfile
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from clineval.data.cache import open_partial
from clineval.data.digests import StreamCheck
from clineval.errors import InputError

CHUNK = 1 << 16
_ENCRYPTED = 0x1  # general purpose flag bit 0
# What zipfile raises for an archive it cannot read: bad headers or data (BadZipFile, zlib,
# EOF, OSError), a version or compression method it does not support (NotImplementedError), a
# password it was not given (RuntimeError), a name that is not UTF-8 (a ValueError).
_UNREADABLE = (
    zipfile.BadZipFile,
    zlib.error,
    EOFError,
    OSError,
    NotImplementedError,
    RuntimeError,
    ValueError,
)


@dataclass(frozen=True, slots=True)
class Extraction:
    member: str  # its name inside the archive
    target: Path  # where it goes in the cache
    bound: int  # most bytes it may inflate to
    check: Callable[[], StreamCheck] | None = None  # a pinned content check, if any


# zipfile reads the whole central directory into memory (a ZipInfo of ~500 bytes a member)
# when it opens an archive: a 512 MiB download of empty members would be millions of them.
# The archives fetched have at most a few hundred; this is far above and far below harm.
MAX_MEMBERS = 100_000
# zipfile parses entries for as many bytes as the end record gives the central directory,
# whatever count it declares: that size is bounded too (100,000 entries of 160 bytes).
MAX_DIRECTORY_BYTES = 16 << 20


def _declared(path: Path) -> tuple[int, int] | None:
    """(members, central directory bytes) that the archive's end record declares (zip64 too),
    read before zipfile parses them; None without an end record (zipfile says what is wrong)."""
    with open(path, "rb") as fh:
        # zipfile's own reader of the end record: the one place that knows zip64's layout
        end = zipfile._EndRecData(fh)  # type: ignore[attr-defined]
    if not end:
        return None
    return int(end[zipfile._ECD_ENTRIES_TOTAL]), int(end[zipfile._ECD_SIZE])  # type: ignore[attr-defined]


def open_archive(
    path: Path, max_members: int | None = None, max_directory_bytes: int | None = None
) -> zipfile.ZipFile:
    """The archive at `path`, its directory bounded (default MAX_MEMBERS and
    MAX_DIRECTORY_BYTES, read at the call); InputError naming it when it cannot be read."""
    max_members = MAX_MEMBERS if max_members is None else max_members
    max_directory_bytes = (
        MAX_DIRECTORY_BYTES if max_directory_bytes is None else max_directory_bytes
    )
    try:
        declared = _declared(path)
        if declared is not None and (
            declared[0] > max_members or declared[1] > max_directory_bytes
        ):
            raise InputError(
                f"the zip archive declares {declared[0]:,} members in {declared[1]:,} bytes of "
                f"directory, more than clineval reads ({max_members:,} members, "
                f"{max_directory_bytes:,} bytes; the archives it fetches have a few hundred)",
                path=path,
            )
        return zipfile.ZipFile(path)
    except _UNREADABLE as exc:
        reason = f"{type(exc).__name__}: {exc}"
        raise InputError(f"not a readable zip archive ({reason})", path=path) from None


def find_member(archive: zipfile.ZipFile, basename: str, where: Path) -> str:
    """The one member called `basename` in any folder (macOS resource forks and folders
    skipped); InputError when there is none or more than one (which would be a guess)."""
    found = [
        info.filename
        for info in archive.infolist()
        if not info.filename.endswith("/")  # a folder (ZipInfo.is_dir fails on an empty name)
        and info.filename.replace("\\", "/").rsplit("/", 1)[-1] == basename
        and not info.filename.startswith("__MACOSX/")
    ]
    if len(found) != 1:
        detail = "no member" if not found else f"{len(found)} members ({', '.join(found)})"
        raise InputError(f"expected one {basename} in the archive, found {detail}", path=where)
    return found[0]


def _info(archive: zipfile.ZipFile, name: str, where: Path) -> zipfile.ZipInfo:
    try:
        info = archive.getinfo(name)
    except KeyError:
        raise InputError(f"the archive has no member {name!r}", path=where) from None
    if info.flag_bits & _ENCRYPTED:
        raise InputError(f"member {name!r} is encrypted", path=where)
    return info


def member_matches(archive: zipfile.ZipFile, item: Extraction, where: Path) -> bool:
    """True when `item.target` already holds exactly that member."""
    info = _info(archive, item.member, where)
    try:
        if item.target.stat().st_size != info.file_size:
            return False
        crc = 0
        check = item.check() if item.check is not None else None
        with open(item.target, "rb") as handle:
            for block in iter(lambda: handle.read(CHUNK), b""):
                crc = zlib.crc32(block, crc)
                if check is not None:
                    check.update(block)
    except OSError:
        return False
    return crc == info.CRC and (check is None or check.problem() is None)


def extract(
    archive_path: Path, items: Sequence[Extraction], staging_root: Path, what: str
) -> list[Path]:
    """Inflate `items` of the archive as the module doc says; their targets, in order.
    `what` names the archive in messages (its path relative to the cache)."""
    archive = open_archive(archive_path)
    staged: list[tuple[int, Path, Path]] = []  # (locked fd, staging file, target)
    placed = False
    try:
        for item in items:
            fd, partial = open_partial(staging_root, item.target.name)
            staged.append((fd, partial, item.target))
            _inflate(archive, item, fd, archive_path, what)
        for _, partial, target in staged:
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(partial, target)  # still locked: no clean-up can take it
        placed = True
        return [item.target for item in items]
    except OSError as exc:
        reason = exc.strerror or exc
        raise InputError(f"cannot write to the cache: {reason}", path=staging_root) from None
    finally:
        archive.close()
        for fd, partial, _ in staged:
            if not placed:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(partial)
            os.close(fd)


def _inflate(
    archive: zipfile.ZipFile, item: Extraction, fd: int, archive_path: Path, what: str
) -> None:
    info = _info(archive, item.member, archive_path)
    if info.file_size > item.bound:
        raise InputError(
            f"member {item.member!r} of {what} declares {info.file_size:,} bytes, above its "
            f"bound of {item.bound:,}; nothing was extracted",
            path=archive_path,
        )
    check = item.check() if item.check is not None else None
    try:
        source = archive.open(info)
    except _UNREADABLE as exc:  # a bad local header, an unsupported compression method
        raise _corrupt(item, what, archive_path, exc) from None
    written = 0
    try:
        sink = os.fdopen(os.dup(fd), "wb")
        with sink, source:
            while True:
                try:
                    chunk = source.read(CHUNK)
                except _UNREADABLE as exc:  # bad data, a CRC-32 that does not match
                    raise _corrupt(item, what, archive_path, exc) from None
                if not chunk:
                    break
                written += len(chunk)
                if written > item.bound:
                    raise InputError(
                        f"member {item.member!r} of {what} inflates past its bound of "
                        f"{item.bound:,} bytes; nothing was extracted",
                        path=archive_path,
                    )
                if check is not None:
                    check.update(chunk)
                sink.write(chunk)
            sink.flush()
            os.fsync(sink.fileno())
    except OSError as exc:
        reason = exc.strerror or exc
        raise InputError(f"cannot write to the cache: {reason}", path=item.target) from None
    problem = check.problem() if check is not None else None
    if problem is not None:
        raise InputError(
            f"checksum mismatch for {item.member!r} of {what} ({problem}); nothing was extracted",
            path=archive_path,
        )


def _corrupt(item: Extraction, what: str, archive_path: Path, exc: BaseException) -> InputError:
    return InputError(
        f"member {item.member!r} of {what} cannot be read ({type(exc).__name__}: {exc}); "
        "nothing was extracted",
        path=archive_path,
    )
