"""The agreement statistics (clineval.metrics.agreement) against independent oracles:
scikit-learn, krippendorff, pingouin and statsmodels on random label sets with missing
labels, and hand-computed cases for the edge rules."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import f1_score

from clineval.benchmarks import pooled_balanced_f1
from clineval.metrics.agreement import class_f1


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
