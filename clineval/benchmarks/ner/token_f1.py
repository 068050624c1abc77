"""Token-level macro F1, the primary NCER metric (`token_macro_f1`; docs/metrics.md).

For each scored type L (O excluded), over all tokens of all documents: TP = pred L and gold L,
FP = pred L and gold not L, FN = gold L and pred not L. Per-type F1 = 2 TP / (2 TP + FP + FN)
(0 when undefined, like sklearn's ``zero_division=0``); the score is their unweighted mean, i.e.
sklearn ``classification_report(gold, pred, labels=types, zero_division=0)["macro avg"]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from clineval.benchmarks.ner.records import Span
from clineval.benchmarks.ner.tokens import (
    CorpusText,
    DocSpans,
    LabelSpace,
    TokenOffsets,
    corpus_tokens,
    flatten_spans,
    paint_char_labels,
    span_boundaries,
    token_majority_labels,
)


@dataclass(frozen=True)
class TypeScore:
    """Precision, recall, F1 of one type; `support` = gold tokens (or spans) of that type."""

    precision: float
    recall: float
    f1: float
    support: int
    tp: int
    fp: int
    fn: int

    def as_dict(self) -> dict[str, float | int]:
        return {
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "support": self.support,
            "tp": self.tp,
            "fp": self.fp,
            "fn": self.fn,
        }


def prf(tp: int, fp: int, fn: int) -> tuple[float, float, float]:
    """sklearn's precision, recall, F1 with zero_division=0 (F1 as 2TP / (2TP + FP + FN))."""
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * tp / (2 * tp + fp + fn) if tp else 0.0
    return precision, recall, f1


@dataclass(frozen=True)
class TokenF1Result:
    """Corpus scores plus per-document counts (rows = documents, columns = `types`)."""

    types: tuple[str, ...]
    macro_precision: float
    macro_recall: float
    macro_f1: float
    per_type: dict[str, TypeScore]
    n_tokens: int
    doc_tp: NDArray[np.int64]  # (n_docs, n_types)
    doc_fp: NDArray[np.int64]
    doc_fn: NDArray[np.int64]

    def doc_counts(self, doc: int) -> dict[str, dict[str, int]]:
        """{type: {"tp", "fp", "fn"}} of one document, for samples.jsonl."""
        return {
            t: {
                "tp": int(self.doc_tp[doc, k]),
                "fp": int(self.doc_fp[doc, k]),
                "fn": int(self.doc_fn[doc, k]),
            }
            for k, t in enumerate(self.types)
        }


@dataclass(frozen=True)
class TokenLabels:
    """Gold and predicted label ids per token (0 = O, see LabelSpace) and each token's document."""

    space: LabelSpace
    starts: NDArray[np.int64]  # corpus coordinates (documents joined by one newline)
    ends: NDArray[np.int64]
    doc: NDArray[np.int64]
    gold: NDArray[np.int64]
    pred: NDArray[np.int64]


def label_tokens(
    texts: Sequence[str],
    gold: Sequence[Sequence[Span]],
    pred: Sequence[Sequence[Span]],
    types: Sequence[str],
    token_offsets: Sequence[TokenOffsets] | None = None,
) -> TokenLabels:
    """Tokenize every document once and label its tokens from the gold and predicted spans."""
    if not len(texts) == len(gold) == len(pred):
        raise ValueError(f"{len(texts)} texts, {len(gold)} gold and {len(pred)} predicted docs")
    gold_spans, pred_spans = DocSpans.of(gold), DocSpans.of(pred)
    space = LabelSpace.build(types, {*gold_spans.types, *pred_spans.types})
    ids = space.ids()
    corpus = CorpusText.of(texts)
    starts, ends, doc = corpus_tokens(texts, corpus, token_offsets)
    n_labels = len(space.names)

    def labels_of(spans: DocSpans) -> NDArray[np.int64]:
        flat = flatten_spans(spans, corpus, ids)
        chars = paint_char_labels(corpus.n_chars, flat, n_labels)
        return token_majority_labels(chars, starts, ends, n_labels, span_boundaries(flat))

    return TokenLabels(space, starts, ends, doc, labels_of(gold_spans), labels_of(pred_spans))


def token_macro_f1(
    texts: Sequence[str],
    gold: Sequence[Sequence[Span]],
    pred: Sequence[Sequence[Span]],
    types: Sequence[str],
    token_offsets: Sequence[TokenOffsets] | None = None,
) -> TokenF1Result:
    """Score predicted spans against gold spans with the NCER token metric.

    `texts[d]`, `gold[d]`, `pred[d]` describe document d; spans keep list order (the last span
    covering a character wins). `types` are the dataset's scored types in report order; spans of
    other types still label their tokens but are never scored. `token_offsets`, one (starts,
    ends) pair per document, replaces the regex tokenizer (e.g. a model's own tokenizer).
    """
    labels = label_tokens(texts, gold, pred, types, token_offsets)
    return score_token_labels(labels, len(texts))


def score_token_labels(labels: TokenLabels, n_docs: int) -> TokenF1Result:
    """Per-type and per-document TP/FP/FN from token labels, then the macro average."""
    n_labels = len(labels.space.names)
    n_scored = labels.space.n_scored
    size = max(n_docs, 1) * n_labels

    def per_doc(mask: NDArray[np.bool_], label: NDArray[np.int64]) -> NDArray[np.int64]:
        keys = labels.doc[mask] * n_labels + label[mask]
        counts = np.bincount(keys, minlength=size)[: n_docs * n_labels]
        return counts.reshape(n_docs, n_labels)[:, 1 : n_scored + 1].astype(np.int64)

    gold_count = per_doc(labels.gold > 0, labels.gold)  # O tokens never count for a type
    pred_count = per_doc(labels.pred > 0, labels.pred)
    tp = per_doc((labels.gold == labels.pred) & (labels.gold > 0), labels.gold)
    fp, fn = pred_count - tp, gold_count - tp
    types = labels.space.names[1 : n_scored + 1]
    per_type: dict[str, TypeScore] = {}
    for k, name in enumerate(types):
        t, p, n = int(tp[:, k].sum()), int(fp[:, k].sum()), int(fn[:, k].sum())
        precision, recall, f1 = prf(t, p, n)
        per_type[name] = TypeScore(precision, recall, f1, t + n, t, p, n)
    scores = list(per_type.values())

    def mean(values: list[float]) -> float:
        return float(np.mean(values)) if values else 0.0

    return TokenF1Result(
        types=types,
        macro_precision=mean([s.precision for s in scores]),
        macro_recall=mean([s.recall for s in scores]),
        macro_f1=mean([s.f1 for s in scores]),
        per_type=per_type,
        n_tokens=int(labels.gold.size),
        doc_tp=tp,
        doc_fp=fp,
        doc_fn=fn,
    )
