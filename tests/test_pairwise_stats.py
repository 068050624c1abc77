"""Pairwise statistics (clineval.metrics.pairwise) against hand-computed cases and against
logistic-regression fits by statsmodels and scikit-learn."""

from __future__ import annotations

import contextlib
import math

import numpy as np
import pytest

from clineval.metrics.bootstrap import bootstrap_indices
from clineval.metrics.pairwise import (
    Games,
    NoEstimate,
    bradley_terry,
    bradley_terry_intervals,
    item_scores,
    position_consistency,
    tie_rate,
    win_probability,
    win_rate,
    win_rate_interval,
)

nan = math.nan


def test_a_judge_that_always_answers_a() -> None:
    # the candidate stands first, then second: "A" is a candidate win, then a candidate loss
    first, second = np.ones(20), np.zeros(20)
    assert position_consistency(first, second) == 0.0
    for policy in ("tie", "both"):
        assert win_rate(item_scores(first, second, policy)) == 0.5
    assert tie_rate(item_scores(first, second, "tie")) == 1.0  # MT-bench: each pair a tie
    assert tie_rate(np.concatenate([first, second])) == 0.0  # Arena-Hard: the games kept


def test_a_judge_that_prefers_the_candidate_wherever_it_stands() -> None:
    first = second = np.ones(20)
    assert position_consistency(first, second) == 1.0
    assert win_rate(item_scores(first, second, "tie")) == 1.0


def test_item_scores_and_rates_by_hand() -> None:
    first = np.array([1.0, 1.0, 0.5, 0.0, nan, nan])
    second = np.array([1.0, 0.5, 0.5, 1.0, 0.0, nan])
    assert item_scores(first, second, "both")[:5].tolist() == [1.0, 0.75, 0.5, 0.5, 0.0]
    assert item_scores(first, second, "tie")[:5].tolist() == [1.0, 0.5, 0.5, 0.5, 0.0]
    assert math.isnan(item_scores(first, second)[5])
    assert position_consistency(first, second) == pytest.approx(2 / 4)
    # (wins + ties / 2) / n: 1 win, 2 ties, 1 loss over 4
    assert win_rate(np.array([1.0, 0.5, 0.5, 0.0, nan])) == 0.5
    assert tie_rate(np.array([1.0, 0.5, 0.5, 0.0, nan])) == 0.5
    assert win_rate(np.array([nan])) is None and position_consistency(first[4:], second[4:]) is None
    with pytest.raises(ValueError):
        item_scores(first, second, "mean")


def test_win_rate_interval_is_a_seeded_item_bootstrap() -> None:
    rng = np.random.default_rng(0)
    games = rng.choice([0.0, 0.5, 1.0], size=(50, 2), p=[0.3, 0.2, 0.5])
    games[3, 1] = nan  # one game without a verdict: its item keeps the other
    got = win_rate_interval(games, n_resamples=500, seed=7)
    assert got is not None and got.n == 50
    assert got.value == pytest.approx(np.nanmean(games))
    # the oracle: resample items whole with the same draws, pool their games
    draws = bootstrap_indices(50, 500, 7)
    replicates = [np.nanmean(games[d]) for d in draws]
    want = np.quantile(replicates, [0.025, 0.975])
    assert (got.low, got.high) == pytest.approx(tuple(want))
    assert got == win_rate_interval(games, n_resamples=500, seed=7)
    assert got.low <= got.value <= got.high
    assert win_rate_interval(np.array([nan, nan])) is None


def test_bradley_terry_two_systems_by_hand() -> None:
    # a beats b 3 times in 4: s_a - s_b = log 3; a tie is half a win each way
    games = Games(["a"] * 4, ["b"] * 4, np.array([1.0, 1.0, 1.0, 0.0]))
    fit = bradley_terry(games)
    assert fit.strengths["a"] - fit.strengths["b"] == pytest.approx(math.log(3))
    assert fit.strengths["a"] + fit.strengths["b"] == pytest.approx(0.0)
    tied = Games(["a", "b", "a", "a"], ["b", "a", "b", "b"], np.array([1.0, 0.0, 0.5, 0.0]))
    # a's share: 1 + 1 + 0.5 + 0 of 4 -> odds 2.5 / 1.5
    fit = bradley_terry(tied, anchor="b")
    assert fit.strengths == pytest.approx({"a": math.log(2.5 / 1.5), "b": 0.0})


def _random_games(seed: int, n: int = 300) -> tuple[Games, list[str]]:
    rng = np.random.default_rng(seed)
    systems = ["s0", "s1", "s2", "s3"]
    true = {"s0": 0.0, "s1": 0.5, "s2": -0.4, "s3": 1.0}
    a, b, out, la, lb = [], [], [], [], []
    for _ in range(n):
        i, j = rng.choice(4, size=2, replace=False)
        length_a, length_b = rng.integers(50, 500, size=2)
        z = (
            true[systems[i]]
            - true[systems[j]]
            + 0.8 * (length_a - length_b) / (length_a + length_b)
        )
        u = rng.random()
        p = 1 / (1 + math.exp(-z))
        outcome = 0.5 if abs(u - p) < 0.1 else float(u < p)
        a.append(systems[i])
        b.append(systems[j])
        out.append(outcome)
        la.append(length_a)
        lb.append(length_b)
    games = Games(a, b, np.array(out), np.array(la, float), np.array(lb, float))
    return games, systems


def _design(games: Games, systems: list[str]) -> np.ndarray:
    x = np.zeros((len(games.a), len(systems)))
    for r, (sa, sb) in enumerate(zip(games.a, games.b, strict=True)):
        x[r, systems.index(sa)] += 1
        x[r, systems.index(sb)] -= 1
    return x[:, 1:]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_bradley_terry_equals_statsmodels_and_sklearn(seed: int) -> None:
    sm = pytest.importorskip("statsmodels.api")
    from sklearn.linear_model import LogisticRegression

    games, systems = _random_games(seed)
    x, y = _design(games, systems), np.asarray(games.outcome)
    glm = sm.GLM(y, x, family=sm.families.Binomial()).fit(tol=1e-12)
    fit = bradley_terry(games, anchor="s0")
    want = dict(zip(systems, [0.0, *glm.params], strict=True))
    assert fit.strengths == pytest.approx(want, abs=1e-6)
    # Arena-Hard's form: every game twice, a tie a win in one copy and a loss in the other
    doubled = np.vstack([x, x])
    wins = np.concatenate([y == 1.0, (y == 1.0) | (y == 0.5)]).astype(int)
    lr = LogisticRegression(fit_intercept=False, C=np.inf, tol=1e-10, max_iter=10_000)
    lr.fit(doubled, wins)
    assert fit.strengths == pytest.approx(
        dict(zip(systems, [0.0, *lr.coef_[0]], strict=True)), abs=1e-4
    )


@pytest.mark.parametrize("seed", [1, 2])
def test_length_controlled_fit_equals_statsmodels(seed: int) -> None:
    sm = pytest.importorskip("statsmodels.api")
    games, systems = _random_games(seed)
    la, lb = np.asarray(games.length_a), np.asarray(games.length_b)
    style = (la - lb) / (la + lb)
    style = (style - style.mean()) / style.std()
    x = np.column_stack([_design(games, systems), style])
    glm = sm.GLM(np.asarray(games.outcome), x, family=sm.families.Binomial()).fit(tol=1e-12)
    fit = bradley_terry(games, anchor="s0", length_controlled=True)
    want = dict(zip(systems, [0.0, *glm.params[:-1]], strict=True))
    assert fit.strengths == pytest.approx(want, abs=1e-6)
    assert fit.length_coefficient == pytest.approx(glm.params[-1], abs=1e-6)
    assert fit.length_coefficient > 0  # the simulated judge favours length
    with pytest.raises(ValueError):
        bradley_terry(Games(games.a, games.b, games.outcome), length_controlled=True)


def test_bradley_terry_without_an_estimate() -> None:
    # a never loses or ties: its strength is unbounded
    never_loses = Games(["a", "a", "b"], ["b", "c", "c"], np.array([1.0, 1.0, 0.5]))
    with pytest.raises(NoEstimate):
        bradley_terry(never_loses)
    # two groups that never met
    apart = Games(["a", "a", "c", "c"], ["b", "b", "d", "d"], np.array([1.0, 0.0, 1.0, 0.0]))
    with pytest.raises(NoEstimate):
        bradley_terry(apart)
    with pytest.raises(NoEstimate):
        bradley_terry(Games(["a"], ["b"], np.array([nan])))


def test_bradley_terry_intervals_resample_groups() -> None:
    games, systems = _random_games(4, n=120)
    items = [f"item-{i // 2}" for i in range(120)]  # two games per item, kept together
    grouped = Games(games.a, games.b, games.outcome, groups=items)
    got = bradley_terry_intervals(grouped, n_resamples=200, seed=3)
    assert got == bradley_terry_intervals(grouped, n_resamples=200, seed=3)
    point = bradley_terry(grouped).strengths
    assert got.ranking.strengths == pytest.approx(point)
    for s in systems:
        low, high = got.intervals[s]
        assert low < point[s] < high
    # the oracle: the same draws over the 60 items, each refitted
    draws = bootstrap_indices(60, 200, 3)
    fits = []
    for draw in draws:
        rows = np.concatenate([[2 * g, 2 * g + 1] for g in draw])
        sub = Games([games.a[r] for r in rows], [games.b[r] for r in rows], games.outcome[rows])
        with contextlib.suppress(NoEstimate):
            fits.append(bradley_terry(sub, systems=systems).strengths["s3"])
    assert got.n_failed == 200 - len(fits)
    assert got.intervals["s3"] == pytest.approx(tuple(np.quantile(fits, [0.025, 0.975])))


def test_games_without_a_verdict_change_nothing_and_win_probability() -> None:
    games, _ = _random_games(6, n=150)
    outcome = np.concatenate([games.outcome, [nan, nan]])
    more = Games(
        [*games.a, "s0", "s1"],
        [*games.b, "s1", "s2"],
        outcome,
        np.concatenate([games.length_a, [1.0, 1e6]]),
        np.concatenate([games.length_b, [1e6, 1.0]]),
    )
    for controlled in (False, True):
        want = bradley_terry(games, length_controlled=controlled)
        got = bradley_terry(more, length_controlled=controlled)
        assert got.strengths == pytest.approx(want.strengths)
    # two systems, a won 3 of 4: the fitted P(a beats b) is the observed 3/4
    fit = bradley_terry(Games(["a"] * 4, ["b"] * 4, np.array([1.0, 1.0, 1.0, 0.0])))
    assert win_probability(fit, "a", "b") == pytest.approx(0.75)
    assert win_probability(fit, "b", "a") == pytest.approx(0.25)
