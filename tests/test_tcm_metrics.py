"""TCM-SD metrics vs sklearn, the per-class reference loop and hand-computed cases."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import (
    accuracy_score,
    classification_report,
    f1_score,
    precision_recall_fscore_support,
)

import clineval.benchmarks.tcm_sd.metrics as cls
from clineval.metrics.bootstrap import stratified_bootstrap_indices

K = 148
LABELS = [f"证{i:03d}" for i in range(K)]
INDEX = {label: i for i, label in enumerate(LABELS)}


def _random_case(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Gold over only part of the labels (some absent from gold), predictions over a different
    part (some absent from predictions too), plus invalid outputs (-1)."""
    rng = np.random.default_rng(seed)
    gold = rng.integers(0, K - 20, n)
    pred = np.where(rng.random(n) < 0.4, gold, rng.integers(10, K, n))
    pred[rng.random(n) < 0.1] = cls.INVALID
    return gold, pred


@pytest.mark.parametrize(("seed", "n"), [(0, 1), (1, 7), (2, 150), (3, 1000), (4, 5486)])
def test_macro_f1_equals_sklearn_and_reference_loop(seed: int, n: int) -> None:
    gold, pred = _random_case(seed, n)
    ours = cls.macro_f1(gold, pred, K)
    # sklearn on strings, invalid outputs as a string outside the label set
    gold_s = [LABELS[g] for g in gold]
    pred_s = [LABELS[p] if p >= 0 else "不是证型" for p in pred]
    expected = f1_score(gold_s, pred_s, labels=LABELS, average="macro", zero_division=0)
    assert ours == expected  # same arithmetic: bit-identical
    ref_f1, ref_acc = cls.reference_macro_f1_loop(gold_s, pred_s, LABELS)
    assert ours == pytest.approx(ref_f1, abs=1e-12)
    assert cls.accuracy(gold, pred) == accuracy_score(gold_s, pred_s) == pytest.approx(ref_acc)
    assert cls.scores(gold, pred, K) == (ours, cls.accuracy(gold, pred))


def test_per_label_prf_equals_sklearn() -> None:
    gold, pred = _random_case(5, 800)
    p, r, f, support = precision_recall_fscore_support(
        gold, pred, labels=list(range(K)), average=None, zero_division=0
    )
    counts = cls.label_counts(gold, pred, K)
    ours_p, ours_r, ours_f = cls.per_label_prf(counts)
    np.testing.assert_array_equal(ours_p, p)
    np.testing.assert_array_equal(ours_r, r)
    np.testing.assert_array_equal(ours_f, f)
    np.testing.assert_array_equal(counts.n_gold, support)


def test_hand_computed_case() -> None:
    # 3 labels of K=4; label 3 has no gold and no prediction -> F1 0, still averaged.
    gold = np.array([0, 0, 1, 2])
    pred = np.array([0, 1, 1, cls.INVALID])
    # label 0: TP1 FN1 -> P1 R.5 F 2/3; label 1: TP1 FP1 -> P.5 R1 F 2/3; label 2: FN1 -> 0
    assert cls.macro_f1(gold, pred, 4) == pytest.approx((2 / 3 + 2 / 3 + 0 + 0) / 4)
    assert cls.accuracy(gold, pred) == 0.5
    counts = cls.label_counts(gold, pred, 4)
    assert counts.n_pred.tolist() == [1, 2, 0, 0]  # the invalid output is nobody's FP
    assert counts.n_gold.tolist() == [2, 1, 1, 0]


def test_encode_marks_outside_labels_invalid() -> None:
    got = cls.encode(["证001", "证 001", None, "证147", ""], INDEX)
    assert got.tolist() == [1, cls.INVALID, cls.INVALID, 147, cls.INVALID]


def test_bootstrap_equals_a_loop_over_the_same_resamples() -> None:
    gold, pred = _random_case(6, 300)
    f1s, _, accs = cls.bootstrap_scores(gold, pred, K, n_resamples=50, seed=11, max_cells=1000)
    idx = stratified_bootstrap_indices(gold, 50, 11)
    for b in range(50):
        g, p = gold[idx[b]], pred[idx[b]]
        expected = f1_score(g, p, labels=list(range(K)), average="macro", zero_division=0)
        assert f1s[b] == pytest.approx(expected, abs=1e-15)
        assert accs[b] == pytest.approx(np.mean(g == p))


def test_bootstrap_intervals_are_seeded() -> None:
    gold, pred = _random_case(7, 500)
    a = cls.bootstrap_intervals(gold, pred, K, 200, seed=3)
    b = cls.bootstrap_intervals(gold, pred, K, 200, seed=3)
    c = cls.bootstrap_intervals(gold, pred, K, 200, seed=4)
    assert a == b and a != c
    low, high = a["accuracy"]
    assert low <= cls.accuracy(gold, pred) <= high


def test_top_confusions_counts_and_order() -> None:
    gold = np.array([0, 0, 0, 1, 1, 2, 2, 2])
    pred = np.array([1, 1, 2, 0, cls.INVALID, 0, 0, 2])
    assert cls.top_confusions(gold, pred, 3, k=10) == [(0, 1, 2), (2, 0, 2), (0, 2, 1), (1, 0, 1)]
    assert cls.top_confusions(gold, pred, 3, k=1) == [(0, 1, 2)]


def test_frequency_buckets_split_by_train_count() -> None:
    counts = np.array([5, 100, 1, 50, 7, 7])
    buckets = cls.frequency_buckets(counts)
    assert buckets["head"].tolist() == [1, 3]
    assert buckets["middle"].tolist() == [4, 5]  # tie 7/7 keeps label order
    assert buckets["tail"].tolist() == [0, 2]


# --- present-labels macro F1: the authors' run_tcm.py figure --------------------------------


def _authors_macro(gold: np.ndarray, pred: np.ndarray) -> float:
    """What run_tcm.py printed: classification_report without labels=, macro avg f1."""
    report = classification_report(gold, pred, output_dict=True, zero_division=0)
    return float(report["macro avg"]["f1-score"])


@pytest.mark.parametrize(("seed", "n"), [(0, 1), (1, 7), (2, 50), (3, 500), (4, 3000)])
def test_present_macro_f1_equals_classification_report(seed: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    gold = rng.integers(0, K, n)
    pred = np.where(rng.random(n) < 0.4, gold, rng.integers(0, K, n))  # all valid, as run_tcm
    ours, n_present = cls.present_macro_f1(gold, pred, K)
    assert ours == pytest.approx(_authors_macro(gold, pred), abs=1e-12)
    assert n_present == len(set(gold.tolist()) | set(pred.tolist()))
    if n < 100:  # a subset: most labels absent, so the two figures differ
        assert ours != pytest.approx(cls.macro_f1(gold, pred, K))


def test_present_macro_f1_equals_macro_f1_when_every_label_has_gold() -> None:
    gold = np.concatenate([np.arange(K), np.arange(K)])
    pred = np.roll(gold, 3)
    assert cls.present_macro_f1(gold, pred, K) == (pytest.approx(cls.macro_f1(gold, pred, K)), K)


def test_present_macro_f1_with_invalid_outputs_hand_case() -> None:
    # K=5; label 0: TP1 FN1 -> 2/3; label 1: TP1 FP1 FN1 -> 1/2; label 2: FN1 -> 0;
    # label 4: FP1 -> 0 (present by prediction only); label 3 absent; the invalid is no label.
    gold = np.array([0, 0, 1, 2, 1])
    pred = np.array([0, 1, 1, cls.INVALID, 4])
    ours, n_present = cls.present_macro_f1(gold, pred, 5)
    assert n_present == 4
    assert ours == pytest.approx((2 / 3 + 1 / 2 + 0 + 0) / 4)
    expected = f1_score(gold, pred, labels=[0, 1, 2, 4], average="macro", zero_division=0)
    assert ours == pytest.approx(expected)


def test_present_bootstrap_equals_classification_report_per_resample() -> None:
    rng = np.random.default_rng(9)
    gold = rng.integers(0, K, 200)
    pred = np.where(rng.random(200) < 0.5, gold, rng.integers(0, K, 200))
    f1s, present, _accs = cls.bootstrap_scores(gold, pred, K, 40, seed=5, max_cells=2000)
    idx = stratified_bootstrap_indices(gold, 40, 5)
    for b in range(40):
        g, p = gold[idx[b]], pred[idx[b]]
        assert present[b] == pytest.approx(_authors_macro(g, p), abs=1e-12)
        assert f1s[b] == pytest.approx(
            f1_score(g, p, labels=list(range(K)), average="macro", zero_division=0), abs=1e-15
        )
    ci = cls.bootstrap_intervals(gold, pred, K, 40, seed=5)
    assert ci["present_macro_f1"] == (
        pytest.approx(float(np.percentile(present, 2.5))),
        pytest.approx(float(np.percentile(present, 97.5))),
    )
