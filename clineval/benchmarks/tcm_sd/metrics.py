"""Single-label classification metrics over a fixed label set (TCM-SD): pure numpy.

Inputs are class indices: gold in [0, K), predictions in [0, K) or -1 for an invalid output
(not one of the K labels). An invalid output is wrong for accuracy and a false negative for
its gold label; it is nobody's false positive.

Macro-F1 is the mean over ALL K labels of per-label F1 = 2 TP / (2 TP + FP + FN), 0 when the
label has neither gold nor predictions: exactly
`sklearn.metrics.f1_score(gold, pred, labels=all_K, average="macro", zero_division=0)`,
computed with the same arithmetic so the numbers agree to the last bit.

The present-labels Macro-F1 (`present_macro_f1`) is the mean over only the labels that occur in
gold or among the valid predictions: what `sklearn.metrics.classification_report(gold, pred)`
without `labels=` reports as its macro average, and so what the TCM-SD authors' `run_tcm.py`
printed. On a full test split (every label has gold) both are equal; on a subset they are not.
An invalid output is not a label here either (sklearn, given it as a string, would average one
more zero-F1 class); the authors' classifier never produces one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from clineval.metrics.bootstrap import (
    DEFAULT_RESAMPLES,
    percentile_interval,
    stratified_bootstrap_indices,
)

INVALID = -1
IntArray = NDArray[np.int64]
FloatArray = NDArray[np.float64]


class _LabelIndex(dict[str | None, int]):
    """label -> class index; any other key (None, a stray string) -> INVALID."""

    def __missing__(self, key: object) -> int:
        return INVALID


def encode(values: Sequence[str | None], index: Mapping[str, int]) -> IntArray:
    """Label strings -> class indices; anything outside `index` (or None) -> INVALID.

    One C-level dict lookup per value (`map` over `__getitem__` of a dict whose `__missing__`
    answers INVALID): the fastest exact mapping we measured; a vectorized UTF-32 hash was slower.
    """
    lookup = _LabelIndex(index)
    return np.fromiter(map(lookup.__getitem__, values), dtype=np.int64, count=len(values))


@dataclass(frozen=True)
class Counts:
    """Per-label tallies, each of shape (K,)."""

    tp: IntArray
    n_pred: IntArray  # predictions of the label (TP + FP)
    n_gold: IntArray  # support (TP + FN)


def label_counts(gold: IntArray, pred: IntArray, n_labels: int) -> Counts:
    """Per-label tallies from ONE bincount over (gold, pred) cells, invalid predictions in an
    extra column: the whole confusion matrix in a single pass over the data."""
    gold = np.asarray(gold, dtype=np.int64)
    pred = np.asarray(pred, dtype=np.int64)
    if gold.shape != pred.shape:
        raise ValueError(f"gold and pred differ in shape: {gold.shape} vs {pred.shape}")
    if gold.size and (gold.min() < 0 or gold.max() >= n_labels):
        raise ValueError("gold indices must lie in [0, n_labels)")
    width = n_labels + 1
    cells = gold * width + np.where(pred >= 0, pred, n_labels)
    matrix = np.bincount(cells, minlength=n_labels * width).reshape(n_labels, width)
    return Counts(
        tp=np.ascontiguousarray(np.diagonal(matrix)),
        n_pred=matrix[:, :n_labels].sum(axis=0),
        n_gold=matrix.sum(axis=1),
    )


def scores(gold: IntArray, pred: IntArray, n_labels: int) -> tuple[float, float]:
    """(macro-F1, accuracy) from one pass over the data."""
    counts = label_counts(gold, pred, n_labels)
    _, _, f1 = per_label_prf(counts)
    n = int(counts.n_gold.sum())
    return float(np.mean(f1)), (int(counts.tp.sum()) / n if n else float("nan"))


def _divide(num: FloatArray, den: FloatArray) -> FloatArray:
    """num / den with 0 where den == 0 (sklearn's zero_division=0)."""
    out = np.zeros(np.broadcast(num, den).shape, dtype=np.float64)
    np.divide(num, den, out=out, where=den != 0)
    return out


def per_label_prf(counts: Counts) -> tuple[FloatArray, FloatArray, FloatArray]:
    """(precision, recall, F1) per label, 0 where undefined."""
    tp = counts.tp.astype(np.float64)
    precision = _divide(tp, counts.n_pred.astype(np.float64))
    recall = _divide(tp, counts.n_gold.astype(np.float64))
    # sklearn's form: (1 + beta^2) TP / (beta^2 (TP + FN) + (TP + FP)), beta = 1.
    f1 = _divide(2.0 * tp, counts.n_gold.astype(np.float64) + counts.n_pred)
    return precision, recall, f1


def present_labels(counts: Counts) -> NDArray[np.bool_]:
    """Labels with gold support or at least one (valid) prediction: sklearn's unique_labels."""
    return np.asarray((counts.n_gold > 0) | (counts.n_pred > 0))


def present_macro_f1(gold: IntArray, pred: IntArray, n_labels: int) -> tuple[float, int]:
    """(Macro-F1 over the labels present in gold or predictions, how many labels that is).

    NaN and 0 when nothing is present (no records)."""
    counts = label_counts(gold, pred, n_labels)
    _, _, f1 = per_label_prf(counts)
    present = present_labels(counts)
    n_present = int(present.sum())
    return (float(np.mean(f1[present])) if n_present else float("nan")), n_present


def macro_f1(gold: IntArray, pred: IntArray, n_labels: int) -> float:
    _, _, f1 = per_label_prf(label_counts(gold, pred, n_labels))
    return float(np.mean(f1))


def accuracy(gold: IntArray, pred: IntArray) -> float:
    gold = np.asarray(gold)
    return float(np.mean(gold == np.asarray(pred))) if gold.size else float("nan")


def bootstrap_scores(
    gold: IntArray,
    pred: IntArray,
    n_labels: int,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    max_cells: int = 20_000_000,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """(macro-F1, present-labels macro-F1, accuracy) of each resample (stratified by gold
    label), vectorized; the present labels are re-determined in each resample, as the metric
    would be on that sample.

    Each resample's per-label counts come from one bincount over (resample, label) cells;
    resamples are processed in chunks so memory stays near `max_cells` integers.
    """
    gold = np.asarray(gold, dtype=np.int64)
    pred = np.asarray(pred, dtype=np.int64)
    n = gold.size
    if n == 0:
        nan = np.full(n_resamples, np.nan)
        return nan, nan.copy(), nan.copy()
    # Resample within gold labels: every label keeps its support (see the helper's note).
    idx = stratified_bootstrap_indices(gold, n_resamples, seed)
    f1_out = np.empty(n_resamples)
    present_out = np.empty(n_resamples)
    acc_out = np.empty(n_resamples)
    width = n_labels + 1  # one extra column takes invalid predictions
    chunk = max(1, max_cells // max(n, 1))
    for start in range(0, n_resamples, chunk):
        rows = idx[start : start + chunk]
        b = rows.shape[0]
        g = gold[rows]
        p = pred[rows]
        hit = g == p
        offset = (np.arange(b, dtype=np.int64) * width)[:, None]
        cells = b * width
        n_gold = np.bincount((g + offset).ravel(), minlength=cells).reshape(b, width)
        p_col = np.where(p >= 0, p, n_labels)
        n_pred = np.bincount((p_col + offset).ravel(), minlength=cells).reshape(b, width)
        tp = np.bincount((g + offset)[hit], minlength=cells).reshape(b, width)
        tp, n_gold, n_pred = tp[:, :n_labels], n_gold[:, :n_labels], n_pred[:, :n_labels]
        f1 = _divide(2.0 * tp.astype(np.float64), n_gold.astype(np.float64) + n_pred)
        f1_out[start : start + b] = f1.mean(axis=1)
        # n > 0, so every resample has at least one gold label present: no division by 0.
        present = (n_gold > 0) | (n_pred > 0)
        present_out[start : start + b] = (f1 * present).sum(axis=1) / present.sum(axis=1)
        acc_out[start : start + b] = hit.mean(axis=1)
    return f1_out, present_out, acc_out


def bootstrap_intervals(
    gold: IntArray,
    pred: IntArray,
    n_labels: int,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    level: float = 0.95,
) -> dict[str, tuple[float, float]]:
    """Seeded percentile intervals for macro-F1, present-labels macro-F1 and accuracy (the same
    resamples for all three)."""
    if np.asarray(gold).size == 0:
        nan = (float("nan"), float("nan"))
        return {"macro_f1": nan, "present_macro_f1": nan, "accuracy": nan}
    f1, present, acc = bootstrap_scores(gold, pred, n_labels, n_resamples, seed)
    return {
        "macro_f1": percentile_interval(f1, level),
        "present_macro_f1": percentile_interval(present, level),
        "accuracy": percentile_interval(acc, level),
    }


def top_confusions(
    gold: IntArray, pred: IntArray, n_labels: int, k: int = 20
) -> list[tuple[int, int, int]]:
    """The k most frequent (gold, pred, count) errors among valid predictions.

    Ties are broken by gold index, then pred index, so the list is deterministic.
    """
    gold = np.asarray(gold, dtype=np.int64)
    pred = np.asarray(pred, dtype=np.int64)
    wrong = (gold != pred) & (pred >= 0)
    flat = np.bincount(gold[wrong] * n_labels + pred[wrong], minlength=n_labels * n_labels)
    nonzero = np.flatnonzero(flat)
    order = np.lexsort((nonzero, -flat[nonzero]))[:k]
    return [(int(c // n_labels), int(c % n_labels), int(flat[c])) for c in nonzero[order]]


def frequency_buckets(
    train_counts: IntArray, names: tuple[str, ...] = ("head", "middle", "tail")
) -> dict[str, IntArray]:
    """Split labels into len(names) near-equal groups by train frequency, most frequent first.

    Ties in frequency keep label order (a stable sort), so the split is deterministic.
    Returns {bucket: array of label indices}.
    """
    order = np.argsort(-np.asarray(train_counts), kind="stable")
    return {name: part for name, part in zip(names, np.array_split(order, len(names)), strict=True)}


def reference_macro_f1_loop(
    gold: Sequence[str], pred: Sequence[str | None], labels: Sequence[str]
) -> tuple[float, float]:
    """The textbook per-class loop, on strings: slow on purpose, kept as a test oracle and as
    the benchmark's baseline. Returns (macro_f1, accuracy)."""
    f1_sum = 0.0
    for label in labels:
        tp = fp = fn = 0
        for g, p in zip(gold, pred, strict=True):
            if p == label and g == label:
                tp += 1
            elif p == label:
                fp += 1
            elif g == label:
                fn += 1
        precision = tp / (tp + fp) if tp + fp else 0.0
        recall = tp / (tp + fn) if tp + fn else 0.0
        f1_sum += 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    correct = sum(g == p for g, p in zip(gold, pred, strict=True))
    return f1_sum / len(labels), correct / len(gold) if len(gold) else float("nan")
