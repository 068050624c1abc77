"""Checks that see a file's bytes as they stream by and say at the end whether it is the one
expected: the pluggable part of a verified download (clineval.data.download).

A check is fed every byte once, in order, in chunks of any size (``update``), then asked for its
verdict (``problem``: None when the bytes are the expected file, else a short reason). It never
keeps the bytes in memory, so memory does not depend on the size of the file (the git blob check
of a file of unpublished size spools them to disk). Today's checks: sha256 of the
bytes, sha256 of a gzip stream's content (bounded, so a small gzip cannot inflate without end),
"any of these", "all of these", and a git blob id (sha1 of the blob header and the bytes: what
a git host reports for a file it does not keep in LFS). Another digest is one more class with
the same two methods. A check may also raise InputError from `update` or `problem` when what it
found is best told as such (a validating check naming the bad line): the download then stops and
keeps nothing, as for any other failed check.
"""

from __future__ import annotations

import hashlib
import tempfile
import zlib
from pathlib import Path
from typing import BinaryIO, Protocol

_GZIP_WBITS = 16 + zlib.MAX_WBITS  # zlib with the gzip header and trailer


class StreamCheck(Protocol):
    def update(self, chunk: bytes) -> None: ...

    def problem(self) -> str | None:
        """None when the bytes seen so far are the expected file, else why they are not."""
        ...


def _short(digest: str) -> str:
    return digest[:12] + "..."


class Sha256Check:
    """The bytes' sha256 is `expected` (hex)."""

    def __init__(self, expected: str) -> None:
        self._expected = expected.lower()
        self._digest = hashlib.sha256()

    def update(self, chunk: bytes) -> None:
        self._digest.update(chunk)

    def problem(self) -> str | None:
        got = self._digest.hexdigest()
        if got == self._expected:
            return None
        return f"sha256 {_short(got)} is not the expected {_short(self._expected)}"


class GzipContentSha256Check:
    """The bytes are a gzip stream (one or more members) whose content has sha256 `expected`
    and is at most `max_content` bytes long: inflating stops just past that bound."""

    def __init__(self, expected: str, max_content: int) -> None:
        self._expected = expected.lower()
        self._max = max_content
        self._digest = hashlib.sha256()
        self._size = 0
        self._seen = False
        self._inflate = zlib.decompressobj(_GZIP_WBITS)
        self._error: str | None = None

    def update(self, chunk: bytes) -> None:
        pending = chunk
        while pending and self._error is None:
            self._seen = True
            if self._inflate.eof:  # the previous member ended: the next one starts here
                self._inflate = zlib.decompressobj(_GZIP_WBITS)
            try:
                out = self._inflate.decompress(pending, self._max - self._size + 1)
            except zlib.error as exc:
                self._error = f"not valid gzip data ({exc})"
                return
            self._size += len(out)
            if self._size > self._max:
                self._error = f"gzip content larger than {self._max:,} bytes"
                return
            self._digest.update(out)
            pending = (
                self._inflate.unused_data if self._inflate.eof else self._inflate.unconsumed_tail
            )

    def problem(self) -> str | None:
        if self._error is not None:
            return self._error
        if not self._seen or not self._inflate.eof:
            return "gzip data ends early"
        got = self._digest.hexdigest()
        if got == self._expected:
            return None
        return f"gzip content sha256 {_short(got)} is not the expected {_short(self._expected)}"


class _CheckGroup:
    """Several checks that each see every byte; subclasses say how their verdicts combine."""

    def __init__(self, *checks: StreamCheck) -> None:
        self._checks = checks

    def update(self, chunk: bytes) -> None:
        for check in self._checks:
            check.update(chunk)


class AnyOfCheck(_CheckGroup):
    """Passes when at least one of `checks` passes (e.g. the exact bytes or the same content)."""

    def problem(self) -> str | None:
        problems = [check.problem() for check in self._checks]
        if any(p is None for p in problems):
            return None
        return "; ".join(p for p in problems if p is not None)


class GitBlobSha1Check:
    """The bytes are the git blob `expected` (hex sha1 of ``blob <size>\\0`` + the bytes) of
    `size` bytes: the id a git host gives a file that is not in LFS."""

    def __init__(self, expected: str, size: int) -> None:
        self._expected = expected.lower()
        self._size = size
        self._seen = 0
        self._digest = hashlib.sha1(f"blob {size}\0".encode("ascii"), usedforsecurity=False)

    def update(self, chunk: bytes) -> None:
        self._seen += len(chunk)
        self._digest.update(chunk)

    def problem(self) -> str | None:
        if self._seen != self._size:
            return f"{self._seen:,} bytes, not the {self._size:,} of the git blob"
        got = self._digest.hexdigest()
        if got == self._expected:
            return None
        return f"git blob id {_short(got)} is not the expected {_short(self._expected)}"


class AllOfCheck(_CheckGroup):
    """Passes when every one of `checks` passes (e.g. a hash and a validation of the content)."""

    def problem(self) -> str | None:
        problems = [p for p in (check.problem() for check in self._checks) if p is not None]
        return "; ".join(problems) if problems else None


class SpooledGitBlobSha1Check:
    """The bytes are the git blob `expected` when nobody published their size: the hash starts
    with the header ``blob <size>\\0``, so the bytes are copied to an anonymous file in
    `spool_dir` (the cache's staging area: the same disk, no name, gone when closed or when the
    process dies) and hashed with their header once the last one arrived. It costs one more
    write and read of the file, never memory. With a published size, GitBlobSha1Check hashes
    as the bytes stream by instead."""

    def __init__(self, expected: str, spool_dir: Path) -> None:
        self._expected = expected.lower()
        self._dir = spool_dir
        self._spool: BinaryIO | None = None  # opened with the first bytes: in the caller's try
        self._size = 0
        self._verdict: str | None = None
        self._done = False

    def update(self, chunk: bytes) -> None:
        if self._spool is None:
            self._dir.mkdir(parents=True, exist_ok=True)
            self._spool = tempfile.TemporaryFile(dir=self._dir)  # noqa: SIM115 - closed in problem()
        self._spool.write(chunk)
        self._size += len(chunk)

    def problem(self) -> str | None:
        if not self._done:
            digest = hashlib.sha1(f"blob {self._size}\0".encode("ascii"), usedforsecurity=False)
            spool = self._spool
            if spool is not None:
                with spool:
                    spool.seek(0)
                    for block in iter(lambda: spool.read(1 << 20), b""):
                        digest.update(block)
            got = digest.hexdigest()
            if got != self._expected:
                self._verdict = (
                    f"git blob id {_short(got)} is not the expected {_short(self._expected)}"
                )
            self._done = True
        return self._verdict
