"""Reader for brat standoff annotations (``.txt`` + ``.ann``), loose or inside a zip (CHIA).

Texts are decoded as UTF-8 WITHOUT newline translation: brat offsets count every character of
the file, so a ``\\r\\n`` line end is two characters. Only text-bound annotations (``T`` lines)
are kept; relations, events, attributes, notes and equivalences are skipped.
A ``T`` line is ``T<id><TAB><type> <start> <end>[;<start> <end>...]<TAB><text>``: fragments of
a discontinuous entity are separated by ``;`` and brat joins their texts with one space.
"""

from __future__ import annotations

import functools
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from clineval.errors import InputError


@dataclass(frozen=True, slots=True)
class BratEntity:
    id: str
    type: str
    fragments: tuple[tuple[int, int], ...]  # (start, end) per fragment, end exclusive
    text: str  # the annotation's text column
    line: int  # 1-based line in the .ann file

    @property
    def discontinuous(self) -> bool:
        return len(self.fragments) > 1


@dataclass(frozen=True, slots=True)
class BratDocument:
    id: str  # file stem, e.g. NCT00050349_exc
    text: str
    entities: tuple[BratEntity, ...]


def _decode(data: bytes, path: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 ({exc.reason} at byte {exc.start})", path=path) from None


def _fragments(spec: str, path: str, line: int) -> tuple[tuple[int, int], ...]:
    out = []
    for part in spec.split(";"):
        bounds = part.split()
        if len(bounds) != 2 or not all(b.isdigit() for b in bounds):
            raise InputError(f"bad offsets {part.strip()!r} (want 'start end')", path, line)
        start, end = int(bounds[0]), int(bounds[1])
        if end < start:
            raise InputError(f"end offset {end} before start offset {start}", path, line)
        out.append((start, end))
    return tuple(out)


_OTHER_PREFIXES = ("R", "E", "*", "A", "M", "N", "#")


def parse_ann(content: str, path: str) -> list[BratEntity]:
    """Text-bound annotations of an ``.ann`` file, in file order.

    A line without a tab that follows a ``T`` line continues that entity's text (an entity
    spanning a line break; CHIA's with-scope files have 18): it is appended after a newline,
    as the bigbio loader NCER uses does.
    """
    entities: list[BratEntity] = []
    continues_entity = False
    for number, raw in enumerate(content.split("\n"), start=1):
        line = raw.rstrip("\r")
        if not line.strip():
            continue
        if "\t" not in line:
            if not continues_entity:
                raise InputError(f"unknown brat annotation line {line[:20]!r}", path, number)
            last = entities[-1]
            entities[-1] = BratEntity(
                last.id, last.type, last.fragments, last.text + "\n" + line, last.line
            )
            continue
        if not line.startswith("T"):
            if not line.startswith(_OTHER_PREFIXES):
                raise InputError(f"unknown brat annotation line {line[:20]!r}", path, number)
            continues_entity = False
            continue
        fields = line.split("\t")
        if len(fields) < 3:
            raise InputError(
                "T line needs id, 'type offsets' and text (tab-separated)", path, number
            )
        type_name, _, spec = fields[1].partition(" ")
        if not type_name or not spec:
            raise InputError(f"T line without type or offsets: {fields[1]!r}", path, number)
        # The text column may itself contain tabs in principle: keep everything after field 2.
        text = "\t".join(fields[2:])
        entities.append(
            BratEntity(fields[0], type_name, _fragments(spec, path, number), text, number)
        )
        continues_entity = True
    return entities


def read_brat_pair(txt_path: str | Path, ann_path: str | Path | None = None) -> BratDocument:
    """One loose brat document; ``ann_path`` defaults to the ``.ann`` beside the ``.txt``."""
    txt = Path(txt_path)
    ann = Path(ann_path) if ann_path is not None else txt.with_suffix(".ann")
    for p in (txt, ann):
        if not p.is_file():
            raise InputError("data file not found", path=p)
    text = _decode(txt.read_bytes(), str(txt))
    entities = parse_ann(_decode(ann.read_bytes(), str(ann)), str(ann))
    return BratDocument(txt.stem, text, tuple(entities))


def read_brat_zip(path: str | Path) -> dict[str, BratDocument]:
    """All brat documents of a zip (stem -> document), cached per path/size/mtime.

    Members are read in binary and decoded as UTF-8 without newline translation. Errors name
    ``<zip file name>:<member>`` and the line.
    """
    p = Path(path)
    try:
        stat = p.stat()
    except FileNotFoundError:
        raise InputError("data file not found", path=p) from None
    return dict(_read_zip_cached(str(p), stat.st_size, stat.st_mtime_ns))


@functools.lru_cache(maxsize=4)
def _read_zip_cached(path: str, size: int, mtime_ns: int) -> tuple[tuple[str, BratDocument], ...]:
    zip_name = Path(path).name
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile as exc:
        raise InputError(f"not a zip file: {exc}", path=path) from None
    with archive:
        members = {PurePosixPath(n): n for n in archive.namelist() if not n.endswith("/")}
        txts = sorted(m for m in members if m.suffix == ".txt")
        docs = []
        for txt in txts:
            ann = txt.with_suffix(".ann")
            if ann not in members:
                raise InputError(f"{txt.name} has no {ann.name}", path=f"{zip_name}:{txt}")
            text = _decode(archive.read(members[txt]), f"{zip_name}:{txt}")
            ann_where = f"{zip_name}:{ann}"
            entities = parse_ann(_decode(archive.read(members[ann]), ann_where), ann_where)
            docs.append((txt.stem, BratDocument(txt.stem, text, tuple(entities))))
    return tuple(docs)
