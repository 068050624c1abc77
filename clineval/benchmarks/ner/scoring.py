"""NER results and per-document sample rows from gold and predicted spans (no I/O, no model).

Turns the metric functions' outputs into the shape of results.json[task] and samples.jsonl:
the three corpus scores with precision and recall, `per_type` {type: {token, partial, exact}},
corpus counts, and for each document its gold, prediction and per-document counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from clineval.benchmarks.ner.records import NerDocument, Span
from clineval.benchmarks.ner.span_f1 import SpanCounts, classify_document, error_counts, span_f1
from clineval.benchmarks.ner.token_f1 import TokenF1Result, token_macro_f1

MODEL_TOKENS_SUFFIX = "_model_tokens"


def _span_score(counts: SpanCounts) -> dict[str, Any]:
    return {
        "precision": counts.precision,
        "recall": counts.recall,
        "f1": counts.f1,
        "support": counts.possible,
        "correct": counts.correct,
        "incorrect": counts.incorrect,
        "missed": counts.missed,
        "spurious": counts.spurious,
    }


def _span_doc(counts: SpanCounts) -> dict[str, int]:
    return {
        "correct": counts.correct,
        "incorrect": counts.incorrect,
        "missed": counts.missed,
        "spurious": counts.spurious,
    }


def _token_macro(name: str, result: TokenF1Result, suffix: str = "") -> dict[str, float]:
    base = name.removesuffix("_f1")
    return {
        f"{name}{suffix}": result.macro_f1,
        f"{base}_precision{suffix}": result.macro_precision,
        f"{base}_recall{suffix}": result.macro_recall,
    }


def score_documents(
    documents: Sequence[NerDocument],
    predictions: Sequence[Sequence[Span]],
    types: Sequence[str],
    model_tokens: Sequence[Sequence[tuple[int, int]]] | None = None,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(metrics for results.json, one sample row per document).

    `model_tokens`, one list of (start, end) per document, adds the token metric over a model's
    own tokenizer under names ending in `_model_tokens` (NCER's option for subword models);
    the primary `token_macro_f1` always uses the benchmark's regex tokens.
    """
    texts = [doc.text for doc in documents]
    gold = [doc.entities for doc in documents]
    token = token_macro_f1(texts, gold, predictions, types)
    spans = span_f1(gold, predictions, types)
    partial, exact = spans.partial, spans.exact
    metrics: dict[str, Any] = {
        **_token_macro("token_macro_f1", token),
        "span_partial_f1": partial.total.f1,
        "span_partial_precision": partial.total.precision,
        "span_partial_recall": partial.total.recall,
        "span_exact_f1": exact.total.f1,
        "span_exact_precision": exact.total.precision,
        "span_exact_recall": exact.total.recall,
    }
    model_token: TokenF1Result | None = None
    if model_tokens is not None:
        offsets = [
            ([s for s, _ in doc_tokens], [e for _, e in doc_tokens]) for doc_tokens in model_tokens
        ]
        model_token = token_macro_f1(texts, gold, predictions, types, token_offsets=offsets)
        metrics.update(_token_macro("token_macro_f1", model_token, MODEL_TOKENS_SUFFIX))
    per_type: dict[str, Any] = {}
    for name in types:
        entry: dict[str, Any] = {
            "token": token.per_type[name].as_dict(),
            "partial": _span_score(partial.per_type[name]),
            "exact": _span_score(exact.per_type[name]),
        }
        if model_token is not None:
            entry["token" + MODEL_TOKENS_SUFFIX] = model_token.per_type[name].as_dict()
        per_type[name] = entry
    metrics["per_type"] = per_type
    # One classification of span errors (SemEval-2013 as nervaluate counts them) for
    # results.json and the report's error table, matrix, examples and CSV alike.
    errors = error_counts(
        [o for g, p in zip(gold, predictions, strict=True) for o in classify_document(g, p, types)],
        types,
    )
    metrics["span_errors"] = errors["total"]
    for name in types:
        per_type[name]["errors"] = errors["per_type"][name]
    metrics["span_partial_counts"] = _span_doc(partial.total)
    metrics["span_exact_counts"] = _span_doc(exact.total)
    metrics["n_documents"] = len(documents)
    metrics["n_gold_spans"] = sum(len(g) for g in gold)
    metrics["n_pred_spans"] = sum(len(p) for p in predictions)
    metrics["n_tokens"] = token.n_tokens
    samples = [
        {
            "id": doc.id,
            "text": doc.text,
            "gold": [[s.start, s.end, s.type] for s in doc.entities],
            "pred": [[s.start, s.end, s.type] for s in pred],
            "scores": {
                "token": token.doc_counts(i),
                "partial": _span_doc(partial.doc(i)),
                "exact": _span_doc(exact.doc(i)),
            },
        }
        for i, (doc, pred) in enumerate(zip(documents, predictions, strict=True))
    ]
    return metrics, samples
