"""ClinConsensus cases in the official release schema, and verdict files, with validation.

One JSON object a line:
  {case_id, difficulty, task, task_labels[], subject, subject_labels[], user_role,
   clinical_context, user_request, rubrics: [{criterion_id, criterion}, ...]}  (30 rubrics)

Every problem is an InputError naming the file and the 1-based line, so a user can fix the line.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clineval.errors import InputError
from clineval.jsonl import iter_json_objects
from clineval.judge.verdict import as_id, verdict_key

RUBRICS_PER_CASE = 30
OFFICIAL_RELATIVE_PATH = "clinconsensus/clinconsensus_low.jsonl"
FIXTURE_NAME = "clinconsensus_fixture_cases.jsonl"
FIXTURE_PREFIX = "fixture-"

_STRING_FIELDS = (
    "case_id",
    "difficulty",
    "task",
    "subject",
    "user_role",
    "clinical_context",
    "user_request",
)
_LIST_FIELDS = ("task_labels", "subject_labels")


@dataclass(frozen=True)
class Rubric:
    criterion_id: str
    criterion: str


@dataclass(frozen=True)
class Case:
    case_id: str
    difficulty: str
    task: str
    task_labels: tuple[str, ...]
    subject: str
    subject_labels: tuple[str, ...]
    user_role: str
    clinical_context: str
    user_request: str
    rubrics: tuple[Rubric, ...]

    @property
    def query(self) -> str:
        """What the candidate model sees (the paper's input construction)."""
        return self.clinical_context + "\n\n" + self.user_request


def fixture_path() -> Path:
    """The fixture cases shipped in the package (written by the project, not benchmark data)."""
    return Path(__file__).resolve().parent / "resources" / FIXTURE_NAME


def is_fixture_file(path: Path) -> bool:
    return "fixture" in path.name.lower()


def _parse_rubrics(raw: Any, path: Path, line: int) -> tuple[Rubric, ...]:
    if not isinstance(raw, list):
        raise InputError("field 'rubrics' must be a list", path=path, line=line)
    if len(raw) != RUBRICS_PER_CASE:
        raise InputError(
            f"expected {RUBRICS_PER_CASE} rubrics, found {len(raw)}", path=path, line=line
        )
    out: list[Rubric] = []
    seen: set[str] = set()
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            raise InputError(f"rubrics[{i}] is not an object", path=path, line=line)
        cid = as_id(item.get("criterion_id"))
        text = item.get("criterion")
        if cid is None:
            raise InputError(f"rubrics[{i}] has no valid 'criterion_id'", path=path, line=line)
        if not isinstance(text, str) or not text.strip():
            raise InputError(f"rubrics[{i}] has no 'criterion' text", path=path, line=line)
        if cid in seen:
            raise InputError(f"duplicate criterion_id {cid!r}", path=path, line=line)
        seen.add(cid)
        out.append(Rubric(cid, text))
    return tuple(out)


def parse_case(row: dict[str, Any], path: Path, line: int) -> Case:
    """One validated case from one decoded JSON line."""
    values: dict[str, str] = {}
    for name in _STRING_FIELDS:
        value = row.get(name)
        if name == "case_id":
            value = as_id(value)
        if not isinstance(value, str) or (name != "clinical_context" and not value.strip()):
            raise InputError(f"missing or invalid field {name!r}", path=path, line=line)
        values[name] = value
    lists: dict[str, tuple[str, ...]] = {}
    for name in _LIST_FIELDS:
        value = row.get(name)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise InputError(f"field {name!r} must be a list of strings", path=path, line=line)
        lists[name] = tuple(value)
    return Case(
        case_id=values["case_id"],
        difficulty=values["difficulty"],
        task=values["task"],
        task_labels=lists["task_labels"],
        subject=values["subject"],
        subject_labels=lists["subject_labels"],
        user_role=values["user_role"],
        clinical_context=values["clinical_context"],
        user_request=values["user_request"],
        rubrics=_parse_rubrics(row.get("rubrics"), path, line),
    )


def load_cases(path: str | Path) -> list[Case]:
    """All cases of a file in file order; raises InputError(path, line) on the first bad line."""
    path = Path(path)
    cases: list[Case] = []
    first_line: dict[str, int] = {}
    for lineno, row in iter_json_objects(path):
        case = parse_case(row, path, lineno)
        if case.case_id in first_line:
            raise InputError(
                f"duplicate case_id {case.case_id!r} (first on line {first_line[case.case_id]})",
                path=path,
                line=lineno,
            )
        first_line[case.case_id] = lineno
        cases.append(case)
    if not cases:
        raise InputError("no cases in file", path=path)
    return cases


def load_verdicts(path: str | Path, cases: Iterable[Case]) -> dict[str, bool | None]:
    """A verdicts file {case_id, criterion_id, criteria_met: true|false|null} -> {key: met}.

    null means the judge gave no verdict (a judge_error). Every row must name a known case and
    one of its criteria, at most once. Criteria with no row are simply absent (the caller counts
    them as judge errors, never as "not met").
    """
    path = Path(path)
    known = {c.case_id: {r.criterion_id for r in c.rubrics} for c in cases}
    out: dict[str, bool | None] = {}
    for lineno, row in iter_json_objects(path):
        case_id = as_id(row.get("case_id"))
        criterion_id = as_id(row.get("criterion_id"))
        if case_id is None or criterion_id is None:
            raise InputError("needs 'case_id' and 'criterion_id'", path=path, line=lineno)
        if "criteria_met" not in row:
            raise InputError("missing field 'criteria_met'", path=path, line=lineno)
        met = row["criteria_met"]
        if met is not None and not isinstance(met, bool):
            raise InputError("'criteria_met' must be true, false or null", path=path, line=lineno)
        if case_id not in known:
            raise InputError(f"unknown case_id {case_id!r}", path=path, line=lineno)
        if criterion_id not in known[case_id]:
            raise InputError(
                f"case {case_id!r} has no criterion_id {criterion_id!r}", path=path, line=lineno
            )
        key = verdict_key(case_id, criterion_id)
        if key in out:
            raise InputError(
                f"duplicate verdict for ({case_id!r}, {criterion_id!r})", path=path, line=lineno
            )
        out[key] = met
    return out
