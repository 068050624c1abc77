"""Reader for BioC XML collections (optionally gzipped), as released for BC5CDR and BioRED.

Only what the NER benchmark needs is kept: documents, their passages (type, offset, text) and
each passage's annotations (type infon, every location, annotation text), in file order.
Locations are document-level character offsets, as BioC defines them.
"""

from __future__ import annotations

import functools
import gzip
import xml.parsers.expat
from dataclasses import dataclass
from pathlib import Path

from clineval.data.checksums import version_key
from clineval.errors import InputError


@dataclass(frozen=True, slots=True)
class BiocAnnotation:
    id: str
    type: str
    locations: tuple[tuple[int, int], ...]  # (offset, length), in file order
    text: str
    line: int  # 1-based line of the <annotation> tag, for error messages


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
    line: int  # 1-based line of the <document> tag, for error messages


def _int(value: str | None, what: str, where: str, path: str, line: int) -> int:
    digits = (value or "").strip().removeprefix("-")
    # ASCII digits only: str.isdigit() also accepts "²", which int() rejects.
    if value is None or not (digits.isascii() and digits.isdigit()):
        raise InputError(f"{where}: {what} {value!r} is not an integer", path=path, line=line)
    return int(value)


class _Annotation:
    def __init__(self, ann_id: str, line: int) -> None:
        self.id = ann_id
        self.line = line
        self.infons: dict[str, str] = {}
        self.locations: list[tuple[int, int]] = []
        self.text = ""


class _Passage:
    def __init__(self) -> None:
        self.infons: dict[str, str] = {}
        self.offset: int | None = None
        self.text = ""
        self.annotations: list[BiocAnnotation] = []


class _BiocHandler:
    """expat callbacks building the documents; keeps line numbers for precise errors."""

    _CAPTURED = frozenset({"id", "offset", "text", "infon"})

    def __init__(self, parser: xml.parsers.expat.XMLParserType, path: str) -> None:
        self.parser = parser
        self.path = path
        self.stack: list[str] = []
        self.docs: list[BiocDocument] = []
        self.doc_id: str | None = None
        self.doc_line = 0
        self.passages: list[BiocPassage] = []
        self.passage: _Passage | None = None
        self.annotation: _Annotation | None = None
        self.buffer: list[str] | None = None
        self.infon_key = ""

    @property
    def line(self) -> int:
        return int(self.parser.CurrentLineNumber)

    def where(self) -> str:
        return f"document {self.doc_id or '?'}"

    def start(self, name: str, attrs: dict[str, str]) -> None:
        parent = self.stack[-1] if self.stack else ""
        self.stack.append(name)
        if name == "document":
            self.doc_id, self.doc_line, self.passages = None, self.line, []
        elif name == "passage" and parent == "document":
            self.passage = _Passage()
        elif name == "annotation" and parent == "passage":
            self.annotation = _Annotation(attrs.get("id", "?"), self.line)
        elif name == "location" and self.annotation is not None and parent == "annotation":
            here = f"{self.where()} annotation {self.annotation.id}"
            offset = _int(attrs.get("offset"), "location offset", here, self.path, self.line)
            length = _int(attrs.get("length"), "location length", here, self.path, self.line)
            self.annotation.locations.append((offset, length))
        if name in self._CAPTURED and parent in ("document", "passage", "annotation"):
            self.buffer = []
            self.infon_key = attrs.get("key", "")

    def chars(self, data: str) -> None:
        if self.buffer is not None:
            self.buffer.append(data)

    def end(self, name: str) -> None:
        self.stack.pop()
        parent = self.stack[-1] if self.stack else ""
        if self.buffer is not None and name in self._CAPTURED:
            self._captured(name, parent, "".join(self.buffer))
            self.buffer = None
            return
        if name == "annotation" and self.annotation is not None and parent == "passage":
            self._close_annotation()
        elif name == "passage" and self.passage is not None and parent == "document":
            self._close_passage()
        elif name == "document":
            if not self.doc_id:
                raise InputError("a <document> without <id>", path=self.path, line=self.doc_line)
            self.docs.append(BiocDocument(self.doc_id, tuple(self.passages), self.doc_line))

    def _captured(self, name: str, parent: str, value: str) -> None:
        if parent == "document" and name == "id":
            self.doc_id = value.strip()
        elif parent == "passage" and self.passage is not None:
            if name == "offset":
                self.passage.offset = _int(
                    value, "passage offset", self.where(), self.path, self.line
                )
            elif name == "text":
                self.passage.text = value
            elif name == "infon":
                self.passage.infons[self.infon_key] = value
        elif parent == "annotation" and self.annotation is not None:
            if name == "text":
                self.annotation.text = value
            elif name == "infon":
                self.annotation.infons[self.infon_key] = value

    def _close_annotation(self) -> None:
        ann = self.annotation
        assert ann is not None and self.passage is not None
        here = f"{self.where()} annotation {ann.id}"
        ann_type = ann.infons.get("type")
        if not ann_type:
            raise InputError(f"{here}: no 'type' infon", path=self.path, line=ann.line)
        if not ann.locations:
            raise InputError(f"{here}: no location", path=self.path, line=ann.line)
        self.passage.annotations.append(
            BiocAnnotation(ann.id, ann_type, tuple(ann.locations), ann.text, ann.line)
        )
        self.annotation = None

    def _close_passage(self) -> None:
        passage = self.passage
        assert passage is not None
        if passage.offset is None:
            raise InputError(f"{self.where()}: passage without <offset>", self.path, self.line)
        self.passages.append(
            BiocPassage(
                passage.infons.get("type", ""),
                passage.offset,
                passage.text,
                tuple(passage.annotations),
            )
        )
        self.passage = None


def parse_bioc(data: bytes, path: str | Path) -> list[BiocDocument]:
    """Parse BioC XML bytes; errors name ``path`` and the line."""
    parser = xml.parsers.expat.ParserCreate()
    handler = _BiocHandler(parser, str(path))
    parser.StartElementHandler = handler.start
    parser.EndElementHandler = handler.end
    parser.CharacterDataHandler = handler.chars
    parser.buffer_text = True
    try:
        parser.Parse(data, True)
    except xml.parsers.expat.ExpatError as exc:
        message = xml.parsers.expat.errors.messages.get(exc.code, str(exc))
        raise InputError(f"malformed XML: {message}", path=str(path), line=exc.lineno) from None
    return handler.docs


def read_bioc(path: str | Path) -> list[BiocDocument]:
    """Read a BioC XML file (``.gz`` decompressed transparently), cached per file version."""
    return list(_read_cached(*version_key(path)))


@functools.lru_cache(maxsize=16)
def _read_cached(path: str, size: int, mtime_ns: int, nonce: int) -> tuple[BiocDocument, ...]:
    raw = Path(path).read_bytes()
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise InputError(f"corrupt gzip data: {exc}", path=path) from None
    return tuple(parse_bioc(raw, path))
