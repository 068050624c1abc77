"""The human labels file of `clineval judge-agreement`: reading and checking it.

JSON Lines, one label per line: {"id": ITEM, "criterion": CRITERION, "rater": RATER,
"label": true/false or a number}. The names ClinConsensus's export used first are accepted in
their place: "case_id" for "id", "criterion_id" for "criterion", "labeler" for "rater",
"criteria_met" for "label" (one of each pair per line). A file holds one kind of label: binary
(true/false) or graded (numbers). Raters are named on every line or on none (then the file is
one unnamed rater): a file that names some would leave open whether the unnamed lines are one
more person. A rater may label only some items.

One rater labels a unit (item, criterion) once. A line repeating an earlier (rater, id,
criterion) with the same label is a copy (files joined twice): counted once and listed under
"duplicate_lines" ([line, first line] pairs). The same key with another label is an error
naming both lines: which one holds is not ours to guess.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clineval.errors import InputError
from clineval.jsonl import iter_json_objects
from clineval.judge.verdict import as_id, verdict_key

UNNAMED = "(unnamed)"  # the rater of a file that names none
BINARY, GRADED = "binary", "graded"
# the field's name, and the name accepted in its place
FIELDS = {"id": "case_id", "criterion": "criterion_id", "rater": "labeler", "label": "criteria_met"}


@dataclass
class Labels:
    """A labels file's labels, each (rater, unit) once."""

    kind: str  # BINARY or GRADED
    rows: list[tuple[str, float, str]]  # (verdict key, label: 1.0/0.0 or the number, rater)
    duplicate_lines: list[tuple[int, int]] = field(default_factory=list)  # (line, first line)
    named: bool = True  # raters named in the file (else one UNNAMED rater)


def _field(row: dict[str, Any], name: str, path: Path, lineno: int) -> tuple[str, Any]:
    """The field's name as the line spells it (for the error), and its value."""
    alias = FIELDS[name]
    if name in row and alias in row:
        raise InputError(f"give {name!r} or {alias!r}, not both", path=path, line=lineno)
    return (alias, row[alias]) if alias in row else (name, row.get(name))


def _rater(field: tuple[str, Any], path: Path, lineno: int) -> str | None:
    name, value = field
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        # str(42) and str(["a"]) would make up a name, and 1 and "1" would pass for one person.
        raise InputError(
            f"{name!r} must be a non-empty string (or left out)", path=path, line=lineno
        )
    return value


def _label(field: tuple[str, Any], path: Path, lineno: int) -> tuple[str, float]:
    name, value = field
    if isinstance(value, bool):
        return BINARY, 1.0 if value else 0.0
    if isinstance(value, int | float) and math.isfinite(value):
        return GRADED, float(value)
    raise InputError(f"{name!r} must be true or false, or a finite number", path=path, line=lineno)


def _shown(kind: str, value: float) -> str:
    if kind == BINARY:
        return "true" if value else "false"
    return f"{value:g}"


def read_labels(path: Path) -> Labels:
    """The labels of a file; every error names the file and line."""
    labels = Labels(kind="", rows=[])
    first: dict[tuple[str | None, str], tuple[int, float]] = {}  # (rater, key) -> (line, label)
    kind_line = named_line = 0
    named: bool | None = None
    # iter_json_objects numbers the file's own lines (blank ones included), as an editor does.
    for lineno, row in iter_json_objects(path, what="labels file"):
        item = as_id(_field(row, "id", path, lineno)[1])
        criterion = as_id(_field(row, "criterion", path, lineno)[1])
        if item is None or criterion is None:
            raise InputError(
                "needs 'id' and 'criterion' (or 'case_id' and 'criterion_id'): strings or integers",
                path=path,
                line=lineno,
            )
        kind, value = _label(_field(row, "label", path, lineno), path, lineno)
        rater = _rater(_field(row, "rater", path, lineno), path, lineno)
        if not labels.kind:
            labels.kind, kind_line = kind, lineno
        elif kind != labels.kind:
            raise InputError(
                f"a {kind} label here, {labels.kind} labels from line {kind_line}: "
                "one file holds one kind (true/false, or numbers)",
                path=path,
                line=lineno,
            )
        if named is None:
            named, named_line = rater is not None, lineno
        elif named != (rater is not None):
            raise InputError(
                f"the rater is {'named' if rater else 'left out'} here but "
                f"{'named' if named else 'left out'} on line {named_line}: "
                "name the rater on every line or on none",
                path=path,
                line=lineno,
            )
        key = verdict_key(item, criterion)
        seen = first.get((rater, key))
        if seen is None:
            first[(rater, key)] = (lineno, value)
            labels.rows.append((key, value, UNNAMED if rater is None else rater))
        elif seen[1] == value:
            labels.duplicate_lines.append((lineno, seen[0]))
        else:
            who = "the unnamed rater" if rater is None else f"rater {rater!r}"
            raise InputError(
                f"{who} labels item {item!r} criterion {criterion!r} "
                f"{_shown(kind, value)} here and {_shown(kind, seen[1])} on line {seen[0]}: "
                f"keep one of lines {seen[0]} and {lineno}",
                path=path,
                line=lineno,
            )
    if not labels.rows:
        raise InputError("no labels in file", path=path)
    labels.named = bool(named)
    return labels
