"""A judged task's records: the one module that writes and reads them.

A judged task keeps, in its run store, one record of kind `verdict:LABEL` per (sample,
criterion) and judge, keyed by `verdict_key(sample_id, criterion_id)` (`VerdictRecord`), and
one record of kind `answer` per sample, the candidate's reply (`AnswerRecord`); its sample rows
in samples.jsonl list verdicts as `VerdictRow`s. Every other module goes through these types,
so the stored dicts' fields are named here only.

Two shapes are stored: a judge's (`VerdictRecord.judged`: how the verdict was read, the calls
it took, the response format, token usage, the judge and the prompt version it was made under)
and an imported one (`VerdictRecord.imported`: a verdicts file's row, with its `source`).
`met` None is a judge_error: no verdict, never "not met". A categorical or graded judge's
verdict is its `grade` (a label or a number; judge/kinds.py), `met` then None: a record with
neither is a judge_error. A binary record holds no `grade` key, as before there were kinds.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

ANSWER_KIND = "answer"
VERDICT_KIND_PREFIX = "verdict:"


def verdict_kind(judge_label: str) -> str:
    """The store's record kind of one judge's verdicts."""
    return VERDICT_KIND_PREFIX + judge_label


def judge_of_kind(kind: str) -> str | None:
    """The judge label of a verdict record kind (None for any other kind)."""
    return kind[len(VERDICT_KIND_PREFIX) :] if kind.startswith(VERDICT_KIND_PREFIX) else None


def verdict_key(sample_id: str, criterion_id: str) -> str:
    """The store key of one (sample, criterion): JSON, so no separator can collide with an id."""
    return json.dumps([sample_id, criterion_id], ensure_ascii=False)


def _keys(value: Any) -> tuple[str, ...]:
    return tuple(k for k in value if isinstance(k, str)) if isinstance(value, list) else ()


def _int_usage(value: Any) -> dict[str, int] | None:
    if not isinstance(value, dict):
        return None
    return {str(k): v for k, v in value.items() if isinstance(v, int) and not isinstance(v, bool)}


@dataclass(frozen=True)
class VerdictRecord:
    """One stored verdict of one judge on one criterion: `met` (None for a judge error, with
    `error` saying why) and the judge's `explanation`. `clineval/judge/verdict.py` is the
    one reader and writer of its stored form."""

    met: bool | None  # None: judge_error
    explanation: str = ""
    error: str | None = None
    method: str | None = None  # how the verdict was read from the reply (judge.parse)
    attempts: int = 0  # chat calls it took (re-asks and format fallbacks included)
    format: str | None = None  # response_format level of the last call
    usage: dict[str, int] | None = None
    judge: str | None = None
    prompt: str | None = None  # the judge prompt's version it was made under
    source: str | None = None  # an imported record: the verdicts file it came from
    grade: str | float | None = None  # a categorical label or a graded number
    # the run store's keys of the calls it took (a task's usage is read from those calls);
    # empty in records stored before records named their calls
    calls: tuple[str, ...] = ()

    @classmethod
    def judged(
        cls,
        *,
        met: bool | None,
        grade: str | float | None = None,
        explanation: str,
        error: str | None,
        method: str | None,
        attempts: int,
        format: str | None,
        usage: dict[str, int],
        judge: str,
        prompt: str,
        calls: tuple[str, ...] = (),
    ) -> VerdictRecord:
        return cls(
            met,
            explanation,
            error,
            method,
            attempts,
            format,
            dict(usage),
            judge,
            prompt,
            None,
            grade,
            calls,
        )

    @classmethod
    def imported(
        cls, met: bool | None, explanation: str, error: str | None, source: str
    ) -> VerdictRecord:
        return cls(met, explanation, error, source=source)

    def to_stored(self) -> dict[str, Any]:
        """The dict the run store holds (its field order is part of nothing but kept stable)."""
        base: dict[str, Any] = {
            "met": self.met,
            "explanation": self.explanation,
            "error": self.error,
        }
        if self.grade is not None:
            base["grade"] = self.grade
        if self.source is not None:
            return {**base, "source": self.source}
        return {
            **base,
            "method": self.method,
            "attempts": self.attempts,
            "format": self.format,
            "usage": self.usage if self.usage is not None else {},
            "judge": self.judge,
            "prompt": self.prompt,
            **({"calls": list(self.calls)} if self.calls else {}),
        }

    @classmethod
    def from_stored(cls, value: Any) -> VerdictRecord | None:
        """A stored record, or None when there is none (or it is not a verdict record)."""
        if not isinstance(value, dict):
            return None
        met = value.get("met")
        explanation = value.get("explanation", "")
        attempts = value.get("attempts", 0)
        grade = value.get("grade")

        def text(name: str) -> str | None:
            field = value.get(name)
            return field if isinstance(field, str) else None

        return cls(
            met=met if isinstance(met, bool) else None,
            explanation=explanation if isinstance(explanation, str) else str(explanation),
            error=text("error"),
            method=text("method"),
            attempts=attempts if isinstance(attempts, int) else 0,
            format=text("format"),
            usage=_int_usage(value.get("usage")),
            judge=text("judge"),
            prompt=text("prompt"),
            source=text("source"),
            grade=_grade(grade),
            calls=_keys(value.get("calls")),
        )

    @property
    def has_verdict(self) -> bool:
        return self.met is not None or self.grade is not None

    @property
    def value(self) -> float:
        """1.0 met, 0.0 not met, a graded number, nan no verdict (or a categorical label:
        judge.ensemble's encoding)."""
        if self.met is not None:
            return 1.0 if self.met else 0.0
        return float(self.grade) if isinstance(self.grade, int | float) else math.nan

    def usable(self, prompt_version: str) -> bool:
        """A verdict that needs no new judge call: it has one, made under this prompt version
        (one made under another, e.g. an edited --judge-prompt file, is made again; the
        version is also in every call's cache key)."""
        return self.has_verdict and self.prompt == prompt_version


def _grade(value: Any) -> str | float | None:
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def read_verdicts(records: dict[str, Any]) -> dict[str, VerdictRecord]:
    """A judge's stored records (RunStore.records of its kind), typed; others left out."""
    out: dict[str, VerdictRecord] = {}
    for key, value in records.items():
        record = VerdictRecord.from_stored(value)
        if record is not None:
            out[key] = record
    return out


@dataclass(frozen=True)
class VerdictRow:
    """One verdict as a samples.jsonl row shows it (a sample row's "verdicts" list): written
    by the judged tasks' evaluate steps and read by reports and exports, here only. A row
    written by an older clineval may say "criteria_met" for "met"; anything that is not
    true or false reads as no verdict."""

    criterion_id: str
    criterion: str
    met: bool | None
    explanation: str
    judge: str
    error: str | None = None
    points: float | None = None  # the criterion's weight, when the benchmark gives one
    tags: tuple[str, ...] = ()  # the criterion's tags, when the benchmark gives some
    grade: str | float | None = None  # a categorical or graded verdict

    @staticmethod
    def row_of(
        criterion_id: str,
        criterion: str,
        judge: str,
        record: VerdictRecord | None,
        points: float | None = None,
        tags: tuple[str, ...] = (),
    ) -> dict[str, Any]:
        """The sample row of one judge's stored record (None: nothing stored), with the
        criterion's `points` and `tags` where the benchmark gives them: `to_row` of the
        VerdictRow those make, built without the object between (this runs per criterion of
        every evaluation of a judged task)."""
        row: dict[str, Any] = {"criterion_id": criterion_id, "criterion": criterion}
        if points is not None:
            row["points"] = points
        if tags:
            row["tags"] = list(tags)
        if record is None:
            row.update(met=None, explanation="", judge=judge)
            return row
        row["met"] = record.met
        if record.grade is not None:
            row["grade"] = record.grade
        row["explanation"] = record.explanation
        row["judge"] = judge
        if record.error:
            row["error"] = record.error
        return row

    def to_row(self) -> dict[str, Any]:
        return {
            "criterion_id": self.criterion_id,
            "criterion": self.criterion,
            **({"points": self.points} if self.points is not None else {}),
            **({"tags": list(self.tags)} if self.tags else {}),
            "met": self.met,
            **({"grade": self.grade} if self.grade is not None else {}),
            "explanation": self.explanation,
            "judge": self.judge,
            **({"error": self.error} if self.error else {}),
        }

    @classmethod
    def from_row(cls, value: Any, index: int = 0) -> VerdictRow | None:
        """A row read back (None when it is not an object); a row without a criterion id
        gets its position."""
        if not isinstance(value, dict):
            return None
        met = value.get("met", value.get("criteria_met"))
        points = value.get("points")
        criterion_id = value.get("criterion_id")
        tags = value.get("tags")

        def text(name: str) -> str:
            field = value.get(name)
            return "" if field is None else str(field)

        return cls(
            criterion_id=str(index) if criterion_id is None else str(criterion_id),
            criterion=text("criterion"),
            met=met if isinstance(met, bool) else None,
            explanation=text("explanation"),
            judge=text("judge"),
            error=text("error") or None,
            points=float(points)
            if isinstance(points, int | float) and not isinstance(points, bool)
            else None,
            tags=tuple(str(t) for t in tags) if isinstance(tags, list) else (),
            grade=_grade(value.get("grade")),
        )


def read_verdict_rows(row: Any) -> list[VerdictRow]:
    """The verdict rows of one samples.jsonl row (none when it has no list of them)."""
    values = row.get("verdicts") if isinstance(row, dict) else None
    if not isinstance(values, list):
        return []
    return [v for i, value in enumerate(values) if (v := VerdictRow.from_row(value, i)) is not None]


@dataclass(frozen=True)
class AnswerRecord:
    """The candidate's answer to one sample (kind `answer`): made by a call (with its usage
    and finish reason), failed (text None, the error), or given by a predictions file."""

    model: str
    text: str | None
    error: str | None = None
    called: bool = False  # made by a chat call: its usage and finish reason are kept
    usage: dict[str, Any] | None = None  # as the reply reported it (nested details included)
    finish_reason: str | None = None
    call: str | None = None  # the run store's key of its call (None in older records)

    def to_stored(self) -> dict[str, Any]:
        base: dict[str, Any] = {"model": self.model, "text": self.text, "error": self.error}
        if not self.called:
            return base
        called = {**base, "usage": self.usage, "finish_reason": self.finish_reason}
        return called if self.call is None else {**called, "call": self.call}

    @classmethod
    def from_stored(cls, value: Any) -> AnswerRecord | None:
        if not isinstance(value, dict):
            return None
        text, error, usage = value.get("text"), value.get("error"), value.get("usage")
        finish, call = value.get("finish_reason"), value.get("call")
        return cls(
            model=str(value.get("model")),
            text=text if isinstance(text, str) else None,
            error=error if isinstance(error, str) else None,
            called="usage" in value,
            usage=usage if isinstance(usage, dict) else None,
            finish_reason=finish if isinstance(finish, str) else None,
            call=call if isinstance(call, str) else None,
        )


def read_answers(records: dict[str, Any]) -> dict[str, AnswerRecord]:
    """The stored answers of a task (RunStore.records of kind `answer`), typed."""
    out: dict[str, AnswerRecord] = {}
    for key, value in records.items():
        record = AnswerRecord.from_stored(value)
        if record is not None:
            out[key] = record
    return out


def as_id(value: Any) -> str | None:
    """An item or criterion id as releases write it, a string or an integer, as text; None
    for anything else (a bool, an empty string), which the caller reports as invalid."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str) and value.strip():
        return value
    return None
