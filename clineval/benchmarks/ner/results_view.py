"""NER's results in the Python API: its metrics as a type checker sees them (the rule is in
clineval.benchmarks.results_view) and its long form, one row per span."""

from __future__ import annotations

from typing import Any

from clineval.benchmarks.results_view import MetricsView


class NerMetricsView(MetricsView):
    """The metrics of an `ner:*` task: `RunResult.metrics_as(task, NerMetricsView)`."""

    token_macro_f1: float | None
    span_partial_f1: float | None
    span_exact_f1: float | None
    token_macro_precision: float | None
    token_macro_recall: float | None
    span_partial_precision: float | None
    span_partial_recall: float | None
    span_exact_precision: float | None
    span_exact_recall: float | None
    n_documents: int | None
    n_gold_spans: int | None
    n_pred_spans: int | None
    missing_predictions: int | None
    token_macro_f1_ci: tuple[float, float] | None
    span_partial_f1_ci: tuple[float, float] | None
    span_exact_f1_ci: tuple[float, float] | None
    token_macro_precision_ci: tuple[float, float] | None
    token_macro_recall_ci: tuple[float, float] | None
    span_partial_precision_ci: tuple[float, float] | None
    span_partial_recall_ci: tuple[float, float] | None
    span_exact_precision_ci: tuple[float, float] | None
    span_exact_recall_ci: tuple[float, float] | None
    per_type: dict[str, Any]


def long_rows(sample: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per span of a document's samples.jsonl row: gold and predicted, with the text
    it covers and whether the other side has the same span (offsets and type)."""
    text = sample.get("text") or ""
    sides = {
        side: [tuple(span) for span in sample.get(side) or [] if len(span) == 3]
        for side in ("gold", "pred")
    }
    other = {"gold": set(sides["pred"]), "pred": set(sides["gold"])}
    return [
        {
            "id": sample.get("id"),
            "source": side,
            "start": start,
            "end": end,
            "type": kind,
            "mention": text[start:end] if isinstance(start, int) and isinstance(end, int) else "",
            "exact_match": (start, end, kind) in other[side],
        }
        for side, spans in sides.items()
        for start, end, kind in spans
    ]
