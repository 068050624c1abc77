"""Verdict files of a ClinConsensus run: clineval's verdicts JSONL, or the authors' own
judgements file (`<model>_judge.json`), told apart by their first character.

The authors' format, as their README and scoring script (eval_cacs.py) define it:
  * one JSON list, one item (an object) per case of the cases file, in the cases file's order:
    the list has exactly as many items as the cases file has cases;
  * an item names its case by its first non-empty `case_id` or `id` (text, or a number written
    as text), else by a numeric `prompt_id` P meaning case "CC-" + P zero-padded to 4 digits,
    else by its position i (1-based) meaning "CC-" + i zero-padded to 4 digits;
  * its verdicts are the first of `criteria_results`, `rubric_results`, `rubric_judgments` that
    holds a list; each entry is an object whose `criteria_met` counts as met when it is true,
    one of the strings true / 1 / yes / met (any case, spaces around), or a non-zero number.
    The official script counts everything else as not met.

Where that reading loses information, clineval keeps its own rule: a missing or unreadable
`criteria_met` (null, "maybe", a list, ...) is a judge error, counted and reported, never a
silent "not met" (unless the run asks for --judge-errors-as-unmet, which is the official
behaviour). Written-out "not met" answers (false, 0, and the strings false / 0 / no / unmet /
not met) are verdicts. An entry that says its judge failed is a judge error whatever its
`criteria_met`: a non-empty `error` (how `clineval export` marks one, beside the
`criteria_met: false` the official script counts) or `parse_ok: false` (the official local
judge's unparsed reply).

Entries map to criteria by their `criterion_id` when every entry has one, else by position
(entry j is the case's criterion j). Shapes the official script would skip or miscount (an
item that is not an object, two items for one case, an entry that is not an object, more
entries than criteria) are one InputError naming the file and the item.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clineval.benchmarks.clinconsensus.cases import Case, load_verdicts
from clineval.errors import InputError
from clineval.jsonio import read_json_file
from clineval.judge.verdict import as_id, verdict_key

FORMAT_OFFICIAL = "clinconsensus-judgements"
FORMAT_JSONL = "verdicts-jsonl"
VERDICT_LIST_KEYS = ("criteria_results", "rubric_results", "rubric_judgments")
CASE_ID_KEYS = ("case_id", "id")
MET_WORDS = frozenset({"true", "1", "yes", "met"})
UNMET_WORDS = frozenset({"false", "0", "no", "unmet", "not met"})


def official_case_id(number: int) -> str:
    """The case id the official rules derive from a prompt_id or a 1-based position."""
    return f"CC-{number:04d}"


@dataclass(frozen=True)
class ImportedVerdicts:
    """What a verdicts file says: {verdict_key: met} (None = no verdict) and, for the keys
    without a verdict, why (for the stored record)."""

    format: str
    met: dict[str, bool | None]
    problems: dict[str, str] = field(default_factory=dict)
    explanations: dict[str, str] = field(default_factory=dict)


def first_character(path: Path) -> str:
    """The first non-blank character of a file ('' when it has none)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096)
    except FileNotFoundError:
        raise InputError("verdicts file not found", path=path) from None
    except OSError as exc:
        raise InputError(f"cannot read the verdicts file: {exc.strerror}", path=path) from None
    text = head.decode("utf-8-sig", errors="replace").lstrip()
    return text[:1]


def read_verdicts(path: str | Path, cases: Sequence[Case]) -> ImportedVerdicts:
    """A verdicts file of either format, validated against every case of the cases file."""
    path = Path(path)
    if path.is_dir():
        raise InputError("expected a verdicts file, got a directory", path=path)
    if first_character(path) == "[" or _one_json_document(path):
        return load_official_judgements(path, cases)
    return ImportedVerdicts(FORMAT_JSONL, load_verdicts(path, cases))


def _one_json_document(path: Path) -> bool:
    """A `.json` file holding one JSON value that is not a verdict row: meant as a judgements
    file (and refused as one, with the reason), not a verdicts JSONL of one line."""
    if path.suffix.lower() != ".json":
        return False
    try:
        value = read_json_file(path, "verdicts file")
    except InputError:
        return False  # several lines of JSONL, or bad text: the JSONL reader says where
    return not (isinstance(value, dict) and "criterion_id" in value)


def read_criteria_met(value: Any, present: bool = True) -> tuple[bool | None, str | None]:
    """(met, None) for a verdict, (None, why) for none. Met exactly when the official script
    counts it met; "not met" only for an answer that says so (see the module doc)."""
    if not present:
        return None, "no criteria_met"
    if isinstance(value, bool):
        return value, None
    if isinstance(value, str):
        word = value.strip().lower()
        if word in MET_WORDS:
            return True, None
        if word in UNMET_WORDS:
            return False, None
        return None, f"unreadable criteria_met {value[:40]!r}"
    if isinstance(value, int | float):
        if not math.isfinite(value):
            return None, f"unreadable criteria_met {value!r}"
        return bool(value), None
    if value is None:
        return None, "criteria_met is null"
    return None, f"unreadable criteria_met (a JSON {type(value).__name__})"


def _load_list(path: Path) -> list[Any]:
    data = read_json_file(path, "judgements file")
    if not isinstance(data, list):
        raise InputError("a judgements file is one JSON list (one item per case)", path=path)
    return data


def _text_id(value: Any) -> str | None:
    """An id as the official script reads it (str() of it, stripped), for text and integers;
    None when the field is absent or blank."""
    if value is None:
        return None
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return ""  # present but not an id: the caller refuses it


def resolve_case_id(item: dict[str, Any], index: int, where: str, path: Path) -> tuple[str, str]:
    """(case id, the field it came from) of the item at 0-based `index`, by the official rules."""
    for key in CASE_ID_KEYS:
        if key not in item:
            continue
        value = _text_id(item[key])
        if value == "":
            raise InputError(f"{where}: {key!r} is not an id: {item[key]!r:.60}", path=path)
        if value is not None:
            return value, key
    prompt_id = item.get("prompt_id")
    text = _text_id(prompt_id)
    if text and text.isdigit():
        return official_case_id(int(text)), "prompt_id"
    return official_case_id(index + 1), "position"


Read = tuple[bool | None, str | None, str]  # met, why there is no verdict, explanation


def _entry(entry: dict[str, Any]) -> Read:
    explanation = entry.get("explanation")
    text = explanation if isinstance(explanation, str) else ""
    error = entry.get("error")
    if isinstance(error, str) and error.strip():  # written by `clineval export`
        return None, f"judge error: {error.strip()[:120]}", text
    if entry.get("parse_ok") is False:  # the official local judge's unparsed reply
        return None, "the judge's reply was not parsed (parse_ok false)", text
    met, problem = read_criteria_met(entry.get("criteria_met"), "criteria_met" in entry)
    return met, problem, text


def _criteria(entries: list[Any], case: Case, where: str, path: Path) -> dict[str, Read]:
    """{criterion_id: (met, problem, explanation)} of one item's verdict entries."""
    for j, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise InputError(f"{where}: verdict entry {j + 1} is not an object", path=path)
    ids = [as_id(entry.get("criterion_id")) for entry in entries]
    known = [r.criterion_id for r in case.rubrics]
    out: dict[str, Read] = {}
    if entries and all(i is not None for i in ids):
        for j, (cid, entry) in enumerate(zip(ids, entries, strict=True)):
            assert cid is not None
            if cid not in known:
                raise InputError(
                    f"{where}: verdict entry {j + 1}: case {case.case_id!r} has no criterion_id "
                    f"{cid!r}",
                    path=path,
                )
            if cid in out:
                raise InputError(
                    f"{where}: verdict entry {j + 1}: second verdict for criterion {cid!r}",
                    path=path,
                )
            out[cid] = _entry(entry)
        return out
    if any(i is not None for i in ids):
        raise InputError(
            f"{where}: some verdict entries have a criterion_id and some do not (give it on "
            "every entry, or on none to match entries to criteria by position)",
            path=path,
        )
    if len(entries) > len(known):
        raise InputError(
            f"{where}: {len(entries)} verdict entries for {len(known)} criteria", path=path
        )
    for cid, entry in zip(known, entries, strict=False):
        out[cid] = _entry(entry)
    return out


def _verdict_entries(item: dict[str, Any], where: str, path: Path) -> list[Any]:
    for key in VERDICT_LIST_KEYS:
        value = item.get(key)
        if isinstance(value, list):
            return value
    raise InputError(
        f"{where}: no verdict list ({', '.join(VERDICT_LIST_KEYS)} holding a list)", path=path
    )


def load_official_judgements(path: str | Path, cases: Iterable[Case]) -> ImportedVerdicts:
    """The authors' judgements file, against the whole cases file (see the module doc)."""
    path = Path(path)
    all_cases = list(cases)
    items = _load_list(path)
    if len(items) != len(all_cases):
        raise InputError(
            f"{len(items)} item(s) for {len(all_cases)} case(s): a judgements file holds one "
            "item per case of the cases file, in its order",
            path=path,
        )
    by_id = {case.case_id: case for case in all_cases}
    first_item: dict[str, int] = {}
    met: dict[str, bool | None] = {}
    problems: dict[str, str] = {}
    explanations: dict[str, str] = {}
    for index, item in enumerate(items):
        where = f"item {index + 1}"
        if not isinstance(item, dict):
            raise InputError(f"{where} is not a JSON object", path=path)
        case_id, source = resolve_case_id(item, index, where, path)
        case = by_id.get(case_id)
        if case is None:
            raise InputError(
                f"{where}: case {case_id!r} (from its {source}) is not in the cases file",
                path=path,
            )
        if case_id in first_item:
            raise InputError(
                f"{where}: case {case_id!r} again (first in item {first_item[case_id]})",
                path=path,
            )
        first_item[case_id] = index + 1
        verdicts = _criteria(_verdict_entries(item, where, path), case, where, path)
        for rubric in case.rubrics:
            key = verdict_key(case_id, rubric.criterion_id)
            if rubric.criterion_id not in verdicts:
                continue  # absent: a judge error for the importer
            value, problem, explanation = verdicts[rubric.criterion_id]
            met[key] = value
            if problem is not None:
                problems[key] = f"{problem} ({where})"
            if explanation:
                explanations[key] = explanation
    return ImportedVerdicts(FORMAT_OFFICIAL, met, problems, explanations)
