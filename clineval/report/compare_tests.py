"""How many bootstrap resamples compare draws, and the paired tests of one column.

A bootstrap p-value with B resamples is at least 2 / (B + 1) (the +1 correction), and Holm's
correction multiplies the smallest of m p-values by m. With a fixed B = 1,000 and eight runs
(m = 28 pairs) no pair can fall below 0.05 whatever the data, and a p-value near the threshold
lands on either side depending on the seed. So each column (task, metric) starts with enough
resamples that the smallest attainable Holm-adjusted p-value is a tenth of ALPHA, and draws
more (doubling, up to MAX_RESAMPLES, or fewer on a test set so large that the draws would take
more than about ten seconds: DRAW_BUDGET) while any Holm comparison is within three Monte Carlo
standard errors of ALPHA: the decision is then the one the exact bootstrap (B -> infinity)
would make, whatever the seed. A decision still that close at the cap is reported as such.
`--resamples N` fixes B (no doubling); the output says when that B cannot reach ALPHA at all.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from clineval.report import statistics as st

# The level a leaderboard marks a best value at, after Holm's correction for the pairs tested.
ALPHA = 0.05
MIN_RESAMPLES = 2_000
MAX_RESAMPLES = 256_000
# The smallest attainable Holm-adjusted p-value is at most ALPHA / FLOOR_MARGIN.
FLOOR_MARGIN = 10
# A decision is settled once its Holm-scaled p-value is this many Monte Carlo SEs from ALPHA.
SETTLED_SES = 3.0
# Doubling stops before a column draws more sample indices than this (about ten seconds of
# draws): on a large test set a p-value at the threshold is reported open instead.
DRAW_BUDGET = 1_000_000_000


@dataclass(frozen=True)
class ColumnResamples:
    """How the paired tests of one column were drawn."""

    resamples: int
    adaptive: bool  # False: fixed by --resamples
    # a Holm decision still within SETTLED_SES standard errors of ALPHA at this B
    undecided: bool
    # 2m / (B + 1) >= ALPHA: this B cannot separate any pair at all
    too_few: bool

    def describe(self) -> str:
        text = f"{self.resamples:,} resamples" + ("" if self.adaptive else " (--resamples)")
        if self.too_few:
            text += f"; too few for any Holm-adjusted p below {ALPHA}"
        elif self.undecided:
            text += f"; a p-value is too close to {ALPHA} to decide at this number"
        return text


def initial_resamples(m: int, alpha: float = ALPHA) -> int:
    """The B (a multiple of 1,000, at least MIN_RESAMPLES) at which the smallest attainable
    Holm-adjusted p-value of m tests, 2m / (B + 1), is at most alpha / FLOOR_MARGIN."""
    need = math.ceil(2 * max(m, 1) * FLOOR_MARGIN / alpha) - 1
    return min(MAX_RESAMPLES, max(MIN_RESAMPLES, math.ceil(need / 1000) * 1000))


def undecided(p_values: list[float], resamples: int, alpha: float = ALPHA) -> bool:
    """Whether any step of Holm's procedure compares a p-value within SETTLED_SES Monte Carlo
    standard errors of alpha (the i-th smallest of m is compared as (m - i + 1) p to alpha)."""
    finite = sorted(p for p in p_values if math.isfinite(p))
    m = len(finite)
    for rank, p in enumerate(finite):
        scale = m - rank
        q = min(max(p, 1.0 / (resamples + 1)), 1.0)
        se = scale * 2.0 * math.sqrt(q / 2.0 * (1.0 - q / 2.0) / resamples)
        if abs(scale * p - alpha) < SETTLED_SES * se:
            return True
    return False


def too_few(m: int, resamples: int, alpha: float = ALPHA) -> bool:
    return m > 0 and 2.0 * m / (resamples + 1) >= alpha


class ReplicateCache:
    """Each run's replicates of a statistic on a set of samples, drawn once per column and
    extended when more resamples are needed (the first B draws of a larger B are the same)."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self._store: dict[tuple[object, tuple[str, ...]], NDArray[np.float64]] = {}

    def get(self, owner: object, stat: st.SampleStatistic, resamples: int) -> NDArray[np.float64]:
        key = (owner, tuple(stat.ids))
        have = self._store.get(key)
        if have is None or have.size < resamples:
            have = st.replicates(stat, resamples, self.seed)
            self._store[key] = have
        return have[:resamples]


Aligned = tuple[object, st.SampleStatistic, object, st.SampleStatistic]


def column_tests(
    pairs: list[Aligned], cache: ReplicateCache, fixed: int | None = None
) -> tuple[list[st.PairedResult], ColumnResamples]:
    """The paired tests of one column's pairs (owner A, statistic A, owner B, statistic B;
    each pair aligned on its shared samples), drawn as the module docstring says."""
    m = len(pairs)
    resamples = fixed if fixed is not None else initial_resamples(m)
    # sample indices one resample draws for the column: each run's sample set once (the
    # cache's keys)
    drawn = {(o, tuple(s.ids)) for a, sa, b, sb in pairs for o, s in ((a, sa), (b, sb))}
    per_resample = sum(len(ids) for _, ids in drawn)
    ceiling = max(resamples, min(MAX_RESAMPLES, DRAW_BUDGET // max(per_resample, 1)))
    while True:
        results = [
            st.paired_result(sa, sb, cache.get(a, sa, resamples), cache.get(b, sb, resamples))
            for a, sa, b, sb in pairs
        ]
        open_call = undecided([r.p_value for r in results], resamples)
        if fixed is not None or not open_call or resamples >= ceiling:
            break
        resamples = min(ceiling, 2 * resamples)
    return results, ColumnResamples(resamples, fixed is None, open_call, too_few(m, resamples))
