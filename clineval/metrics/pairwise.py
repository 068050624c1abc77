"""Statistics of pairwise (A vs B) judging, as pure functions: win rate with a paired bootstrap
interval, tie rate, position consistency, and the Bradley-Terry ranking of several systems with
its length-controlled variant (docs/metrics.md, "Pairwise results", names each variant).

A game's outcome is scored from one side: 1.0 a win, 0.5 a tie, 0.0 a loss, nan no verdict (a
judge error). A pairwise item judged in both orders is two games; mapping each order's verdict
back to who wrote the answer is the caller's part, so these functions see outcomes only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from clineval.metrics.bootstrap import DEFAULT_RESAMPLES, bootstrap_indices, percentile_interval

Array = NDArray[np.float64]
WIN, TIE, LOSS = 1.0, 0.5, 0.0
POLICIES = ("tie", "both")


def item_scores(first: Array, second: Array, policy: str = "both") -> Array:
    """One score per item from its two orders' outcomes (each for the same side, nan = no
    verdict). policy "both" (Arena-Hard): both games kept, the item scores their mean. "tie"
    (MT-bench): two orders that disagree make a tie, two that agree keep their outcome. An
    item with no verdict in either order is nan; with one verdict, that verdict."""
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r} (known: {POLICIES})")
    first, second = np.asarray(first, dtype=np.float64), np.asarray(second, dtype=np.float64)
    both = np.column_stack([first, second])
    answered = ~np.isnan(both).all(axis=1)
    out = np.full(first.shape, np.nan)
    out[answered] = np.nanmean(both[answered], axis=1)
    if policy == "tie":
        disagree = ~np.isnan(first) & ~np.isnan(second) & (first != second)
        out[disagree] = TIE
    return out


def win_rate(scores: Array) -> float | None:
    """(wins + ties / 2) / n over the items (or games) with a verdict; None when none has."""
    scores = np.asarray(scores, dtype=np.float64)
    scores = scores[~np.isnan(scores)]
    return float(scores.mean()) if scores.size else None


def tie_rate(outcomes: Array) -> float | None:
    """Share of the games with a verdict that are ties."""
    outcomes = np.asarray(outcomes, dtype=np.float64)
    outcomes = outcomes[~np.isnan(outcomes)]
    return float((outcomes == TIE).mean()) if outcomes.size else None


def position_consistency(first: Array, second: Array) -> float | None:
    """Share of the items, among those with a verdict in both orders, whose two orders give the
    same outcome for the same side (a tie in both counts as agreeing)."""
    first, second = np.asarray(first, dtype=np.float64), np.asarray(second, dtype=np.float64)
    both = ~np.isnan(first) & ~np.isnan(second)
    return float((first[both] == second[both]).mean()) if both.any() else None


@dataclass(frozen=True)
class Estimate:
    """A point estimate, its percentile bootstrap interval, and the resamples behind it."""

    value: float
    low: float
    high: float
    n: int  # the units resampled (items, or groups of games)
    n_resamples: int


def win_rate_interval(
    scores: Array, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0, level: float = 0.95
) -> Estimate | None:
    """The win rate with a paired percentile bootstrap interval: items are resampled with
    replacement, each whole, so the games of one item (its two orders, or two systems'
    answers to it) stay together. `scores` is (items,) or (items, games); nan games are left
    out of their item; an item with none is left out. Seeded: the same seed, the same interval.
    """
    scores = np.asarray(scores, dtype=np.float64)
    scores = scores[:, None] if scores.ndim == 1 else scores
    scores = scores[~np.isnan(scores).all(axis=1)]
    if scores.shape[0] == 0:
        return None
    points = np.nansum(scores, axis=1)  # per item: its score total and its game count
    games = (~np.isnan(scores)).sum(axis=1).astype(np.float64)
    draws = bootstrap_indices(points.size, n_resamples, seed)
    replicates = points[draws].sum(axis=1) / games[draws].sum(axis=1)
    low, high = percentile_interval(replicates, level)
    return Estimate(float(points.sum() / games.sum()), low, high, points.size, n_resamples)


# ---- Bradley-Terry --------------------------------------------------------------------------


class NoEstimate(ValueError):
    """The maximum-likelihood strengths do not exist (a system won or lost every game against
    the rest, or the comparisons do not connect all systems) or the fit did not converge."""


def _log_likelihood(x: Array, y: Array, weights: Array, beta: Array) -> float:
    z = x @ beta
    # log p = -log(1 + e^-z), log(1 - p) = -log(1 + e^z), without overflow
    return float((weights * (-y * np.logaddexp(0.0, -z) - (1.0 - y) * np.logaddexp(0.0, z))).sum())


def _logistic(x: Array, y: Array, weights: Array) -> Array:
    """Coefficients of a logistic regression without intercept and without penalty, y a
    share in [0, 1] (a tie 0.5, the same as one win and one loss), by Newton's method with
    step halving (the log-likelihood is concave; halving keeps every step uphill)."""
    beta = np.zeros(x.shape[1])
    current = _log_likelihood(x, y, weights, beta)
    for _ in range(200):
        p = np.exp(-np.logaddexp(0.0, -(x @ beta)))
        gradient = x.T @ (weights * (y - p))
        hessian = (x * (weights * p * (1.0 - p))[:, None]).T @ x
        try:
            step = np.linalg.solve(hessian, gradient)
        except np.linalg.LinAlgError:
            raise NoEstimate("the fit is singular (the comparisons do not pin it down)") from None
        for _ in range(40):
            trial = _log_likelihood(x, y, weights, beta + step)
            if trial >= current - 1e-12:
                break
            step /= 2.0
        beta, current = beta + step, trial
        if np.abs(step).max() < 1e-10:
            return beta
        if np.abs(beta).max() > 50.0:  # odds beyond e^50: the maximum is at infinity
            break
    raise NoEstimate("the fit did not converge (a separation: some side always wins)")


@dataclass(frozen=True)
class Games:
    """Pairwise games between systems: a[i] met b[i] and scored outcome[i] (1 a won, 0.5 a
    tie, 0 b won); optional answer lengths for the length-controlled fit; optional groups
    (an item's id) that a bootstrap resamples whole."""

    a: Sequence[str]
    b: Sequence[str]
    outcome: Array
    length_a: Array | None = None
    length_b: Array | None = None
    groups: Sequence[str] | None = None

    def kept(self) -> NDArray[np.bool_]:
        return ~np.isnan(np.asarray(self.outcome, dtype=np.float64))


# the name the public authoring surface (clineval.benchmarks) gives the games
PairwiseGames = Games


@dataclass(frozen=True)
class Ranking:
    """Bradley-Terry strengths (natural-log odds scale: P(i beats j) = 1 / (1 + e^(s_j - s_i)),
    centred on the mean of all systems, or 0 for `anchor`), and, for the length-controlled fit,
    the coefficient of the standardised length difference."""

    strengths: dict[str, float]
    length_coefficient: float | None = None


@dataclass(frozen=True)
class _Coded:
    """Games with a verdict as arrays: system codes (indexes into the sorted systems), the
    outcome for a, and the normalised length difference (len_a - len_b) / (len_a + len_b)."""

    a: NDArray[np.intp]
    b: NDArray[np.intp]
    y: Array
    diff: Array | None

    def take(self, rows: NDArray[np.intp]) -> _Coded:
        diff = None if self.diff is None else self.diff[rows]
        return _Coded(self.a[rows], self.b[rows], self.y[rows], diff)


def win_probability(ranking: Ranking, system: str, other: str) -> float:
    """P(system beats other) under the fitted strengths, a tie counted half: the win rate
    against a baseline that Arena-Hard reports from its Bradley-Terry fit."""
    gap = ranking.strengths[other] - ranking.strengths[system]
    return float(1.0 / (1.0 + np.exp(gap)))


def _coded(games: Games, systems: list[str], style: bool) -> tuple[_Coded, NDArray[np.bool_]]:
    """The games as `_Coded` (those with a verdict), and which games were kept."""
    keep = games.kept()
    index = {s: i for i, s in enumerate(systems)}
    a = np.array([index.get(s, -1) for s in games.a], dtype=np.intp)
    b = np.array([index.get(s, -1) for s in games.b], dtype=np.intp)
    diff = None
    if style:
        if games.length_a is None or games.length_b is None:
            raise ValueError("the length-controlled fit needs length_a and length_b")
        la = np.asarray(games.length_a, dtype=np.float64)
        lb = np.asarray(games.length_b, dtype=np.float64)
        total = la + lb
        diff = np.divide(la - lb, total, out=np.zeros_like(total), where=total > 0)[keep]
    outcome = np.asarray(games.outcome, dtype=np.float64)[keep]
    return _Coded(a[keep], b[keep], outcome, diff), keep


def _connected(a: NDArray[np.intp], b: NDArray[np.intp], took: Array, gave: Array, k: int) -> bool:
    """Ford's condition for the strengths to exist: however the systems are split in two,
    each part has won or tied some game against the other (the graph of "took something
    from" is strongly connected). took / gave: what a took from b / b from a, per pairing."""
    source = np.concatenate([a[took > 0], b[gave > 0]])
    target = np.concatenate([b[took > 0], a[gave > 0]])
    graph = csr_matrix((np.ones(source.size), (source, target)), shape=(k, k))
    parts, _ = connected_components(graph, directed=True, connection="strong")
    return bool(parts == 1)


def _fit(games: _Coded, k: int, anchor: int | None) -> tuple[Array, float | None]:
    """Strengths of the k systems (centred, or 0 at `anchor`) and the length coefficient."""
    if games.y.size == 0 or np.bincount(np.concatenate([games.a, games.b]), minlength=k).min() == 0:
        raise NoEstimate("every system needs a game with a verdict")
    if games.diff is None:
        # Without a covariate, a pairing's games are summed up by their count and their
        # total score (sufficient statistics): the same likelihood, k^2 rows at most.
        pairing = games.a * k + games.b
        count = np.bincount(pairing, minlength=k * k).astype(np.float64)
        total = np.bincount(pairing, weights=games.y, minlength=k * k).astype(np.float64)
        met = np.nonzero(count)[0]
        a, b, weights = met // k, met % k, count[met]
        y = total[met] / weights
        if not _connected(a, b, total[met], weights - total[met], k):
            raise NoEstimate(
                "the Bradley-Terry strengths do not exist: some systems won (or lost) every "
                "game against the rest, or never met them"
            )
    else:
        a, b, y, weights = games.a, games.b, games.y, np.ones(games.y.size)
    rows = np.arange(y.size)
    x = np.zeros((y.size, k))
    x[rows, a] += 1.0
    x[rows, b] -= 1.0
    x = x[:, 1:]  # the first system's strength is 0 in the fit; centred afterwards
    if games.diff is not None:
        spread = games.diff.std()
        centred = games.diff - games.diff.mean()
        x = np.column_stack([x, centred / spread if spread > 0 else centred])
    beta = _logistic(x, y, weights)
    strengths = np.concatenate([[0.0], beta[: k - 1]])
    strengths -= strengths[anchor] if anchor is not None else strengths.mean()
    return strengths, float(beta[-1]) if games.diff is not None else None


def _systems(games: Games, anchor: str | None, systems: Sequence[str] | None) -> list[str]:
    keep = games.kept()
    played = {s for s, k in zip(games.a, keep, strict=True) if k}
    played |= {s for s, k in zip(games.b, keep, strict=True) if k}
    ranked = sorted(played) if systems is None else sorted(set(systems))
    if anchor is not None and anchor not in ranked:
        raise ValueError(f"anchor {anchor!r} is not one of the systems")
    if len(ranked) < 2 or not played.issuperset(ranked):
        raise NoEstimate("every system needs a game with a verdict, and there must be two")
    return ranked


def bradley_terry(
    games: Games,
    anchor: str | None = None,
    length_controlled: bool = False,
    systems: Sequence[str] | None = None,
) -> Ranking:
    """Bradley-Terry strengths by maximum likelihood: a logistic regression without intercept
    and without penalty on +1/-1 system indicators, a tie half a win each way (Arena-Hard's
    fit). `length_controlled` adds the normalised length difference (len_a - len_b) /
    (len_a + len_b), standardised over the games, as a covariate (Arena-Hard's style
    control), so that the strengths are what remains once a longer answer's pull is accounted
    for. Raises NoEstimate when the maximum-likelihood strengths do not exist. `systems`
    (default: those that played) fixes the systems ranked; each must have played."""
    ranked = _systems(games, anchor, systems)
    coded, _ = _coded(games, ranked, length_controlled)
    strengths, length = _fit(coded, len(ranked), None if anchor is None else ranked.index(anchor))
    return Ranking({s: float(v) for s, v in zip(ranked, strengths, strict=True)}, length)


@dataclass(frozen=True)
class RankingIntervals:
    """The point fit, each system's percentile bootstrap interval, and the resamples whose fit
    had no estimate (left out of the intervals, counted here)."""

    ranking: Ranking
    intervals: dict[str, tuple[float, float]]
    n_resamples: int
    n_failed: int


def _group_rows(groups: list[str], draws: NDArray[np.intp]) -> list[NDArray[np.intp]]:
    """Per resample, the rows of the drawn groups (a group's rows together, in draw order)."""
    order = {g: i for i, g in enumerate(dict.fromkeys(groups))}
    members = np.array([order[g] for g in groups], dtype=np.intp)
    by_group = np.argsort(members, kind="stable")
    sizes = np.bincount(members, minlength=len(order))
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    out = []
    for draw in draws:
        counts = sizes[draw]
        offsets = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
        out.append(by_group[np.repeat(starts[draw], counts) + offsets])
    return out


def bradley_terry_intervals(
    games: Games,
    anchor: str | None = None,
    length_controlled: bool = False,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    level: float = 0.95,
) -> RankingIntervals:
    """`bradley_terry` with percentile bootstrap intervals: games resampled with replacement,
    by `games.groups` when given (an item's games stay together; groups in order of first
    appearance), else one by one. Games without a verdict stay out. A resample without an
    estimate is left out and counted; fewer than half estimable raises NoEstimate.
    """
    point = bradley_terry(games, anchor, length_controlled)
    systems = sorted(point.strengths)
    coded, keep = _coded(games, systems, length_controlled)
    if games.groups is None:
        groups = [str(i) for i in range(coded.y.size)]
    else:
        groups = [str(g) for g, k in zip(games.groups, keep, strict=True) if k]
    draws = bootstrap_indices(len(set(groups)), n_resamples, seed)
    at = None if anchor is None else systems.index(anchor)
    replicates, failed = [], 0
    for rows in _group_rows(groups, draws):
        try:
            replicates.append(_fit(coded.take(rows), len(systems), at)[0])
        except NoEstimate:
            failed += 1
    if 2 * len(replicates) < n_resamples:
        raise NoEstimate(f"{failed} of {n_resamples} resamples have no Bradley-Terry estimate")
    values = np.array(replicates)
    intervals = {s: percentile_interval(values[:, i], level) for i, s in enumerate(systems)}
    return RankingIntervals(point, intervals, n_resamples, failed)
