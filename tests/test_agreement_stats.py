"""The agreement statistics (clineval.metrics.agreement) against independent oracles:
scikit-learn, krippendorff, pingouin and statsmodels on random label sets with missing
labels, and hand-computed cases for the edge rules."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import percentileofscore
from sklearn.metrics import f1_score

from clineval.benchmarks import percentile_among, pooled_balanced_f1, weighted_mean
from clineval.metrics.agreement import (
    class_f1,
    cohen_kappa,
    icc_2_1,
    krippendorff_alpha,
    pooled_pairs,
    strict_majority,
)


@pytest.mark.parametrize("seed", range(8))
def test_pooled_balanced_f1_equals_sklearn_macro_f1(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 200))
    grader = rng.random(n) < rng.uniform(0.2, 0.8)
    physician = np.where(rng.random(n) < 0.7, grader, rng.random(n) < 0.5)
    # both labels on both sides, where sklearn and HealthBench's rule coincide
    grader[:2], physician[:2] = [True, False], [False, True]
    pairs = list(zip(grader.tolist(), physician.tolist(), strict=True))
    want = f1_score(physician, grader, average="macro", labels=[True, False])
    assert pooled_balanced_f1(pairs) == pytest.approx(want, abs=1e-12)
    assert class_f1(pairs, True) == pytest.approx(f1_score(physician, grader), abs=1e-12)


def test_pooled_balanced_f1_hand_computed() -> None:
    # grader T,T,F,F against physician T,F,F,F: class True P=1/2 R=1 F1=2/3;
    # class False P=1 R=2/3 F1=4/5; mean 11/15
    pairs = [(True, True), (True, False), (False, False), (False, False)]
    assert pooled_balanced_f1(pairs) == pytest.approx(11 / 15)
    # one grader label pooled against two physicians counts twice, once per physician
    assert pooled_balanced_f1(iter([(True, True), (True, False), (False, False)])) == (
        pytest.approx((2 / 3 + 2 / 3) / 2)
    )


def test_pooled_balanced_f1_zero_division_rule() -> None:
    # the grader never says False: class False has no precision -> undefined (nan)
    assert math.isnan(pooled_balanced_f1([(True, True), (True, False)]))
    # no physician says True: class True has no recall -> undefined
    assert math.isnan(pooled_balanced_f1([(True, False), (False, False)]))
    assert math.isnan(pooled_balanced_f1([]))
    # both defined, no true positive of class True: its F1 is 0, not undefined
    pairs = [(True, False), (False, True), (False, False)]
    assert class_f1(pairs, True) == 0.0
    assert pooled_balanced_f1(pairs) == pytest.approx((0 + 2 * 1 / 4) / 2)


def _labels(rng: np.random.Generator, units: int, raters: int, levels: int) -> np.ndarray:
    """Random labels 1..levels that agree more than chance, about a fifth missing (every unit
    keeps at least one label)."""
    truth = rng.integers(1, levels + 1, size=units)
    noise = rng.integers(1, levels + 1, size=(units, raters))
    labels = np.where(rng.random((units, raters)) < 0.6, truth[:, None], noise).astype(float)
    missing = rng.random((units, raters)) < 0.2
    missing[:, 0] = False
    labels[missing] = np.nan
    return labels


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_krippendorff_alpha_equals_the_krippendorff_package(seed: int, level: str) -> None:
    krippendorff = pytest.importorskip("krippendorff")
    rng = np.random.default_rng(seed)
    labels = _labels(rng, int(rng.integers(10, 80)), int(rng.integers(2, 6)), 2 if seed % 2 else 5)
    want = krippendorff.alpha(reliability_data=labels.T, level_of_measurement=level)
    assert krippendorff_alpha(labels, level) == pytest.approx(want, abs=1e-10)


def test_krippendorff_alpha_hand_computed_and_undefined() -> None:
    # two raters, units (1,1) (1,0) (0,0): coincidences o11=2, o10=o01=1, o00=2; n=6;
    # alpha = 1 - (n-1) * (o10+o01) / (2 * n1 * n0) = 1 - 5 * 2 / (2*3*3) = 4/9
    labels = np.array([[1, 1], [1, 0], [0, 0]], dtype=float)
    assert krippendorff_alpha(labels) == pytest.approx(4 / 9)
    # a unit with one label is not pairable: adding one changes nothing
    assert krippendorff_alpha(np.vstack([labels, [1, np.nan]])) == pytest.approx(4 / 9)
    assert krippendorff_alpha(np.ones((4, 3))) is None  # one value: no expected disagreement
    assert krippendorff_alpha(np.array([[1.0, np.nan], [np.nan, 0.0]])) is None
    with pytest.raises(ValueError):
        krippendorff_alpha(labels, "ratio")


@pytest.mark.parametrize("seed", range(6))
def test_cohen_kappa_equals_sklearn_and_statsmodels(seed: int) -> None:
    from sklearn.metrics import cohen_kappa_score

    rng = np.random.default_rng(seed)
    labels = _labels(rng, 60, 2, 5)
    a, b = labels[:, 0], labels[:, 1]
    both = ~np.isnan(a) & ~np.isnan(b)
    scale = [1.0, 2.0, 3.0, 4.0, 5.0]  # sklearn weights by label index: all levels given
    for weights in (None, "linear", "quadratic"):
        want = cohen_kappa_score(a[both], b[both], labels=scale, weights=weights)
        assert cohen_kappa(a, b, weights) == pytest.approx(want, abs=1e-12)
    inter_rater = pytest.importorskip("statsmodels.stats.inter_rater")
    table = np.zeros((5, 5))
    np.add.at(table, (a[both].astype(int) - 1, b[both].astype(int) - 1), 1)
    assert cohen_kappa(a, b) == pytest.approx(inter_rater.cohens_kappa(table).kappa, abs=1e-12)


def test_cohen_kappa_undefined_cases() -> None:
    assert cohen_kappa(np.ones(4), np.ones(4)) is None  # chance agreement is already 1
    assert cohen_kappa(np.array([np.nan, 1.0]), np.array([1.0, np.nan])) is None
    with pytest.raises(ValueError):
        cohen_kappa(np.ones(2), np.ones(2), "cubic")


def test_strict_majority() -> None:
    labels = np.array(
        [[1, 1, 0], [1, 0, np.nan], [0, np.nan, np.nan], [np.nan] * 3, [2, 3, 2], [1, 2, 3]],
        dtype=float,
    )
    got = strict_majority(labels)
    assert got[0] == 1 and got[2] == 0 and got[4] == 2
    assert np.isnan(got[[1, 3, 5]]).all()  # a tie, no label, a three-way split


# pingouin calls a pandas keyword pandas deprecates: its warning, not ours
@pytest.mark.filterwarnings("ignore:The inplace keyword")
@pytest.mark.parametrize("seed", range(6))
def test_icc_2_1_equals_pingouin(seed: int) -> None:
    pingouin = pytest.importorskip("pingouin")
    import pandas as pd

    rng = np.random.default_rng(seed)
    units, raters = int(rng.integers(5, 40)), int(rng.integers(2, 5))
    scores = rng.integers(1, 6, size=units)[:, None] + rng.normal(0, 1, (units, raters))
    scores += rng.normal(0, 0.5, raters)  # a rater bias, which absolute agreement counts
    long = pd.DataFrame(
        [(u, r, scores[u, r]) for u in range(units) for r in range(raters)],
        columns=["unit", "rater", "score"],
    )
    table = pingouin.intraclass_corr(long, targets="unit", raters="rater", ratings="score")
    # pingouin 0.7 names it ICC(A,1), earlier releases ICC2
    row = table[table["Type"].isin(["ICC(A,1)", "ICC2"])]
    want = float(row["ICC"].iloc[0])
    assert icc_2_1(scores) == pytest.approx(want, abs=1e-10)


def test_icc_2_1_undefined_and_hand_computed() -> None:
    assert icc_2_1(np.ones((4, 2))) is None
    assert icc_2_1(np.array([[1.0, 2.0]])) is None
    assert icc_2_1(np.array([[1.0, np.nan], [2.0, 3.0]])) is None
    # perfect agreement is 1; a constant offset between raters lowers absolute agreement
    assert icc_2_1(np.array([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]])) == pytest.approx(1.0)
    # units 1,2,3, rater b one higher: MSR=4/2=2, MSC=1.5, MSE=0 -> 2 / (2 + 2*1.5/3) = 2/3
    assert icc_2_1(np.array([[1.0, 2.0], [2.0, 3.0], [3.0, 4.0]])) == pytest.approx(2 / 3)


def test_pooled_pairs_pair_each_rater_label() -> None:
    judge = np.array([1.0, 0.0, np.nan])
    raters = np.array([[1.0, 0.0], [np.nan, 0.0], [1.0, 1.0]])
    assert pooled_pairs(judge, raters) == [(True, True), (True, False), (False, False)]
    assert pooled_pairs(judge, np.array([1.0, 1.0, 1.0])) == [(True, True), (False, True)]


def _healthbench_style(pairs: list[tuple[bool, bool]]) -> float:
    """The meta-evaluation's own route, written out for the test: per class, precision as the
    agreement rate over the pairs where the grader gave that class, recall as the agreement
    rate over those where the physician did; a rate over no pairs is undefined, and so is
    then the class's F1 and the balanced mean (nan here)."""

    def rate(flags: list[bool]) -> float | None:
        return sum(flags) / len(flags) if flags else None

    f1s = []
    for cls in (True, False):
        precision = rate([g == p for g, p in pairs if g == cls])
        recall = rate([g == p for g, p in pairs if p == cls])
        if precision is None or recall is None:
            return math.nan
        total = precision + recall
        f1s.append(0.0 if total == 0 else 2 * precision * recall / total)
    return (f1s[0] + f1s[1]) / 2


@pytest.mark.parametrize("seed", range(4))
def test_pooled_balanced_f1_follows_the_meta_evaluation_on_small_sets(seed: int) -> None:
    # small sets reach the undefined cases, where sklearn's macro F1 would say 0
    rng = np.random.default_rng(seed)
    for _ in range(200):
        n = int(rng.integers(0, 6))
        pairs = [(bool(g), bool(p)) for g, p in rng.random((n, 2)) < 0.5]
        want = _healthbench_style(pairs)
        got = pooled_balanced_f1(pairs)
        assert (math.isnan(got) and math.isnan(want)) or got == pytest.approx(want)


@pytest.mark.parametrize("seed", range(4))
def test_rater_standing_equals_numpy_and_scipy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    values = np.round(rng.random(12), 1)  # rounded: ties with the judge's figure occur
    weights = rng.integers(1, 50, size=12).astype(float)
    figures = [(float(v), float(w)) for v, w in zip(values, weights, strict=True)]
    gaps = [(None, 7.0), *figures, (None, 3.0)]  # a rater without a figure is left out
    assert weighted_mean(gaps) == pytest.approx(np.average(values, weights=weights))
    judge = float(values[3])
    others = [None, *map(float, values)]
    want = percentileofscore(values, judge, kind="mean")
    assert percentile_among(judge, others) == pytest.approx(want)


def test_rater_standing_without_figures() -> None:
    assert weighted_mean([]) is None
    assert weighted_mean([(None, 5.0)]) is None
    assert weighted_mean([(0.5, 0.0)]) is None  # no weight left
    assert percentile_among(None, [0.1, 0.2]) is None
    assert percentile_among(0.3, [None]) is None
    assert percentile_among(0.3, [0.3, 0.3]) == 50.0  # all tied: half below
