"""Agreement between a judge and human raters, as pure functions (docs/metrics.md, "Agreement
with human labels", names each variant).

Labels arrive as a matrix: one row per unit (an item's criterion), one column per rater, nan
where a rater gave no label. Binary labels are 0.0 / 1.0, categorical ones small integer codes,
graded ones numbers.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
from numpy.typing import NDArray

Matrix = NDArray[np.float64]


def _pair_array(pairs: Iterable[tuple[bool, bool]]) -> NDArray[np.bool_]:
    """(n, 2) booleans: column 0 the grader's labels, column 1 the physician's."""
    listed = [(bool(g), bool(p)) for g, p in pairs]
    return np.array(listed, dtype=bool).reshape(len(listed), 2)


def class_f1_of(grader: NDArray[np.bool_], physician: NDArray[np.bool_], positive: bool) -> float:
    """`class_f1` of paired label arrays (grader[i] with physician[i])."""
    said, truth = grader == positive, physician == positive
    n_said, n_truth = int(said.sum()), int(truth.sum())
    if n_said == 0 or n_truth == 0:
        return math.nan
    # 2PR/(P+R) with P = tp/said, R = tp/truth, which is 0 when tp is 0.
    return 2 * int((said & truth).sum()) / (n_said + n_truth)


def class_f1(pairs: Iterable[tuple[bool, bool]], positive: bool) -> float:
    """F1 of one class over (grader, physician) pairs; nan when it is undefined.

    Precision counts the pairs where the grader said `positive`, recall those where the
    physician did (HealthBench's meta-evaluation). When either count is zero the class's
    precision or recall has no denominator, and the F1 is undefined (nan), not 0: a grader that
    never says "not met" on a set where no physician did either has not failed at "not met".
    When both are defined and both 0, the F1 is 0.
    """
    array = _pair_array(pairs)
    return class_f1_of(array[:, 0], array[:, 1], positive)


def pooled_balanced_f1(pairs: Iterable[tuple[bool, bool]]) -> float:
    """HealthBench's pooled pairwise balanced F1: the mean of the F1 of class True and the F1
    of class False over (grader_label, physician_label) pairs, where every grader label is
    paired with each single physician's label for the same criterion (pooled over items and
    physicians, not a majority).

    Zero-division rule: a class's F1 is undefined when the grader never gave that label or no
    physician did (its precision or its recall would divide by zero); then the balanced F1 is
    nan, as HealthBench's reference leaves it out (None). An empty input gives nan.
    scikit-learn's `f1_score(average="macro")` gives the same figure whenever both labels occur
    on both sides; where a class is missing on one side it counts that class's F1 as 0 instead.
    """
    array = _pair_array(pairs)
    grader, physician = array[:, 0], array[:, 1]
    return (class_f1_of(grader, physician, True) + class_f1_of(grader, physician, False)) / 2


def pooled_pairs(judge: Matrix, raters: Matrix) -> list[tuple[bool, bool]]:
    """(judge label, one rater's label) for every unit and every rater who labelled it, where
    the judge has a label: the pairs `pooled_balanced_f1` takes (binary labels, nan = none)."""
    judge = np.asarray(judge, dtype=np.float64)
    raters = np.asarray(raters, dtype=np.float64)
    raters = raters[:, None] if raters.ndim == 1 else raters
    both = ~np.isnan(judge)[:, None] & ~np.isnan(raters)
    units, columns = np.nonzero(both)
    return [(bool(judge[u]), bool(raters[u, c])) for u, c in zip(units, columns, strict=True)]


def strict_majority(labels: Matrix) -> NDArray[np.float64]:
    """Per unit (row): the label more than half of the unit's labels hold (missing ones not
    counted), nan when no label has a strict majority or the unit has no label. One label on
    its own is a majority of one."""
    labels = np.atleast_2d(np.asarray(labels, dtype=np.float64))
    out = np.full(labels.shape[0], np.nan)
    values = np.unique(labels[~np.isnan(labels)])
    if values.size == 0:
        return out
    counts = np.stack([(labels == v).sum(axis=1) for v in values], axis=1)  # (units, values)
    top = counts.argmax(axis=1)
    given = (~np.isnan(labels)).sum(axis=1)
    held = 2 * counts[np.arange(labels.shape[0]), top] > given
    out[held] = values[top[held]]
    return out


def cohen_kappa(a: Matrix, b: Matrix, weights: str | None = None) -> float | None:
    """Cohen's kappa of two raters over the units both labelled (nan = no label); None when
    undefined (no unit, or chance agreement already perfect: one label everywhere).

    weights None: unweighted (exact agreement). "linear" / "quadratic": disagreement weighted by
    the absolute / squared difference of the two labels' values, for graded scales.
    """
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    both = ~np.isnan(a) & ~np.isnan(b)
    a, b = a[both], b[both]
    if a.size == 0:
        return None
    values, codes = np.unique(np.concatenate([a, b]), return_inverse=True)
    k = values.size
    observed = np.zeros((k, k))
    np.add.at(observed, (codes[: a.size], codes[a.size :]), 1.0)
    observed /= a.size
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    if weights is None:
        w = 1.0 - np.eye(k)
    elif weights in ("linear", "quadratic"):
        diff = np.abs(values[:, None] - values[None, :])
        w = diff if weights == "linear" else diff**2
    else:
        raise ValueError(f"unknown weights {weights!r}")
    chance = float((w * expected).sum())
    if chance == 0.0:
        return None
    return 1.0 - float((w * observed).sum()) / chance


LEVELS = ("nominal", "ordinal", "interval")


def krippendorff_alpha(labels: Matrix, level: str = "nominal") -> float | None:
    """Krippendorff's alpha of a (units x raters) label matrix, nan = missing label.

    Units with fewer than two labels are not pairable and are left out. Distances: nominal 0/1;
    ordinal Krippendorff's rank-based one (the squared count of coincidences between two values,
    less half of each end's own); interval the squared difference. None when undefined (no
    pairable unit, or no expected disagreement: one value everywhere).
    """
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r} (known: {LEVELS})")
    labels = np.atleast_2d(np.asarray(labels, dtype=np.float64))
    present = ~np.isnan(labels)
    values = np.unique(labels[present])
    if values.size == 0:
        return None
    # counts[u, c]: how many of unit u's labels have value c
    counts = np.stack([((labels == v) & present).sum(axis=1) for v in values], axis=1)
    pairable = counts.sum(axis=1)
    counts = counts[pairable >= 2].astype(np.float64)
    if counts.size == 0:
        return None
    per_unit = counts / (counts.sum(axis=1) - 1.0)[:, None]
    coincidences = per_unit.T @ counts - np.diag(per_unit.sum(axis=0))
    marginals = coincidences.sum(axis=1)
    n = float(marginals.sum())
    delta = _distances(values, marginals, level)
    expected = float((np.outer(marginals, marginals) * delta).sum())
    if expected == 0.0:
        return None
    return 1.0 - (n - 1.0) * float((coincidences * delta).sum()) / expected


def _distances(values: Matrix, marginals: Matrix, level: str) -> Matrix:
    k = values.size
    if level == "nominal":
        return 1.0 - np.eye(k)
    if level == "interval":
        return (values[:, None] - values[None, :]) ** 2
    # ordinal: for c <= k, (sum of marginals from c to k - (n_c + n_k) / 2) squared
    cumulative = np.concatenate([[0.0], np.cumsum(marginals)])
    lo = np.minimum.outer(np.arange(k), np.arange(k))
    hi = np.maximum.outer(np.arange(k), np.arange(k))
    between = cumulative[hi + 1] - cumulative[lo]
    return np.asarray((between - (marginals[lo] + marginals[hi]) / 2.0) ** 2, dtype=np.float64)


def icc_2_1(scores: Matrix) -> float | None:
    """ICC(2,1) of a complete (units x raters) score matrix: two-way random effects, absolute
    agreement, single rater (Shrout and Fleiss's ICC(2,1), McGraw and Wong's ICC(A,1)).

    None when undefined: fewer than two units or raters, or no variance at all.
    """
    x = np.atleast_2d(np.asarray(scores, dtype=np.float64))
    n, k = x.shape
    if n < 2 or k < 2 or np.isnan(x).any():
        return None
    grand = float(x.mean())
    ss_rows = k * float(((x.mean(axis=1) - grand) ** 2).sum())
    ss_cols = n * float(((x.mean(axis=0) - grand) ** 2).sum())
    ss_error = float(((x - grand) ** 2).sum()) - ss_rows - ss_cols
    ms_rows, ms_cols = ss_rows / (n - 1), ss_cols / (k - 1)
    ms_error = ss_error / ((n - 1) * (k - 1))
    denominator = ms_rows + (k - 1) * ms_error + k * (ms_cols - ms_error) / n
    if denominator <= 0.0:
        return None
    return float((ms_rows - ms_error) / denominator)


def weighted_mean(figures: Iterable[tuple[float | None, float]]) -> float | None:
    """The mean of (value, weight) pairs weighted by their weights, a pair without a value left
    out; None when no weight is left. Raters' figures weighted by the pairs each rests on
    (HealthBench's physician baseline)."""
    known = [(v, w) for v, w in figures if v is not None]
    total = sum(w for _, w in known)
    return sum(v * w for v, w in known) / total if total else None


def percentile_among(value: float | None, others: Iterable[float | None]) -> float | None:
    """Where `value` (a judge's figure) stands among `others` (the raters'): the percentage of
    them below it, ties counting half (scipy's `percentileofscore(kind="mean")`), a rater
    without a figure left out; None when `value` is None or no rater has one."""
    known = [o for o in others if o is not None]
    if value is None or not known:
        return None
    below = sum(o < value for o in known) + sum(o == value for o in known) / 2
    return 100.0 * below / len(known)
