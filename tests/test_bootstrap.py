"""Bootstrap helpers: stratified resampling keeps strata sizes, and why Macro-F1 needs it."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import f1_score

import clineval.benchmarks.tcm_sd.metrics as cls
from clineval.metrics.bootstrap import (
    bootstrap_indices,
    percentile_interval,
    stratified_bootstrap_indices,
)


def test_stratified_resamples_stay_within_strata_and_keep_their_sizes() -> None:
    strata = np.array([2, 0, 2, 1, 0, 2, 2, 1, 0, 0, 5])
    idx = stratified_bootstrap_indices(strata, n_resamples=300, seed=4)
    assert idx.shape == (300, strata.size)
    for row in idx:
        # same multiset of strata in every resample
        assert sorted(strata[row].tolist()) == sorted(strata.tolist())
    # a stratum with several members is really resampled (not copied), over many draws
    members_of_0 = set(np.flatnonzero(strata == 0).tolist())
    assert set(idx[strata[idx] == 0].tolist()) == members_of_0
    # seeded
    assert np.array_equal(idx, stratified_bootstrap_indices(strata, 300, seed=4))
    assert not np.array_equal(idx, stratified_bootstrap_indices(strata, 300, seed=5))


def test_macro_f1_interval_covers_estimate_where_the_plain_bootstrap_does_not() -> None:
    # 148 labels with 3 test records each (like TCM-SD's rare classes). A plain resample drops
    # about e^-3 of each label's records entirely -> those labels score 0 -> the resampled
    # Macro-F1 is biased low, and the plain percentile interval lies below the estimate.
    rng = np.random.default_rng(5)
    n_labels = 148
    gold = np.repeat(np.arange(n_labels), 3)
    pred = np.where(rng.random(gold.size) < 0.5, gold, rng.integers(0, n_labels, gold.size))
    labels = list(range(n_labels))
    estimate = f1_score(gold, pred, labels=labels, average="macro", zero_division=0)
    plain = [
        f1_score(gold[i], pred[i], labels=labels, average="macro", zero_division=0)
        for i in bootstrap_indices(gold.size, 200, seed=0)
    ]
    assert percentile_interval(np.array(plain))[1] < estimate  # the flaw being fixed
    low, high = cls.bootstrap_intervals(gold, pred, n_labels, 1000, seed=0)["macro_f1"]
    assert low <= estimate <= high


def test_micro_f1_statistic_against_sklearn_and_a_hand_bootstrap() -> None:
    """Multi-label micro-F1 (ICD coding's headline): the point against scikit-learn on the
    label indicator matrices, each bootstrap replicate against the F1 of the resampled rows
    recomputed by scikit-learn."""
    from sklearn.preprocessing import MultiLabelBinarizer

    from clineval.benchmarks import bootstrap_interval, micro_f1_statistic

    rng = np.random.default_rng(5)
    codes = ["I10", "E11", "J18", "J44", "I21", "I48"]
    gold = [set(rng.choice(codes, rng.integers(1, 4), replace=False)) for _ in range(40)]
    pred: list[set[str] | None] = [
        None if i % 13 == 0 else set(rng.choice(codes, rng.integers(0, 4), replace=False))
        for i in range(40)
    ]
    ids = [f"fixture-{i}" for i in range(40)]
    binarize = MultiLabelBinarizer(classes=codes)
    y_true = binarize.fit_transform(gold)
    y_pred = binarize.transform([p or set() for p in pred])  # no prediction: every code missed
    stat = micro_f1_statistic(ids, gold, pred)
    assert stat.point() == f1_score(y_true, y_pred, average="micro")
    draws = bootstrap_indices(40, 200, 3)
    oracle = [f1_score(y_true[d], y_pred[d], average="micro", zero_division=0) for d in draws]
    want = percentile_interval(np.asarray(oracle))
    assert bootstrap_interval(stat, 200, 3) == pytest.approx(want, abs=1e-12)
    assert micro_f1_statistic(["a"], [set()], [set()]).point() == 0.0  # nothing to find
