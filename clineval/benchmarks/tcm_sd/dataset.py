"""Readers for the TCM-SD release: the 148-label vocabulary, the record files, the knowledge corpus.

Record files are JSON Lines (`train.json`, `dev.json`, `test.json`, `test_no_answer.json`) with
the keys `user_id, lcd_id, lcd_name, syndrome, chief_complaint, description, detection,
norm_syndrome`. The five published sample records name three of them differently
(`example_id`, `medical_history`, `FDMR`); both spellings load through the same path.
The project's synthetic fixture uses the official keys plus `synthetic: true`.
"""

from __future__ import annotations

import gzip
import hashlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clineval.errors import InputError
from clineval.jsonio import loads_input
from clineval.jsonl import iter_json_objects
from clineval.messages import clip

SPLITS = ("train", "dev", "test")
TEXT_FIELDS = ("chief_complaint", "description", "detection")
REQUIRED_FIELDS = ("user_id", "lcd_id", "lcd_name", "syndrome", *TEXT_FIELDS)
LABEL_FIELD = "norm_syndrome"
# Sample-file spelling -> official spelling (docs/data-sources.md, "TCM-SD fields").
FIELD_ALIASES = {"example_id": "user_id", "medical_history": "description", "FDMR": "detection"}
EXPECTED_LABELS = 148

VOCAB_NAME = "syndrome_vocab.txt"
NORM_TABLE_NAMES = ("syndrome.utf8.csv", "syndrome.txt")
KNOWLEDGE_NAMES = ("syndrome_knowledge_fixed.json.gz", "syndrome_knowledge.json")


@dataclass(frozen=True)
class TcmRecord:
    user_id: str
    lcd_id: str
    lcd_name: str
    syndrome: str
    chief_complaint: str
    description: str
    detection: str
    label: str | None  # norm_syndrome; None in test_no_answer.json
    synthetic: bool = False

    def content_key(self) -> str:
        """A digest of the clinical text: equal for exact duplicates, whatever their ids."""
        blob = "\x1f".join((self.chief_complaint, self.description, self.detection))
        return hashlib.sha1(blob.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class KnowledgeEntry:
    name: str
    definition: str
    typical_performance: str
    common_disease: str


def read_vocab(path: Path) -> list[str]:
    """The labels in file order (the class index). The file uses CRLF line ends."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise InputError("label vocabulary not found", path=path) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"label vocabulary is not UTF-8 text ({exc.reason})", path=path) from None
    except OSError as exc:
        raise InputError(f"cannot read the label vocabulary: {exc.strerror}", path=path) from None
    labels: list[str] = []
    seen: dict[str, int] = {}
    for lineno, line in enumerate(text.splitlines(), start=1):
        label = line.strip()
        if not label:
            continue
        if label in seen:
            message = f"label {clip(label)} repeats line {seen[label]}"
            raise InputError(message, path=path, line=lineno)
        seen[label] = lineno
        labels.append(label)
    if not labels:
        raise InputError("label vocabulary is empty", path=path)
    return labels


def _field(row: dict[str, Any], name: str, path: Path, lineno: int) -> str:
    value = row.get(name)
    if value is None:
        raise InputError(f"missing field {name!r}", path=path, line=lineno)
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise InputError(f"field {name!r} must be a string", path=path, line=lineno)
    return str(value)


def parse_record(
    row: dict[str, Any],
    labels: set[str],
    path: Path,
    lineno: int,
    require_label: bool = True,
) -> TcmRecord:
    """One record from a decoded JSON object; errors name the file and line."""
    row = {FIELD_ALIASES.get(k, k): v for k, v in row.items()}
    values = {name: _field(row, name, path, lineno) for name in REQUIRED_FIELDS}
    label: str | None = None
    if LABEL_FIELD in row or require_label:
        label = _field(row, LABEL_FIELD, path, lineno)
        if label not in labels:
            raise InputError(
                f"norm_syndrome {clip(label)} is not one of the {len(labels)} labels",
                path=path,
                line=lineno,
            )
    return TcmRecord(**values, label=label, synthetic=bool(row.get("synthetic", False)))


def read_records(path: Path, labels: list[str], require_label: bool = True) -> list[TcmRecord]:
    """All records of one JSON Lines file, in file order."""
    label_set = set(labels)
    records: list[TcmRecord] = []
    for lineno, row in iter_json_objects(path, what="data file"):
        records.append(parse_record(row, label_set, path, lineno, require_label))
    return records


def read_knowledge(path: Path) -> dict[str, KnowledgeEntry]:
    """The knowledge corpus: a JSON array (`*_fixed.json[.gz]`) or JSON Lines (the original)."""
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8") as fh:
            text = fh.read()
    except FileNotFoundError:
        raise InputError("knowledge corpus not found", path=path) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"knowledge corpus is not UTF-8 text ({exc.reason})", path=path) from None
    except (OSError, EOFError) as exc:  # a directory, a bad or truncated gzip file
        reason = getattr(exc, "strerror", None) or exc
        raise InputError(f"cannot read the knowledge corpus: {reason}", path=path) from None
    # (line of the entry, or None inside a JSON array, where entries are counted instead; entry)
    rows: list[tuple[int | None, Any]]
    stripped = text.lstrip()
    if stripped.startswith("["):
        array = loads_input(text, path)
        if not isinstance(array, list):
            raise InputError("expected a JSON array of entries", path=path)
        rows = [(None, row) for row in array]
    else:
        rows = []
        for lineno, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                rows.append((lineno, loads_input(line, path, lineno)))
    entries: dict[str, KnowledgeEntry] = {}
    for i, (entry_line, row) in enumerate(rows, start=1):
        if not isinstance(row, dict) or not isinstance(row.get("Name"), str):
            where = "entry" if entry_line is not None else f"entry {i} of the array"
            raise InputError(f"{where} has no Name", path=path, line=entry_line)
        disease = row.get("Common_disease", row.get("Common_isease", ""))  # original typo
        entries[row["Name"].strip()] = KnowledgeEntry(
            name=row["Name"].strip(),
            definition=str(row.get("Definition") or ""),
            typical_performance=str(row.get("Typical_performance") or ""),
            common_disease=str(disease or ""),
        )
    return entries


# ---- where the files are -------------------------------------------------------------------


def _search_dirs(root: Path) -> list[Path]:
    return [root / "tcm-sd", root / "tcm-sd" / "zy-bert", root / "tcm-sd" / "knowledge", root]


def find_file(roots: list[Path], names: tuple[str, ...]) -> Path | None:
    """The first existing `name` in the usual folders of the given data roots."""
    for root in roots:
        for folder in _search_dirs(root):
            for name in names:
                if (folder / name).is_file():
                    return folder / name
    return None


def find_split(root: Path, split: str) -> tuple[Path | None, bool]:
    """(path, synthetic) of a split: the official `{split}.json` first, then the fixture's
    `{split}.synthetic.json` (which only `clineval data synth` writes)."""
    for folder in (root / "tcm-sd", root):
        if (folder / f"{split}.json").is_file():
            return folder / f"{split}.json", False
    for folder in (root / "tcm-sd", root):
        if (folder / f"{split}.synthetic.json").is_file():
            return folder / f"{split}.synthetic.json", True
    return None, False


# ---- duplicates ----------------------------------------------------------------------------


@dataclass(frozen=True)
class DuplicateReport:
    """Overlap of an evaluation split with train, and repeats inside the split."""

    shared_ids_with_train: int
    shared_content_with_train: int
    overlapping_with_train: int  # either of the two above: what --dedupe removes
    repeated_ids_within: int  # extra copies of a user_id inside the split
    repeated_content_within: int  # extra exact-duplicate copies inside the split

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


def overlaps_train(records: list[TcmRecord], train: list[TcmRecord]) -> list[bool]:
    train_ids = {r.user_id for r in train}
    train_content = {r.content_key() for r in train}
    return [r.user_id in train_ids or r.content_key() in train_content for r in records]


def duplicate_report(records: list[TcmRecord], train: list[TcmRecord]) -> DuplicateReport:
    train_ids = {r.user_id for r in train}
    train_content = {r.content_key() for r in train}
    keys = [r.content_key() for r in records]
    ids = Counter(r.user_id for r in records)
    contents = Counter(keys)
    return DuplicateReport(
        shared_ids_with_train=sum(r.user_id in train_ids for r in records),
        shared_content_with_train=sum(k in train_content for k in keys),
        overlapping_with_train=sum(overlaps_train(records, train)),
        repeated_ids_within=sum(c - 1 for c in ids.values()),
        repeated_content_within=sum(c - 1 for c in contents.values()),
    )


def sample_keys(records: list[TcmRecord]) -> list[str]:
    """A unique key per record: the user_id, with `#2`, `#3`... on repeats of the same id
    (the release has exact-duplicate rows; each is scored, as the official evaluation does)."""
    seen: Counter[str] = Counter()
    keys = []
    for record in records:
        seen[record.user_id] += 1
        n = seen[record.user_id]
        keys.append(record.user_id if n == 1 else f"{record.user_id}#{n}")
    return keys
