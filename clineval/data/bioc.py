"""Reader for BioC XML collections (optionally gzipped), as released for BC5CDR and BioRED.

Only what the NER benchmark needs is kept: documents, their passages (type, offset, text) and
each passage's annotations (type infon, every location, annotation text), in file order.
Locations are document-level character offsets, as BioC defines them.
"""

from __future__ import annotations

import functools
import gzip
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from clineval.errors import InputError


@dataclass(frozen=True, slots=True)
class BiocAnnotation:
    id: str
    type: str
    locations: tuple[tuple[int, int], ...]  # (offset, length), in file order
    text: str


@dataclass(frozen=True, slots=True)
class BiocPassage:
    type: str  # the "type" infon: "title", "abstract", ...
    offset: int
    text: str
    annotations: tuple[BiocAnnotation, ...]


@dataclass(frozen=True, slots=True)
class BiocDocument:
    id: str
    passages: tuple[BiocPassage, ...]


def _infons(element: ET.Element) -> dict[str, str]:
    return {i.get("key", ""): (i.text or "") for i in element.findall("infon")}


def _int(value: str | None, what: str, where: str, path: str) -> int:
    if value is None or not value.strip().lstrip("-").isdigit():
        raise InputError(f"{where}: {what} {value!r} is not an integer", path=path)
    return int(value)


def _annotation(element: ET.Element, where: str, path: str) -> BiocAnnotation:
    ann_id = element.get("id", "?")
    here = f"{where} annotation {ann_id}"
    ann_type = _infons(element).get("type")
    if not ann_type:
        raise InputError(f"{here}: no 'type' infon", path=path)
    locations = tuple(
        (
            _int(loc.get("offset"), "location offset", here, path),
            _int(loc.get("length"), "location length", here, path),
        )
        for loc in element.findall("location")
    )
    if not locations:
        raise InputError(f"{here}: no location", path=path)
    return BiocAnnotation(ann_id, ann_type, locations, element.findtext("text") or "")


def parse_bioc(data: bytes, path: str | Path) -> list[BiocDocument]:
    """Parse BioC XML bytes; errors name ``path`` (and the line for XML syntax errors)."""
    p = str(path)
    try:
        root = ET.fromstring(data)
    except ET.ParseError as exc:
        line = exc.position[0] if exc.position else None
        raise InputError(f"malformed XML: {exc}", path=p, line=line) from None
    docs = []
    for doc in root.iter("document"):
        doc_id = (doc.findtext("id") or "").strip()
        if not doc_id:
            raise InputError("a <document> without <id>", path=p)
        passages = []
        for passage in doc.findall("passage"):
            where = f"document {doc_id}"
            offset = _int(passage.findtext("offset"), "passage offset", where, p)
            annotations = tuple(_annotation(a, where, p) for a in passage.findall("annotation"))
            passages.append(
                BiocPassage(
                    _infons(passage).get("type", ""),
                    offset,
                    passage.findtext("text") or "",
                    annotations,
                )
            )
        docs.append(BiocDocument(doc_id, tuple(passages)))
    return docs


def read_bioc(path: str | Path) -> list[BiocDocument]:
    """Read a BioC XML file (``.gz`` decompressed transparently), cached per path/size/mtime."""
    p = Path(path)
    try:
        stat = p.stat()
    except FileNotFoundError:
        raise InputError("data file not found", path=p) from None
    return list(_read_cached(str(p), stat.st_size, stat.st_mtime_ns))


@functools.lru_cache(maxsize=16)
def _read_cached(path: str, size: int, mtime_ns: int) -> tuple[BiocDocument, ...]:
    raw = Path(path).read_bytes()
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise InputError(f"corrupt gzip data: {exc}", path=path) from None
    return tuple(parse_bioc(raw, path))
