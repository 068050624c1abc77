"""Metrics as functions of per-sample additive counts, for (paired) bootstrap resampling.

Every headline metric the report and compare show is a function of sums over samples:
accuracy = sum(correct) / sum(1); Macro-F1 = mean over labels of 2TP / (2TP + FP + FN) with
TP/FP/FN summed over samples; CACS@k = mean of per-case terms; rubric accuracy = sum(met) /
sum(judged). So a metric is stored as a sparse (samples x counts) matrix plus a function of the
column sums, and a bootstrap replicate is one weighted column sum: weights (B x n, how often each
sample was drawn) @ counts. Both runs of a paired test use the same draws.

The sparse matrix is a small COO of our own (numpy only): scipy.sparse costs 0.6 s to import,
more than a whole report takes otherwise, and only this weighted column sum is needed.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from clineval.metrics.bootstrap import DEFAULT_RESAMPLES, bootstrap_index_chunks

# A metric from summed counts: (replicates x k) column sums -> (replicates,) values.
Reducer = Callable[[NDArray[np.float64]], NDArray[np.float64]]
_CHUNK = 250  # replicates per matrix product: bounds memory at 250 x n floats


@dataclass(frozen=True)
class Counts:
    """A sparse (n samples x k counts) matrix as coordinates, entries sorted by column."""

    n: int
    k: int
    rows: NDArray[np.intp]
    cols: NDArray[np.intp]
    vals: NDArray[np.float64]

    @classmethod
    def from_coo(
        cls, n: int, k: int, rows: NDArray[np.intp], cols: NDArray[np.intp], vals: NDArray[Any]
    ) -> Counts:
        keep = np.asarray(vals) != 0
        rows, cols = np.asarray(rows, np.intp)[keep], np.asarray(cols, np.intp)[keep]
        vals = np.asarray(vals, np.float64)[keep]
        order = np.argsort(cols, kind="stable")
        return cls(n, k, rows[order], cols[order], vals[order])

    @classmethod
    def from_dense(cls, dense: NDArray[Any]) -> Counts:
        arr = np.asarray(dense, dtype=np.float64)
        rows, cols = np.nonzero(arr)
        return cls.from_coo(arr.shape[0], arr.shape[1], rows, cols, arr[rows, cols])

    def total(self) -> NDArray[np.float64]:
        """Column sums over all samples, shape (k,)."""
        return np.bincount(self.cols, weights=self.vals, minlength=self.k).astype(np.float64)

    def weighted(self, weights: NDArray[np.float64]) -> NDArray[np.float64]:
        """weights (b x n) @ this matrix -> (b x k), via one gather and a segmented sum."""
        out = np.zeros((weights.shape[0], self.k))
        if self.cols.size == 0:
            return out
        products = weights[:, self.rows] * self.vals  # (b, nnz), entries grouped by column
        starts = np.flatnonzero(np.r_[True, self.cols[1:] != self.cols[:-1]])
        out[:, self.cols[starts]] = np.add.reduceat(products, starts, axis=1)
        return out

    def take(self, rows: NDArray[np.intp]) -> Counts:
        """The sub-matrix of the given (distinct) rows, in that order."""
        new_index = np.full(self.n, -1, dtype=np.intp)
        new_index[rows] = np.arange(rows.size)
        mapped = new_index[self.rows]
        keep = mapped >= 0
        return Counts.from_coo(rows.size, self.k, mapped[keep], self.cols[keep], self.vals[keep])


@dataclass
class SampleStatistic:
    """One metric of one run: per-sample counts (rows follow `ids`) and how to reduce sums."""

    ids: list[str]
    counts: Counts
    reduce: Reducer
    # Gold answer per sample, so a paired test can refuse runs scored against different gold.
    gold: list[str] | None = None

    def point(self) -> float:
        return float(self.reduce(self.counts.total().reshape(1, -1))[0])

    def subset(self, rows: NDArray[np.intp]) -> SampleStatistic:
        gold = [self.gold[i] for i in rows] if self.gold is not None else None
        return SampleStatistic(
            ids=[self.ids[i] for i in rows],
            counts=self.counts.take(rows),
            reduce=self.reduce,
            gold=gold,
        )


@dataclass(frozen=True)
class PairedResult:
    n_shared: int
    a: float  # metric of run A on the shared samples
    b: float
    delta: float  # a - b
    ci: tuple[float, float]  # 95% percentile interval of the replicate differences
    p_value: float  # two-sided bootstrap p-value of "no difference"


# -- reducers -----------------------------------------------------------------------------------
def ratio(sums: NDArray[np.float64]) -> NDArray[np.float64]:
    """Column 0 / column 1 (nan when the denominator is 0)."""
    num, den = sums[:, 0], sums[:, 1]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def macro_f1_reducer(n_labels: int) -> Reducer:
    """Columns [TP_0..TP_C-1, FP_0.., FN_0..] -> mean per-label F1, 0 for undefined labels.

    2TP / (2TP + FP + FN) equals 2PR / (P + R) whenever the latter is defined, and is 0 exactly
    when sklearn's zero_division=0 gives 0, so this is f1_score(labels=all, average="macro").
    """

    def reduce(sums: NDArray[np.float64]) -> NDArray[np.float64]:
        tp = sums[:, :n_labels]
        fp = sums[:, n_labels : 2 * n_labels]
        fn = sums[:, 2 * n_labels : 3 * n_labels]
        den = 2 * tp + fp + fn
        with np.errstate(invalid="ignore", divide="ignore"):
            f1 = np.where(den > 0, 2 * tp / np.where(den > 0, den, 1.0), 0.0)
        per_resample: NDArray[np.float64] = f1.mean(axis=1)
        return per_resample

    return reduce


def micro_f1_reducer(sums: NDArray[np.float64]) -> NDArray[np.float64]:
    """Columns [correct, incorrect, missed, spurious] -> nervaluate-style F1 (no partials)."""
    cor, inc, mis, spu = sums[:, 0], sums[:, 1], sums[:, 2], sums[:, 3]
    possible = cor + inc + mis
    actual = cor + inc + spu
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(actual > 0, cor / np.where(actual > 0, actual, 1.0), 0.0)
        recall = np.where(possible > 0, cor / np.where(possible > 0, possible, 1.0), 0.0)
        pr = precision + recall
        return np.where(pr > 0, 2 * precision * recall / np.where(pr > 0, pr, 1.0), 0.0)


# -- builders -----------------------------------------------------------------------------------
def mean_statistic(
    ids: Sequence[str], values: Sequence[float] | NDArray[np.float64], gold: list[str] | None = None
) -> SampleStatistic:
    """The mean of a per-sample value (accuracy, a CACS term, pass@k)."""
    vals = np.asarray(values, dtype=np.float64)
    counts = Counts.from_dense(np.column_stack([vals, np.ones_like(vals)]))
    return SampleStatistic(list(ids), counts, ratio, gold)


def ratio_statistic(
    ids: Sequence[str], num: Sequence[float], den: Sequence[float]
) -> SampleStatistic:
    """A pooled ratio sum(num) / sum(den) (rubric accuracy = met / judged)."""
    counts = Counts.from_dense(
        np.column_stack([np.asarray(num, np.float64), np.asarray(den, np.float64)])
    )
    return SampleStatistic(list(ids), counts, ratio)


def micro_f1_statistic(
    ids: Sequence[str],
    gold: Sequence[Collection[str]],
    pred: Sequence[Collection[str] | None],
) -> SampleStatistic:
    """Micro-F1 of a multi-label task (ICD coding, one set of labels per sample): 2 TP /
    (2 TP + FP + FN) with each sample's label-set TP, FP and FN summed; 0 when both sets are
    empty everywhere. A sample without a prediction (None) counts its gold labels as missed."""
    counts = np.array(
        [
            (len(set(g) & set(p or ())), len(set(p or ()) - set(g)), len(set(g) - set(p or ())))
            for g, p in zip(gold, pred, strict=True)
        ],
        dtype=np.float64,
    ).reshape(-1, 3)
    return SampleStatistic(list(ids), Counts.from_dense(counts), _micro_f1)


def _micro_f1(sums: NDArray[np.float64]) -> NDArray[np.float64]:
    tp, fp, fn = sums[:, 0], sums[:, 1], sums[:, 2]
    den = 2 * tp + fp + fn
    return np.where(den > 0, 2 * tp / np.where(den > 0, den, 1.0), 0.0)


def macro_f1_statistic(
    ids: Sequence[str],
    gold: Sequence[str],
    pred: Sequence[str | None],
    labels: Sequence[str],
) -> SampleStatistic:
    """Macro-F1 over `labels`; a prediction outside them is a miss for its gold, no FP."""
    index = {label: i for i, label in enumerate(labels)}
    c = len(labels)
    n = len(gold)
    g = np.array([index.get(x, -1) for x in gold], dtype=np.int64)
    p = np.array([index.get(x, -1) if x is not None else -1 for x in pred], dtype=np.int64)
    rows = np.arange(n)
    hit = (g == p) & (g >= 0)
    # TP for hits; otherwise FN at the gold label and FP at a valid predicted label.
    r_tp, c_tp = rows[hit], g[hit]
    miss = ~hit & (g >= 0)
    r_fn, c_fn = rows[miss], 2 * c + g[miss]
    wrong = ~hit & (p >= 0)
    r_fp, c_fp = rows[wrong], c + p[wrong]
    r = np.concatenate([r_tp, r_fn, r_fp])
    col = np.concatenate([c_tp, c_fn, c_fp])
    counts = Counts.from_coo(n, 3 * c, r, col, np.ones(r.size))
    return SampleStatistic(list(ids), counts, macro_f1_reducer(c), [str(x) for x in gold])


def counts_statistic(
    ids: Sequence[str], counts: NDArray[np.float64], reduce: Reducer
) -> SampleStatistic:
    """A metric that is a function of additive per-sample counts (micro-F1 of TP, FP, FN; a
    pooled ratio): `counts` is (samples x k), one row per id; `reduce` maps column sums,
    shape (replicates x k), to one value per replicate, shape (replicates,)."""
    return SampleStatistic(list(ids), Counts.from_dense(counts), reduce)


# -- bootstrap ----------------------------------------------------------------------------------
def _weight_chunks(n: int, n_resamples: int, seed: int) -> Iterator[NDArray[np.float64]]:
    """(chunk, n) draw counts per replicate, from the shared seeded bootstrap indices."""
    for part in bootstrap_index_chunks(n, n_resamples, seed, _CHUNK):
        b = part.shape[0]
        flat = (np.arange(b)[:, None] * n + part).ravel()
        yield np.bincount(flat, minlength=b * n).reshape(b, n).astype(np.float64)


def replicates(
    stat: SampleStatistic, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> NDArray[np.float64]:
    """The metric on each of n_resamples bootstrap resamples of the samples."""
    n = len(stat.ids)
    if n == 0:
        return np.full(n_resamples, np.nan)
    out = [stat.reduce(stat.counts.weighted(w)) for w in _weight_chunks(n, n_resamples, seed)]
    return np.concatenate(out)


def interval(values: NDArray[np.float64], level: float = 0.95) -> tuple[float, float]:
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return (float("nan"), float("nan"))
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(finite, [alpha, 1.0 - alpha])
    return float(low), float(high)


def bootstrap_interval(
    stat: SampleStatistic, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> tuple[float, float]:
    """The 95% percentile interval of `stat` over `n_resamples` seeded bootstrap draws of
    its samples (the same draws the report and compare make for that seed)."""
    return interval(replicates(stat, n_resamples, seed))


def align(a: SampleStatistic, b: SampleStatistic) -> tuple[SampleStatistic, SampleStatistic]:
    """Both statistics restricted to the sample ids they share, in A's order (first wins)."""
    pos_b: dict[str, int] = {}
    for i, sid in enumerate(b.ids):
        pos_b.setdefault(sid, i)
    seen: set[str] = set()
    rows_a: list[int] = []
    rows_b: list[int] = []
    for i, sid in enumerate(a.ids):
        if sid in pos_b and sid not in seen:
            seen.add(sid)
            rows_a.append(i)
            rows_b.append(pos_b[sid])
    return (
        a.subset(np.asarray(rows_a, dtype=np.intp)),
        b.subset(np.asarray(rows_b, dtype=np.intp)),
    )


def p_value_from_differences(diffs: NDArray[np.float64]) -> float:
    """Two-sided: twice the smaller share of replicate differences on either side of 0.

    With the +1 correction, so a finite number of replicates never claims p = 0. It rejects at
    level alpha about when 0 lies outside the (1 - alpha) percentile interval of the difference.
    """
    finite = diffs[np.isfinite(diffs)]
    if finite.size == 0:
        return float("nan")
    below = (np.count_nonzero(finite <= 0) + 1) / (finite.size + 1)
    above = (np.count_nonzero(finite >= 0) + 1) / (finite.size + 1)
    return float(min(1.0, 2.0 * min(below, above)))


def paired_bootstrap(
    a: SampleStatistic,
    b: SampleStatistic,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> PairedResult | None:
    """Paired test of metric(A) - metric(B) on shared samples; None when nothing is shared."""
    sa, sb = align(a, b)
    if not sa.ids:
        return None
    return paired_result(
        sa, sb, replicates(sa, n_resamples, seed), replicates(sb, n_resamples, seed)
    )


def paired_result(
    sa: SampleStatistic,
    sb: SampleStatistic,
    reps_a: NDArray[np.float64],
    reps_b: NDArray[np.float64],
) -> PairedResult:
    """The paired test of two aligned statistics from their replicates on the same draws."""
    reps = reps_a - reps_b
    point_a, point_b = sa.point(), sb.point()
    return PairedResult(
        n_shared=len(sa.ids),
        a=point_a,
        b=point_b,
        delta=point_a - point_b,
        ci=interval(reps),
        p_value=p_value_from_differences(reps),
    )
