"""NER section: per-type P/R/F1 and error examples in context (FP, misses, boundary, type).

The error classes are for reading, not scoring (the metrics are the task's): a predicted span
that overlaps no gold span is a false positive; a gold span no prediction overlaps is a miss;
an overlapping prediction with the same type but other offsets is a boundary error; one with
another type (same offsets or not) is a type error.
"""

from __future__ import annotations

import random
from typing import Any

from clineval.benchmarks.ner import METRICS
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
    ("fp", "False positives"),
    ("miss", "Misses"),
    ("boundary", "Boundary errors"),
    ("type", "Type errors"),
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


def classify(gold: list[Span], pred: list[Span]) -> list[tuple[str, Span, Span | None]]:
    """(kind, span, the gold span it was compared with) for every error of one document."""
    errors: list[tuple[str, Span, Span | None]] = []
    gold_set = set(gold)
    for p in pred:
        if p in gold_set:
            continue
        overlapping = [g for g in gold if g[0] < p[1] and p[0] < g[1]]
        if not overlapping:
            errors.append(("fp", p, None))
            continue
        same_type = [g for g in overlapping if g[2] == p[2]]
        if same_type:
            errors.append(("boundary", p, same_type[0]))
        else:
            errors.append(("type", p, overlapping[0]))
    for g in gold:
        if not any(p[0] < g[1] and g[0] < p[1] for p in pred):
            errors.append(("miss", g, None))
    return errors


def _example(doc_id: str, text: str, kind: str, span: Span, other: Span | None) -> dict[str, Any]:
    start, end = span[0], span[1]
    if other is not None:  # show the union of both spans, so the boundary is visible
        start, end = min(start, other[0]), max(end, other[1])
    lo, hi = max(0, start - CONTEXT_CHARS), min(len(text), end + CONTEXT_CHARS)
    if kind == "fp":
        note = f"predicted {span[2]}, no gold entity here"
    elif kind == "miss":
        note = f"gold {span[2]} «{text[span[0] : span[1]]}» not found"
    elif kind == "boundary" and other is not None:
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


def error_counts_block(types: list[str], found: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Errors of each kind per entity type (a type error counts under the predicted type)."""
    counts = {t: dict.fromkeys((k for k, _ in KINDS), 0) for t in types}
    for kind, _ in KINDS:
        for item in found[kind]:
            counts.setdefault(item["span"][2], dict.fromkeys((k for k, _ in KINDS), 0))[kind] += 1
    rows = [
        [t, *(f"{counts[t][k]:,}" for k, _ in KINDS), f"{sum(counts[t].values()):,}"]
        for t in counts
    ]
    totals = [sum(counts[t][k] for t in counts) for k, _ in KINDS]
    rows.append(["all types", *(f"{n:,}" for n in totals), f"{sum(totals):,}"])
    return table_block(
        "Errors by kind and entity type",
        ["type", *(title for _, title in KINDS), "all errors"],
        rows,
        note="false positives and type errors are counted under the predicted type, misses "
        "and boundary errors under the gold type",
    )


def confusion(gold: list[Span], pred: list[Span]) -> dict[tuple[str, str], int]:
    """(gold type, predicted type) counts of one document: an exact or overlapping pair as
    `classify` pairs them, a miss as (type, none), a false positive as (none, type)."""
    counts: dict[tuple[str, str], int] = {}

    def add(g: str, p: str) -> None:
        counts[(g, p)] = counts.get((g, p), 0) + 1

    gold_set = set(gold)
    for p in pred:
        if p in gold_set:
            add(p[2], p[2])
    for kind, span, other in classify(gold, pred):
        if kind == "fp":
            add(NONE, span[2])
        elif kind == "miss":
            add(span[2], NONE)
        elif other is not None:
            add(other[2], span[2])
    return counts


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
        note="spans paired by overlap; (none): a miss (gold row) or a false positive (gold (none))",
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
    table_rows = []
    for row in samples:
        text = str(row.get("text", ""))
        doc_id = str(row.get("id", ""))
        gold, pred = spans_of(row.get("gold")), spans_of(row.get("pred"))
        errors = classify(gold, pred) if text else []
        kinds: dict[str, int] = {}
        for kind, span, other in errors:
            kinds[kind] = kinds.get(kind, 0) + 1
            found[kind].append({"doc": doc_id, "span": span, "other": other, "text": text})
        for pair, n in confusion(gold, pred).items():
            pairs[pair] = pairs.get(pair, 0) + n
        exact = len(set(gold) & set(pred))
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
        blocks.append(error_counts_block(types, found))
        if len(types) > 1:
            blocks.append(confusion_block(types, pairs))
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
                "other_type",
                "other_start",
                "other_end",
            ],
            [_error_row(item, kind) for kind, _ in KINDS for item in found[kind]],
        )
    )
    columns = [
        {"key": "id", "label": "document"},
        {"key": "n_gold", "label": "gold spans"},
        {"key": "n_pred", "label": "predicted"},
        {"key": "exact", "label": "exact matches"},
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
        "other_type": "" if other is None else other[2],
        "other_start": "" if other is None else other[0],
        "other_end": "" if other is None else other[1],
    }
