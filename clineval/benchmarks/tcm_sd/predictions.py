"""`predictions:FILE` for TCM-SD: JSON Lines `{"id": "<user_id>", "label": "<syndrome>"}`.

Validated strictly, because a silently skipped line would change the score: bad JSON, a
missing or non-string field, an id that is not in the split, or an id given twice is an
InputError naming the file and line. A label outside the 148 is allowed (`null` too): it is
stored as given and scored as invalid, never mapped onto a label.
"""

from __future__ import annotations

from pathlib import Path

from clineval.benchmarks.kit import read_predictions as read_keyed


def _label_check(label: object) -> str | None:
    return None if label is None or isinstance(label, str) else '"label" must be a string or null'


def read_predictions(path: Path, known_ids: set[str]) -> dict[str, str | None]:
    """user_id -> predicted label (verbatim), for every line of the file (the kit's reader of
    a predictions file keyed by id)."""
    return read_keyed(path, known_ids, "label", _label_check)
