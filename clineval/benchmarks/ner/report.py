"""NER section: per-type P/R/F1, error counts, a gold x predicted matrix, error examples.

Errors are classified once, as the span metrics classify them (SemEval-2013's categories as
nervaluate 0.1.8 assigns them, `span_f1.classify_document`): a prediction with the wrong type
(same offsets or overlapping) is `incorrect`, one with the right type and other offsets
`partial`, one that takes no gold span `spurious`, a gold span nothing took `missed`. The count
table, the matrix, the examples and the CSV all come from that one classification, and their
totals are results.json's `span_errors`.
"""

from __future__ import annotations

import random
from typing import Any

from clineval.benchmarks.ner import METRICS
from clineval.benchmarks.ner.records import Span as NerSpan
from clineval.benchmarks.ner.span_f1 import ERROR_KINDS, SpanOutcome, classify_document
from clineval.report import plots
from clineval.report.rundata import RunData, finite_number
from clineval.report.sections_common import (
    SampleTable,
    base_section,
    download_block,
    examples_block,
    filter_values,
    spans_part,
    table_block,
)

Span = tuple[int, int, str]
KINDS = (
    ("incorrect", "Incorrect (wrong type)"),
    ("partial", "Partial (right type, other offsets)"),
    ("missed", "Missed"),
    ("spurious", "Spurious"),
)
EXAMPLES_PER_KIND = 25
CONTEXT_CHARS = 70
SCHEMES = (("token", "token"), ("partial", "span partial"), ("exact", "span exact"))


def spans_of(value: Any) -> list[Span]:
    """[[s, e, type], ...] or [{"start", "end", "type"}, ...] -> (s, e, type) tuples."""
    out: list[Span] = []
    if not isinstance(value, list):
        return out
    for item in value:
        if isinstance(item, dict):
            s, e, t = item.get("start"), item.get("end"), item.get("type", item.get("label"))
        elif isinstance(item, list | tuple) and len(item) >= 3:
            s, e, t = item[0], item[1], item[2]
        else:
            continue
        if isinstance(s, int) and isinstance(e, int):
            out.append((s, e, str(t)))
    return out


def classify(
    gold: list[Span], pred: list[Span], types: list[str]
) -> list[tuple[str, Span, Span | None]]:
    """(kind, span, the gold span it was paired with) for every outcome of one document that
    is not correct: the predicted span for incorrect / partial / spurious, the gold span for
    missed (whose pair is None), as `classify_document` pairs them."""
    return [
        (o.kind, _tuple(o.pred if o.pred is not None else o.gold), _maybe(o))
        for o in _outcomes(gold, pred, types)
        if o.kind != "correct"
    ]


def _outcomes(gold: list[Span], pred: list[Span], types: list[str]) -> list[SpanOutcome]:
    return classify_document(
        [NerSpan(*g) for g in gold], [NerSpan(*p) for p in pred], types or {g[2] for g in gold}
    )


def _tuple(span: NerSpan | None) -> Span:
    assert span is not None
    return (span.start, span.end, span.type)


def _maybe(outcome: SpanOutcome) -> Span | None:
    if outcome.pred is None or outcome.gold is None:
        return None
    return _tuple(outcome.gold)


def _example(doc_id: str, text: str, kind: str, span: Span, other: Span | None) -> dict[str, Any]:
    start, end = span[0], span[1]
    if other is not None:  # show the union of both spans, so the boundary is visible
        start, end = min(start, other[0]), max(end, other[1])
    lo, hi = max(0, start - CONTEXT_CHARS), min(len(text), end + CONTEXT_CHARS)
    if kind == "spurious":
        note = f"predicted {span[2]}, no gold entity taken"
    elif kind == "missed":
        note = f"gold {span[2]} «{text[span[0] : span[1]]}» not found"
    elif kind == "partial" and other is not None:
        note = (
            f"predicted «{text[span[0] : span[1]]}», gold «{text[other[0] : other[1]]}» ({span[2]})"
        )
    elif other is not None:
        note = f"predicted {span[2]}, gold {other[2]} «{text[other[0] : other[1]]}»"
    else:
        note = ""
    return {
        "doc": doc_id,
        "before": ("…" if lo > 0 else "") + text[lo:start],
        "mark": text[start:end],
        "after": text[end:hi] + ("…" if hi < len(text) else ""),
        "note": note,
    }


def _per_type_block(per_type: dict[str, Any]) -> list[dict[str, Any]]:
    types = [t for t, v in per_type.items() if isinstance(v, dict)]
    if not types:
        return []
    nested = any(isinstance(per_type[t].get(s), dict) for t in types for s, _ in SCHEMES)
    header = ["type"]
    rows: list[list[str]] = [[t] for t in types]
    series: dict[str, list[float]] = {}
    schemes = [(s, label) for s, label in SCHEMES if any(s in per_type[t] for t in types)]
    if not nested:
        schemes = [("", "")]
    for scheme, label in schemes:
        for stat in ("precision", "recall", "f1"):
            header.append(f"{label} {stat[0].upper() if stat != 'f1' else 'F1'}".strip())
        f1s = []
        for i, t in enumerate(types):
            entry = per_type[t].get(scheme, {}) if scheme else per_type[t]
            entry = entry if isinstance(entry, dict) else {}
            for stat in ("precision", "recall", "f1"):
                value = finite_number(entry.get(stat))
                rows[i].append("" if value is None else f"{value:.4f}")
            f1s.append(finite_number(entry.get("f1")) or 0.0)
        series[f"{label} F1".strip()] = f1s
    supports = []
    for t in types:
        holder = per_type[t].get(schemes[0][0], {}) if schemes[0][0] else per_type[t]
        supports.append(holder.get("support") if isinstance(holder, dict) else None)
    if any(s is not None for s in supports):
        header.append("support")
        for i, s in enumerate(supports):
            rows[i].append("" if s is None else str(s))
    svg = plots.grouped_bars(types, series, "F1 per entity type", "F1")
    return [
        {"kind": "plot", "title": "Per-type F1", "svg": svg, "small": True},
        table_block("Per-type precision / recall / F1", header, rows),
    ]


NONE = "(none)"


def error_counts_block(types: list[str], counts: dict[str, dict[str, int]]) -> dict[str, Any]:
    """Outcomes of each kind per entity type, as nervaluate books them per type."""
    rows = [
        [
            t,
            *(f"{counts[t][k]:,}" for k in ERROR_KINDS),
            f"{sum(counts[t][k] for k, _ in KINDS):,}",
        ]
        for t in counts
    ]
    totals = [sum(counts[t][k] for t in counts) for k in ERROR_KINDS]
    errors = sum(sum(counts[t][k] for t in counts) for k, _ in KINDS)
    rows.append(["all types", *(f"{n:,}" for n in totals), f"{errors:,}"])
    return table_block(
        "Span outcomes by kind and entity type",
        ["type", *ERROR_KINDS, "all errors"],
        rows,
        note="SemEval-2013's categories as nervaluate 0.1.8 assigns them: correct (offsets "
        "and type), incorrect (wrong type, same or overlapping offsets), partial (right type, "
        "other overlapping offsets), missed, spurious; counted under the gold span's type, "
        "spurious under the predicted type. correct + partial is span_partial_f1's correct, "
        "correct alone span_exact_f1's",
    )


def confusion(gold: list[Span], pred: list[Span], types: list[str]) -> dict[tuple[str, str], int]:
    """(gold type, predicted type) counts of one document, spans paired as the span metrics
    pair them: a correct, partial or incorrect prediction with its gold span, a miss as
    (type, none), a spurious prediction as (none, type)."""
    counts: dict[tuple[str, str], int] = {}
    for o in _outcomes(gold, pred, types):
        counts[_pair(o)] = counts.get(_pair(o), 0) + 1
    return counts


def _pair(o: SpanOutcome) -> tuple[str, str]:
    """(gold type, predicted type) of an outcome, NONE for the side it lacks."""
    return (
        o.gold.type if o.gold is not None else NONE,
        o.pred.type if o.pred is not None else NONE,
    )


def confusion_block(types: list[str], counts: dict[tuple[str, str], int]) -> dict[str, Any]:
    labels = [*types, *sorted({t for pair in counts for t in pair} - {*types, NONE}), NONE]
    rows = [
        [f"gold {g}", *(f"{counts.get((g, p), 0):,}" for p in labels)]
        for g in labels
        if g != NONE or any(counts.get((g, p)) for p in labels)
    ]
    return table_block(
        "Gold x predicted type",
        ["", *(f"predicted {p}" for p in labels)],
        rows,
        sortable=False,
        note="spans paired as the span metrics pair them (an exact gold span first, else the "
        "first overlapping gold span not yet taken); (none): a missed gold span (gold row) or a "
        "spurious prediction (gold (none))",
    )


def build(run: RunData, task: str) -> dict[str, Any]:
    """The task's report section (the declaration's `report_section`)."""
    seed = int(run.manifest.get("seed") or 0)
    metrics = run.results.get(task, {})
    samples = run.samples.get(task, [])
    section = base_section(run, task, "ner", METRICS)
    blocks: list[dict[str, Any]] = section["blocks"]
    per_type = metrics.get("per_type")
    types = (
        [t for t, v in per_type.items() if isinstance(v, dict)]
        if isinstance(per_type, dict)
        else []
    )
    found: dict[str, list[dict[str, Any]]] = {k: [] for k, _ in KINDS}
    pairs: dict[tuple[str, str], int] = {}
    counts: dict[str, dict[str, int]] = {t: dict.fromkeys(ERROR_KINDS, 0) for t in types}
    table_rows = []
    for row in samples:
        text = str(row.get("text", ""))
        doc_id = str(row.get("id", ""))
        gold, pred = spans_of(row.get("gold")), spans_of(row.get("pred"))
        outcomes = _outcomes(gold, pred, types)
        kinds: dict[str, int] = {}
        for o in outcomes:
            counts.setdefault(o.type, dict.fromkeys(ERROR_KINDS, 0))[o.kind] += 1
            pairs[_pair(o)] = pairs.get(_pair(o), 0) + 1
            if o.kind == "correct":
                continue
            kinds[o.kind] = kinds.get(o.kind, 0) + 1
            span = _tuple(o.pred if o.pred is not None else o.gold)
            found[o.kind].append({"doc": doc_id, "span": span, "other": _maybe(o), "text": text})
        exact = sum(o.kind == "correct" for o in outcomes)
        table_rows.append(
            {
                "id": doc_id,
                "n_gold": len(gold),
                "n_pred": len(pred),
                "exact": exact,
                "errors": sum(kinds.values()),
                "has_errors": "yes" if kinds else "no",
                "kinds": ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())),
                "text": text,
                "gold": [list(s) for s in gold],
                "pred": [list(s) for s in pred],
            }
        )
    if samples:
        # what kind of error, for which type: first, since it says where to look
        blocks.append(error_counts_block(types, counts))
        if len(counts) > 1:
            blocks.append(confusion_block(list(counts), pairs))
    if isinstance(per_type, dict):
        blocks.extend(_per_type_block(per_type))
    if not samples:
        return section
    rng = random.Random(seed)
    groups = []
    for kind, title in KINDS:
        items = found[kind]
        chosen = sorted(rng.sample(range(len(items)), min(EXAMPLES_PER_KIND, len(items))))
        groups.append(
            {
                "kind": kind,
                "title": title,
                "count": len(items),
                "examples": [
                    _example(
                        items[i]["doc"], items[i]["text"], kind, items[i]["span"], items[i]["other"]
                    )
                    for i in chosen
                ],
            }
        )
    blocks.append(examples_block("Error examples in context", groups))
    blocks.append(
        download_block(
            "Download every error (CSV)",
            f"{task.replace(':', '-')}-errors.csv",
            [
                "doc",
                "kind",
                "type",
                "start",
                "end",
                "text",
                "gold_type",
                "gold_start",
                "gold_end",
            ],
            [_error_row(item, kind) for kind, _ in KINDS for item in found[kind]],
        )
    )
    columns = [
        {"key": "id", "label": "document"},
        {"key": "n_gold", "label": "gold spans"},
        {"key": "n_pred", "label": "predicted"},
        {"key": "exact", "label": "correct"},
        {"key": "errors", "label": "errors"},
        {"key": "kinds", "label": "error kinds"},
    ]
    section["table"] = SampleTable(
        element_id=f"{section['anchor']}-samples",
        columns=columns,
        filters=[
            {
                "key": "has_errors",
                "label": "has errors",
                "values": filter_values(table_rows, "has_errors"),
            }
        ],
        search=["text"],
        detail=[
            spans_part("Document {id} — gold", "text", "gold", "gold"),
            spans_part("Predicted", "text", "pred", "pred"),
        ],
        rows=table_rows,
        title="Documents",
    )
    return section


def _error_row(item: dict[str, Any], kind: str) -> dict[str, Any]:
    span, other, text = item["span"], item["other"], item["text"]
    return {
        "doc": item["doc"],
        "kind": kind,
        "type": span[2],
        "start": span[0],
        "end": span[1],
        "text": text[span[0] : span[1]],
        "gold_type": "" if other is None else other[2],
        "gold_start": "" if other is None else other[0],
        "gold_end": "" if other is None else other[1],
    }
