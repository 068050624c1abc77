"""CACS@k, pass@k, rubric accuracy and the curve against hand-computed values and the survival
form 100 / (N-k+1) * sum_{L=k..N} share(s >= L)."""

from __future__ import annotations

import numpy as np
import pytest

from clineval.benchmarks.clinconsensus.metrics import (
    cacs,
    cacs_terms,
    case_level_metrics,
    pass_at_k,
    reverse_ecdf,
    rubric_accuracy,
    rubric_accuracy_interval,
)


def test_cacs_hand_computed() -> None:
    s = [30, 7, 6, 10]
    # k=7: max(0, s-6) = 24, 1, 0, 4 -> 29; 100 * 29 / (4 * 24)
    assert cacs(s, 30, 7) == pytest.approx(100 * 29 / 96)
    # k=10: max(0, s-9) = 21, 0, 0, 1 -> 22; 100 * 22 / (4 * 21)
    assert cacs(s, 30, 10) == pytest.approx(100 * 22 / 84)
    assert cacs([30, 30], 30, 7) == 100.0
    assert cacs([0, 6, 3], 30, 7) == 0.0
    # k=1 is the plain mean share of criteria met: (3 + 1) / (2 * 3)
    assert cacs([3, 1], 3, 1) == pytest.approx(100 * 4 / 6)


def test_pass_at_k_and_accuracy_hand_computed() -> None:
    s = [30, 7, 6, 10]
    assert pass_at_k(s, 7) == 0.75
    assert pass_at_k(s, 10) == 0.5
    assert pass_at_k(s, 31) == 0.0
    # pooled, not a mean of per-case ratios: (1 + 9) / (2 + 10) = 10/12, not (0.5 + 0.9)/2
    assert rubric_accuracy([1, 9], [2, 10]) == pytest.approx(10 / 12)
    assert np.isnan(rubric_accuracy([0], [0]))


@pytest.mark.parametrize("seed", range(5))
def test_cacs_equals_survival_form_on_random_data(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 30
    s = rng.integers(0, n + 1, size=int(rng.integers(1, 400)))
    for k in range(1, n + 1):
        survival = sum(float(np.mean(s >= level)) for level in range(k, n + 1))
        assert cacs(s, n, k) == pytest.approx(100 * survival / (n - k + 1), abs=1e-9)


def test_reverse_ecdf_matches_brute_force() -> None:
    rng = np.random.default_rng(3)
    s = rng.integers(0, 31, size=57)
    curve = reverse_ecdf(s, 30)
    assert curve.shape == (31,)
    assert curve[0] == 1.0
    for level in range(31):
        assert curve[level] == pytest.approx(np.mean(s >= level))
    assert np.all(np.diff(curve) <= 0)


def test_invalid_inputs() -> None:
    with pytest.raises(ValueError):
        cacs([1, 2], 3, 4)  # k > N
    with pytest.raises(ValueError):
        cacs_terms([31], 30, 7)
    with pytest.raises(ValueError):
        cacs_terms([-1], 30, 7)
    assert np.isnan(cacs([], 30, 7))


def test_case_level_metrics_intervals_are_seeded_and_bracket_the_estimate() -> None:
    rng = np.random.default_rng(0)
    s = rng.integers(0, 31, size=200)
    a = case_level_metrics(s, 30, (7, 10), n_resamples=500, seed=1)
    b = case_level_metrics(s, 30, (7, 10), n_resamples=500, seed=1)
    c = case_level_metrics(s, 30, (7, 10), n_resamples=500, seed=2)
    assert a == b
    assert a["cacs@7_ci95"] != c["cacs@7_ci95"]
    for k in (7, 10):
        low, high = a[f"cacs@{k}_ci95"]
        assert low < a[f"cacs@{k}"] < high
        assert a[f"cacs@{k}"] == pytest.approx(cacs(s, 30, k))
        assert a[f"pass@{k}"] == pytest.approx(pass_at_k(s, k))
    # k beyond N is reported as null (e.g. a smoke run that judges 3 criteria a case)
    small = case_level_metrics([1, 3], 3, (2, 7), n_resamples=10)
    assert small["cacs@7"] is None and small["pass@7"] is None
    assert small["cacs@2"] == pytest.approx(100 * (0 + 2) / (2 * 2))


def test_rubric_accuracy_interval() -> None:
    met = np.array([10, 20, 25, 5])
    judged = np.array([30, 30, 30, 30])
    low, high = rubric_accuracy_interval(met, judged, 400, seed=0) or (None, None)
    assert low is not None and high is not None
    assert low <= rubric_accuracy(met, judged) <= high
    assert rubric_accuracy_interval([], [], 10) is None
