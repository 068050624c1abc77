"""Reader for brat standoff annotations (``.txt`` + ``.ann``), loose or inside a zip (CHIA).

Texts are decoded as UTF-8 WITHOUT newline translation: brat offsets count every character of
the file, so a ``\\r\\n`` line end is two characters. Only text-bound annotations (``T`` lines)
are kept; relations, events, attributes, notes and equivalences are skipped.
A ``T`` line is ``T<id><TAB><type> <start> <end>[;<start> <end>...]<TAB><text>``: fragments of
a discontinuous entity are separated by ``;`` and brat joins their texts with one space.
"""

from __future__ import annotations

import functools
import re
import zipfile
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from clineval.data.checksums import FileVersion, version_key
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
        # ASCII digits only: str.isdigit() also accepts "²", which int() rejects.
        if len(bounds) != 2 or not all(b.isascii() and b.isdigit() for b in bounds):
            raise InputError(f"bad offsets {part.strip()!r} (want 'start end')", path, line)
        start, end = int(bounds[0]), int(bounds[1])
        if end < start:
            raise InputError(f"end offset {end} before start offset {start}", path, line)
        out.append((start, end))
    return tuple(out)


_OTHER_PREFIXES = ("R", "E", "*", "A", "M", "N", "#")
# The common, well-formed T line; anything else goes through the checks that name the problem.
_T_LINE = re.compile(r"(T[^\t]*)\t([^\t ]+) (\d+ \d+(?:;\d+ \d+)*)\t(.*)\Z", re.DOTALL | re.ASCII)


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
        fast = _T_LINE.match(line)
        if fast is not None:
            ident, type_name, spec, text = fast.groups()
            fragments = tuple(
                (int(a), int(b)) for a, b in (part.split(" ") for part in spec.split(";"))
            )
            if all(a <= b for a, b in fragments):
                entities.append(BratEntity(ident, type_name, fragments, text, number))
                continues_entity = True
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


def read_brat_zip(path: str | Path, stems: Iterable[str] | None = None) -> dict[str, BratDocument]:
    """Brat documents of a zip (stem -> document), all or only ``stems``, in stem order.

    Members are read in binary and decoded as UTF-8 without newline translation. Errors name
    ``<zip file name>:<member>`` and the line. Parsed documents are cached per process (keyed by
    the zip's path, size and mtime), so asking for a split reads only that split's members.
    """
    p = Path(path)
    key = version_key(p)
    index = _zip_index(key)
    wanted = sorted(index) if stems is None else list(stems)
    out = {}
    for stem in wanted:
        if stem not in index:
            raise InputError(f"document {stem!r} is not in {p.name}", path=p)
        out[stem] = _zip_document(key, stem)
    return out


def zip_stems(path: str | Path) -> list[str]:
    """Sorted stems of the brat documents (``.txt`` members) of a zip."""
    return sorted(_zip_index(version_key(path)))


@functools.lru_cache(maxsize=4)
def _zip_index(version: FileVersion) -> dict[str, tuple[str, str]]:
    """stem -> (txt member, ann member) for every ``.txt`` member of the zip."""
    path = version[0]
    zip_name = Path(path).name
    try:
        with zipfile.ZipFile(path) as archive:
            names = [n for n in archive.namelist() if not n.endswith("/")]
    except zipfile.BadZipFile as exc:
        raise InputError(f"not a zip file: {exc}", path=path) from None
    present = set(names)
    index = {}
    for name in names:
        member = PurePosixPath(name)
        if member.suffix != ".txt":
            continue
        ann = str(member.with_suffix(".ann"))
        if ann not in present:
            raise InputError(f"{member.name} has no .ann file", path=f"{zip_name}:{name}")
        index[member.stem] = (name, ann)
    return index


@functools.lru_cache(maxsize=8192)
def _zip_document(version: FileVersion, stem: str) -> BratDocument:
    txt_member, ann_member = _zip_index(version)[stem]
    zip_name = Path(version[0]).name
    txt_where, ann_where = f"{zip_name}:{txt_member}", f"{zip_name}:{ann_member}"
    text = _decode(_read_member(version, txt_member, txt_where), txt_where)
    entities = parse_ann(
        _decode(_read_member(version, ann_member, ann_where), ann_where), ann_where
    )
    return BratDocument(stem, text, tuple(entities))


def _read_member(version: FileVersion, member: str, where: str) -> bytes:
    """A member's bytes; a damaged member (bad CRC, bad deflate data) is an InputError."""
    try:
        return _open_zip(version).read(member)
    except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
        raise InputError(f"damaged zip member: {exc}", path=where) from None


@functools.lru_cache(maxsize=4)
def _open_zip(version: FileVersion) -> zipfile.ZipFile:
    """A process-wide open handle per zip version: re-reading the central directory of a
    4,000-member archive for every document would dominate the load time."""
    return zipfile.ZipFile(version[0])
