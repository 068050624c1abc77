"""Span metrics of NCER: partial match with type (`span_partial_f1`) and exact (`span_exact_f1`).

These reproduce nervaluate 0.1.8 (the version NCER pins) as NCER calls it: ``Evaluator(gold,
pred, tags=types).evaluate()`` with our exclusive `end` passed unchanged. Its `ent_type` scheme
is the partial metric and its `strict` scheme the exact one. The conventions kept on purpose
(docs/metrics.md, "Span partial F1 and span exact F1"):

* spans of types outside `types` are dropped, gold and predicted alike;
* `end` is read as inclusive, so spans that merely touch overlap;
* a prediction equal (start, end, type) to some gold span is correct, even if that gold span
  was already matched, and marks it matched;
* otherwise the prediction takes the FIRST gold span in list order that either has the same
  offsets (any type: "incorrect", matched or not) or overlaps it and is not yet matched (same
  type: correct for `ent_type`, incorrect for `strict`; other type: incorrect for both);
* "matched" is remembered by value, so identical gold duplicates are matched together;
* a prediction that finds nothing is spurious, an unmatched gold span missed;
* precision = correct / actual, recall = correct / possible, with actual = correct + incorrect
  + partial + spurious and possible = correct + incorrect + partial + missed, summed over
  documents (`partial` is always 0 in these two schemes);
* per type, a prediction is booked under the GOLD span's type when it met one, and under its own
  type when spurious (so per-type `actual` is not "predictions of that type").

The code is our own: one pass over each document's predictions with a set lookup for exact
matches, counting into integer arrays; no dicts per span and no copies per document.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from clineval.benchmarks.ner.records import Span

COUNT_FIELDS = ("correct", "incorrect", "partial", "missed", "spurious", "possible", "actual")

# Outcome columns counted per document and type; the two schemes are sums of these.
_EXACT = 0  # prediction identical to a gold span
_SAME_TYPE_OVERLAP = 1  # overlaps an unmatched gold span of its type (not identical)
_OTHER_TYPE = 2  # same offsets with another type, or overlap with another type
_SPURIOUS = 3
_MISSED = 4
_N_OUTCOMES = 5


@dataclass(frozen=True)
class SpanCounts:
    """nervaluate's counts for one scheme (corpus, one type, or one document) and its scores."""

    correct: int
    incorrect: int
    partial: int
    missed: int
    spurious: int

    @property
    def possible(self) -> int:
        return self.correct + self.incorrect + self.partial + self.missed

    @property
    def actual(self) -> int:
        return self.correct + self.incorrect + self.partial + self.spurious

    @property
    def precision(self) -> float:
        # nervaluate's formula for the partial/ent_type schemes; partial is 0 in ours.
        actual = self.actual
        return (self.correct + 0.5 * self.partial) / actual if actual > 0 else 0.0

    @property
    def recall(self) -> float:
        possible = self.possible
        return (self.correct + 0.5 * self.partial) / possible if possible > 0 else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r > 0 else 0.0

    def as_dict(self) -> dict[str, float | int]:
        out: dict[str, float | int] = {name: getattr(self, name) for name in COUNT_FIELDS}
        out.update(precision=self.precision, recall=self.recall, f1=self.f1)
        return out


@dataclass(frozen=True)
class SchemeResult:
    """One scheme over the corpus: total counts, per-type counts, per-document counts."""

    total: SpanCounts
    per_type: dict[str, SpanCounts]
    # (n_docs, 5): correct, incorrect, partial, missed, spurious of each document (all types).
    doc_counts: NDArray[np.int64]

    @property
    def f1(self) -> float:
        return self.total.f1

    def doc(self, doc: int) -> SpanCounts:
        return SpanCounts(*(int(v) for v in self.doc_counts[doc]))


@dataclass(frozen=True)
class SpanF1Result:
    """`partial` = nervaluate `ent_type` (span_partial_f1), `exact` = nervaluate `strict`."""

    types: tuple[str, ...]
    partial: SchemeResult
    exact: SchemeResult


def span_f1(
    gold: Sequence[Sequence[Span]],
    pred: Sequence[Sequence[Span]],
    types: Sequence[str],
) -> SpanF1Result:
    """Score predicted spans against gold spans, document by document (lists in corpus order)."""
    if len(gold) != len(pred):
        raise ValueError(f"{len(gold)} gold documents but {len(pred)} predicted documents")
    types = tuple(types)
    type_id = {t: k for k, t in enumerate(types)}
    if len(type_id) != len(types):
        raise ValueError(f"types must be distinct: {types}")
    n_types = len(types)
    rows = [_score_document(g, p, type_id, n_types) for g, p in zip(gold, pred, strict=True)]
    outcomes = np.array(rows, dtype=np.int64).reshape(len(gold), n_types, _N_OUTCOMES)
    return SpanF1Result(
        types=types,
        partial=_scheme(outcomes, types, same_type_overlap_correct=True),
        exact=_scheme(outcomes, types, same_type_overlap_correct=False),
    )


ERROR_KINDS = ("correct", "incorrect", "partial", "missed", "spurious")


@dataclass(frozen=True)
class SpanOutcome:
    """What became of one predicted span (or one missed gold span), in SemEval-2013's terms as
    nervaluate 0.1.8 assigns them: `correct` (scenario I: offsets and type), `incorrect` (the
    wrong type: IV with the gold span's offsets, VI overlapping it; `same_offsets` tells them
    apart), `partial` (V: the right type, other offsets overlapping), `spurious` (II: no gold
    span taken), `missed` (III: a gold span no prediction took). `gold` is the gold span the
    prediction was paired with (nervaluate's pairing), None for spurious; `pred` is None for
    missed. So correct = strict correct, correct + partial = ent_type correct, incorrect =
    ent_type incorrect, incorrect + partial = strict incorrect."""

    kind: str
    pred: Span | None
    gold: Span | None
    same_offsets: bool = False

    @property
    def type(self) -> str:
        """The type nervaluate books the outcome under: the gold span's, else the predicted."""
        span = self.gold if self.gold is not None else self.pred
        assert span is not None
        return span.type


def classify_document(
    gold: Sequence[Span], pred: Sequence[Span], types: Sequence[str] | set[str]
) -> list[SpanOutcome]:
    """Every predicted span's outcome in order, then every missed gold span's; spans of a type
    outside `types` are left out, gold and predicted alike (as nervaluate does)."""
    scored = set(types)
    golds = [s for s in gold if s.type in scored]
    gold_set = set(golds)
    matched: set[Span] = set()
    out: list[SpanOutcome] = []
    for span in pred:
        if span.type not in scored:
            continue
        if span in gold_set:
            matched.add(span)
            out.append(SpanOutcome("correct", span, span, True))
            continue
        start, end = span.start, span.end
        for g in golds:
            if g.start == start and g.end == end:  # same offsets, so another type (IV)
                matched.add(g)
                out.append(SpanOutcome("incorrect", span, g, True))
                break
            # Inclusive ends: [start, end] and [g.start, g.end] share a position (an inverted
            # span, end < start, is an empty range and overlaps nothing).
            if start <= g.end and g.start <= end and start <= end and g.start <= g.end:
                if g in matched:
                    continue
                matched.add(g)
                out.append(SpanOutcome("partial" if g.type == span.type else "incorrect", span, g))
                break
        else:
            out.append(SpanOutcome("spurious", span, None))
    out.extend(SpanOutcome("missed", None, g) for g in golds if g not in matched)
    return out


def error_counts(outcomes: Sequence[SpanOutcome], types: Sequence[str]) -> dict[str, Any]:
    """{"total": {kind: n}, "per_type": {type: {kind: n}}} over `ERROR_KINDS`, each outcome
    under `SpanOutcome.type` (nervaluate's per-type booking)."""
    per_type = {t: dict.fromkeys(ERROR_KINDS, 0) for t in types}
    for o in outcomes:
        per_type.setdefault(o.type, dict.fromkeys(ERROR_KINDS, 0))[o.kind] += 1
    total = {k: sum(row[k] for row in per_type.values()) for k in ERROR_KINDS}
    return {"total": total, "per_type": per_type}


def _score_document(
    gold: Sequence[Span], pred: Sequence[Span], type_id: dict[str, int], n_types: int
) -> list[int]:
    """Outcome counts of one document, flat: index = type * 5 + outcome."""
    counts = [0] * (n_types * _N_OUTCOMES)
    column = {
        "correct": _EXACT,
        "partial": _SAME_TYPE_OVERLAP,
        "incorrect": _OTHER_TYPE,
        "spurious": _SPURIOUS,
        "missed": _MISSED,
    }
    for outcome in classify_document(gold, pred, set(type_id)):
        counts[type_id[outcome.type] * _N_OUTCOMES + column[outcome.kind]] += 1
    return counts


def _scheme(
    outcomes: NDArray[np.int64], types: tuple[str, ...], same_type_overlap_correct: bool
) -> SchemeResult:
    exact = outcomes[..., _EXACT]
    overlap = outcomes[..., _SAME_TYPE_OVERLAP]
    other = outcomes[..., _OTHER_TYPE]
    correct = exact + overlap if same_type_overlap_correct else exact
    incorrect = other if same_type_overlap_correct else other + overlap
    zeros = np.zeros_like(correct)
    # (n_docs, n_types, 5) in SpanCounts field order
    table = np.stack(
        [correct, incorrect, zeros, outcomes[..., _MISSED], outcomes[..., _SPURIOUS]], axis=-1
    )
    by_type = table.sum(axis=0)
    per_type = {t: SpanCounts(*(int(v) for v in by_type[k])) for k, t in enumerate(types)}
    total = SpanCounts(*(int(v) for v in by_type.sum(axis=0)))
    return SchemeResult(total=total, per_type=per_type, doc_counts=table.sum(axis=1))
