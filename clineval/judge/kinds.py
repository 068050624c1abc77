"""Verdict kinds: what a judge is asked to decide and how its reply is read.

- `Binary`: met / not met, the JSON field `criteria_met` (the rubric judge; judge/parse.py reads
  it, guarded against quoted answers).
- `Categorical`: one label of a fixed set, such as a pairwise judge's A / B / tie (MT-bench's
  `[[A]]`, `[[B]]`, `[[C]]`) or Arena-Hard's five levels `[[A>>B]]` .. `[[B>>A]]`.
- `Graded`: a number on a scale (MedHELM's jury: 1 to 5).

A categorical or graded verdict is read either from a typed JSON field of the reply (`field`:
the whole reply, else the last fenced or bare JSON object holding the field) or from a verdict
pattern (a regex whose first group is the verdict) with a named match rule:
  priority  the kind's labels checked in their order, the first one found anywhere wins
            (MT-bench: `[[A]]` before `[[B]]` before `[[C]]`)
  first     the earliest match in the reply
  last      the latest match in the reply (Arena-Hard: the judge's final word)
Before a pattern is searched, a leading <think> block is dropped and everything the judge
copied from the answers is blanked out (the delimited answer blocks of the prompt, and every
verbatim copy of an answer line that holds a match), so an answer that writes `[[A]]` cannot
decide its own verdict. No verdict -> None: the caller re-asks, then records a judge_error.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

from clineval.jsonio import JsonProblem, parse_json
from clineval.judge.parse import (
    _FENCE,
    _json_objects,
    parse_verdict,
    strip_quoted_answer,
    strip_thinking,
)

MatchRule = Literal["priority", "first", "last"]
MATCH_RULES = ("priority", "first", "last")
_NUMBER = r"-?\d+(?:\.\d+)?"


@dataclass(frozen=True)
class Reading:
    """A verdict read from a reply: `value` (bool, label or number), the judge's
    `explanation` when it gave one, and how it was read (`method`)."""

    value: bool | str | float
    explanation: str
    method: str


def _blank_quotes(
    text: str, answers: Sequence[str], delimiters: tuple[str, str] | None, pattern: re.Pattern[str]
) -> str:
    text = strip_quoted_answer(strip_thinking(text), None, delimiters)
    lines = {
        line.strip()
        for answer in answers
        for line in answer.splitlines()
        if line.strip() and pattern.search(line)
    }
    for line in sorted(lines, key=len, reverse=True):
        text = text.replace(line, " ")
    return text


def _field_value(text: str, name: str) -> tuple[Any, str, str] | None:
    """(value, explanation, method) of the field `name` in the reply's JSON, or None."""
    stripped = strip_thinking(text).strip()
    try:
        whole = parse_json(stripped)
    except JsonProblem:
        whole = None
    candidates: list[tuple[Any, str]] = [(whole, "json")]
    fenced = [o for block in _FENCE.findall(stripped) for o in _json_objects(block)]
    candidates += [(o, "fenced") for o in reversed(fenced)]
    candidates += [(o, "bare") for o in reversed(_json_objects(stripped))]
    for obj, method in candidates:
        if isinstance(obj, dict) and name in obj:
            explanation = obj.get("explanation", "")
            return obj[name], explanation if isinstance(explanation, str) else "", method
    return None


@dataclass(frozen=True)
class Binary:
    """Met / not met (`criteria_met`), the rubric judge's verdict."""

    name: Literal["binary"] = "binary"
    field: str = "criteria_met"

    def read(
        self, text: str, answers: Sequence[str], delimiters: tuple[str, str] | None
    ) -> Reading | None:
        # one answer slot (the rubric prompt): exactly judge.parse's reading
        verdict = parse_verdict(text, answers[0] if len(answers) == 1 else None, delimiters)
        if verdict is None and len(answers) > 1:
            cleaned = text
            for answer in answers:
                cleaned = strip_quoted_answer(cleaned, answer, None)
            verdict = parse_verdict(cleaned, None, delimiters)
        return (
            None if verdict is None else Reading(verdict.met, verdict.explanation, verdict.method)
        )

    def schema(self) -> str | None:
        return None  # judge.prompt's VERDICT_SCHEMA, the rubric path's

    def field_schema(self) -> dict[str, Any]:
        return {"type": "boolean"}


@dataclass(frozen=True)
class Categorical:
    """One of `labels`. `pattern` (a regex, first group the label; default `[[LABEL]]` for
    each label) with its `match` rule, or a JSON `field` holding the label. `tie` names the
    label a split panel gives (None: a split panel is no verdict)."""

    labels: tuple[str, ...]
    pattern: str | None = None
    match: MatchRule = "priority"
    field: str | None = None
    tie: str | None = None
    name: Literal["categorical"] = "categorical"

    def __post_init__(self) -> None:
        if len(set(self.labels)) != len(self.labels) or len(self.labels) < 2:
            raise ValueError(f"a categorical verdict needs distinct labels: {self.labels}")
        if self.match not in MATCH_RULES:
            raise ValueError(f"unknown match rule {self.match!r} (known: {MATCH_RULES})")
        if self.tie is not None and self.tie not in self.labels:
            raise ValueError(f"the tie label {self.tie!r} is not one of {self.labels}")
        if self.pattern is not None and self.field is not None:
            raise ValueError("a verdict is read from a pattern or from a JSON field, not both")

    @cached_property
    def regex(self) -> re.Pattern[str]:
        if self.pattern is not None:
            return re.compile(self.pattern)
        alternatives = "|".join(re.escape(label) for label in self.labels)
        return re.compile(r"\[\[(" + alternatives + r")\]\]")

    def read(
        self, text: str, answers: Sequence[str], delimiters: tuple[str, str] | None
    ) -> Reading | None:
        if self.field is not None:
            found = _field_value(text, self.field)
            if found is None or not isinstance(found[0], str):
                return None
            label = found[0].strip()
            return Reading(label, found[1], found[2]) if label in self.labels else None
        cleaned = _blank_quotes(text, answers, delimiters, self.regex)
        hits = [(m.start(), m.group(1)) for m in self.regex.finditer(cleaned)]
        hits = [(at, label) for at, label in hits if label in self.labels]
        if not hits:
            return None
        if self.match == "priority":
            found_labels = {label for _, label in hits}
            label = next(label for label in self.labels if label in found_labels)
        else:
            label = hits[0][1] if self.match == "first" else hits[-1][1]
        # the whole reply is the judge's reasoning: kept as its explanation
        return Reading(label, strip_thinking(text).strip(), "pattern")

    def schema(self) -> str | None:
        if self.field is None:
            return None
        return _object_schema(self.field, {"type": "string", "enum": list(self.labels)})

    def field_schema(self) -> dict[str, Any]:
        return {"type": "string"}


@dataclass(frozen=True)
class Graded:
    """A number from `low` to `high` (`integer`: whole numbers only), from a JSON `field`
    or a `pattern` (default `[[N]]`) with its `match` rule."""

    low: float = 1
    high: float = 5
    integer: bool = True
    pattern: str | None = None
    match: MatchRule = "last"
    field: str | None = None
    name: Literal["graded"] = "graded"

    def __post_init__(self) -> None:
        if not self.low < self.high:
            raise ValueError(f"a graded verdict needs low < high: {self.low}, {self.high}")
        if self.match not in MATCH_RULES or self.match == "priority":
            raise ValueError(f"a graded verdict's match rule is first or last, not {self.match!r}")
        if self.pattern is not None and self.field is not None:
            raise ValueError("a verdict is read from a pattern or from a JSON field, not both")

    @cached_property
    def regex(self) -> re.Pattern[str]:
        return re.compile(self.pattern or r"\[\[(" + _NUMBER + r")\]\]")

    def _grade(self, value: Any) -> float | None:
        if isinstance(value, bool):
            return None
        if isinstance(value, str):
            try:
                value = float(value.strip())
            except ValueError:
                return None
        if not isinstance(value, int | float) or not math.isfinite(value):
            return None
        if self.integer and float(value) != int(value):
            return None
        return float(value) if self.low <= value <= self.high else None

    def read(
        self, text: str, answers: Sequence[str], delimiters: tuple[str, str] | None
    ) -> Reading | None:
        if self.field is not None:
            found = _field_value(text, self.field)
            grade = None if found is None else self._grade(found[0])
            return None if grade is None or found is None else Reading(grade, found[1], found[2])
        cleaned = _blank_quotes(text, answers, delimiters, self.regex)
        hits = [m.group(1) for m in self.regex.finditer(cleaned)]
        if not hits:
            return None
        grade = self._grade(hits[0] if self.match == "first" else hits[-1])
        return None if grade is None else Reading(grade, strip_thinking(text).strip(), "pattern")

    def schema(self) -> str | None:
        if self.field is None:
            return None
        number = {"type": "integer" if self.integer else "number"}
        return _object_schema(self.field, {**number, "minimum": self.low, "maximum": self.high})

    def field_schema(self) -> dict[str, Any]:
        return {"type": "integer" if self.integer else "number"}


VerdictKind = Binary | Categorical | Graded
BINARY = Binary()


def _object_schema(name: str, value: dict[str, Any]) -> str:
    schema = {
        "type": "object",
        "properties": {"explanation": {"type": "string"}, name: value},
        "required": ["explanation", name],
        "additionalProperties": False,
    }
    return json.dumps(schema, ensure_ascii=False)


# MT-bench's pairwise verdicts: the labels checked in this order anywhere in the reply, C a tie.
MT_BENCH_PAIRWISE = Categorical(("A", "B", "C"), match="priority", tie="C")
# Arena-Hard's five levels, the judge's last one counting.
ARENA_HARD_PAIRWISE = Categorical(
    ("A>>B", "A>B", "A=B", "B>A", "B>>A"),
    pattern=r"\[\[([AB<>=]+)\]\]",
    match="last",
    tie="A=B",
)
