"""`predictions:FILE` for TCM-SD: JSON Lines `{"id": "<user_id>", "label": "<syndrome>"}`.

Validated strictly, because a silently skipped line would change the score: bad JSON, a
missing or non-string field, an id that is not in the split, or an id given twice is an
InputError naming the file and line. A label outside the 148 is allowed (`null` too): it is
stored as given and scored as invalid, never mapped onto a label.
"""

from __future__ import annotations

from pathlib import Path

from clineval.errors import InputError
from clineval.jsonl import iter_json_objects


def read_predictions(path: Path, known_ids: set[str]) -> dict[str, str | None]:
    """user_id -> predicted label (verbatim), for every line of the file."""
    out: dict[str, str | None] = {}
    first_line: dict[str, int] = {}
    for lineno, row in iter_json_objects(path, what="predictions file"):
        if "id" not in row or "label" not in row:
            raise InputError('expected the keys "id" and "label"', path=path, line=lineno)
        raw_id, label = row["id"], row["label"]
        if isinstance(raw_id, bool) or not isinstance(raw_id, str | int):
            raise InputError('"id" must be a string', path=path, line=lineno)
        if label is not None and not isinstance(label, str):
            raise InputError('"label" must be a string or null', path=path, line=lineno)
        sample_id = str(raw_id)
        if sample_id not in known_ids:
            raise InputError(f"unknown id {sample_id!r} (not in the split)", path=path, line=lineno)
        if sample_id in out:
            raise InputError(
                f"id {sample_id!r} given twice (first on line {first_line[sample_id]})",
                path=path,
                line=lineno,
            )
        out[sample_id] = label
        first_line[sample_id] = lineno
    return out
