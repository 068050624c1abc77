"""Reader for PubTator files (NCBI Disease original release, BC5CDR, BioRED).

Format: documents separated by blank lines; each starts with ``PMID|t|title`` and
``PMID|a|abstract``, followed by tab-separated lines. A mention line is
``PMID<TAB>start<TAB>end<TAB>text<TAB>type[<TAB>id[<TAB>...]]`` (offsets index into
``title + " " + abstract``, end exclusive). Relation lines (``PMID<TAB>CID<TAB>...``,
BioRED's ``PMID<TAB>Association<TAB>...``) have a non-numeric second field and are skipped.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from clineval.data.checksums import version_key
from clineval.errors import InputError


@dataclass(frozen=True, slots=True)
class PubtatorMention:
    start: int
    end: int
    text: str  # the annotation's own text column
    type: str
    line: int  # 1-based line in the file, for error messages and mismatch reports


@dataclass(frozen=True, slots=True)
class PubtatorDocument:
    pmid: str
    title: str
    abstract: str
    mentions: tuple[PubtatorMention, ...]

    @property
    def text(self) -> str:
        """The benchmark's document text: title, one space, abstract."""
        return self.title + " " + self.abstract


class _Builder:
    """Accumulates one document while the file is scanned."""

    def __init__(self, pmid: str, title: str) -> None:
        self.pmid = pmid
        self.title = title
        self.abstract: str | None = None
        self.mentions: list[PubtatorMention] = []

    def build(self) -> PubtatorDocument:
        return PubtatorDocument(self.pmid, self.title, self.abstract or "", tuple(self.mentions))


def parse_pubtator(content: str, path: str | Path) -> list[PubtatorDocument]:
    """Parse PubTator text; malformed lines raise InputError naming ``path`` and the line."""
    docs: list[PubtatorDocument] = []
    current: _Builder | None = None
    # Lines end at "\n" only (not str.splitlines, which also breaks at "\r", "\x1c", "\u2028",
    # ...): PubTator files are LF files, and such a character inside a title must neither split
    # the title nor shift every later line number.
    for number, raw in enumerate(content.split("\n"), start=1):
        line = raw.rstrip("\r")
        if not line.strip():
            if current is not None:
                docs.append(current.build())
                current = None
            continue
        if "\t" not in line:
            current = _header_line(line, current, docs, path, number)
            continue
        if current is None:
            raise InputError("annotation line before any |t| title line", path=path, line=number)
        fields = line.split("\t")
        if fields[0] != current.pmid:
            raise InputError(
                f"annotation for PMID {fields[0]!r} inside document {current.pmid}",
                path=path,
                line=number,
            )
        if fields[1].isidentifier():  # relation line (CID, Association, ...): not an entity
            if len(fields) < 4:
                raise InputError(f"relation line with {len(fields)} fields", path=path, line=number)
            continue
        if not _is_offset(fields[1]):
            raise InputError(
                f"start offset {fields[1]!r} is not a non-negative integer", path=path, line=number
            )
        current.mentions.append(_mention(fields, path, number))
    if current is not None:
        docs.append(current.build())
    return docs


def _header_line(
    line: str, current: _Builder | None, docs: list[PubtatorDocument], path: str | Path, n: int
) -> _Builder:
    pmid, sep, rest = line.partition("|")
    kind, sep2, body = rest.partition("|")
    if not sep or not sep2 or kind not in ("t", "a") or not pmid.strip():
        raise InputError("expected 'PMID|t|title', 'PMID|a|abstract' or a tab line", path, n)
    if kind == "t":
        if current is not None:  # no blank line between documents: tolerate, close the last one
            docs.append(current.build())
        return _Builder(pmid, body)
    if current is None or current.pmid != pmid:
        raise InputError(f"abstract line for PMID {pmid} without its title line", path, n)
    if current.abstract is not None:
        raise InputError(f"second abstract line for PMID {pmid}", path, n)
    current.abstract = body
    return current


def _is_offset(field: str) -> bool:
    """ASCII digits only: str.isdigit() also accepts "²", which int() rejects."""
    return field.isascii() and field.isdigit()


def _mention(fields: list[str], path: str | Path, n: int) -> PubtatorMention:
    if len(fields) < 5:
        raise InputError(
            f"mention line needs PMID, start, end, text, type; got {len(fields)} fields", path, n
        )
    if not _is_offset(fields[2]):
        raise InputError(f"end offset {fields[2]!r} is not a non-negative integer", path, n)
    start, end = int(fields[1]), int(fields[2])
    if end < start:
        raise InputError(f"end offset {end} before start offset {start}", path, n)
    if not fields[4]:
        raise InputError("empty entity type", path, n)
    return PubtatorMention(start, end, fields[3], fields[4], n)


def read_pubtator(path: str | Path) -> list[PubtatorDocument]:
    """Read and parse a PubTator file (cached per process and file version)."""
    return list(_read_cached(*version_key(path)))


@functools.lru_cache(maxsize=32)
def _read_cached(path: str, size: int, mtime_ns: int, nonce: int) -> tuple[PubtatorDocument, ...]:
    try:
        content = Path(path).read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 ({exc.reason} at byte {exc.start})", path=path) from None
    return tuple(parse_pubtator(content, path))
