"""Pairwise verdicts mapped back to who wrote the answers (pure functions).

A pairwise item is judged twice (two games): the candidate's answer in position A, then in
position B. A game's label (judge/kinds.py `Categorical`) means a score for the answer in
position A (1 win, 0.5 tie, 0 loss) and a weight (Arena-Hard counts a strong verdict `A>>B` as
3 games); in the game where the candidate stands in B its score is 1 minus that. The figures
(win rate and its interval, tie rate, position consistency, the disagreement policies) are
clineval.metrics.pairwise's; `game_rows` lays the games out as it reads them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from clineval.judge.kinds import ARENA_HARD_PAIRWISE, MT_BENCH_PAIRWISE, Categorical


@dataclass(frozen=True)
class PairwiseScale:
    """A categorical kind whose labels say which position won: `outcomes[label]` is the
    (score of the answer in position A, weight) of a game judged `label`."""

    kind: Categorical
    outcomes: Mapping[str, tuple[float, float]]

    def __post_init__(self) -> None:
        if set(self.outcomes) != set(self.kind.labels):
            raise ValueError(f"a pairwise scale maps every label: {self.kind.labels}")
        for score, weight in self.outcomes.values():
            if score not in (0.0, 0.5, 1.0) or weight not in (1.0, 2.0, 3.0, 4.0, 5.0):
                raise ValueError("a game's score is 0, 0.5 or 1 and its weight 1 to 5 games")

    def game(self, label: str, candidate_first: bool) -> tuple[float, float]:
        """(the candidate's score, the game's weight) of a game judged `label`."""
        score, weight = self.outcomes[label]
        return (score if candidate_first else 1.0 - score), weight


MT_BENCH = PairwiseScale(MT_BENCH_PAIRWISE, {"A": (1.0, 1.0), "B": (0.0, 1.0), "C": (0.5, 1.0)})
ARENA_HARD = PairwiseScale(
    ARENA_HARD_PAIRWISE,
    {
        "A>>B": (1.0, 3.0),
        "A>B": (1.0, 1.0),
        "A=B": (0.5, 1.0),
        "B>A": (0.0, 1.0),
        "B>>A": (0.0, 3.0),
    },
)


def game_rows(
    games: Sequence[tuple[tuple[float, float], tuple[float, float]] | None], policy: str
) -> list[list[float]]:
    """One row of game scores per item, as clineval.metrics.pairwise pools them (sum over
    count, items resampled whole), padded with nan. `games[i]` is the item's two games'
    (candidate score, weight), or None (no verdict in an order: the item is left out).
    Policy "both" (Arena-Hard) keeps both games, a game of weight w repeated w times (a strong
    verdict counts 3 games, as Arena-Hard's fit counts it); "tie" (MT-bench) keeps one score:
    the common outcome of two orders that agree, else a tie."""
    rows: list[list[float]] = []
    for item in games:
        if item is None:
            rows.append([math.nan])
        elif policy == "tie":
            (first, _), (second, _) = item
            rows.append([first if first == second else 0.5])
        else:
            rows.append([score for score, weight in item for _ in range(round(weight))])
    width = max((len(r) for r in rows), default=1)
    return [r + [math.nan] * (width - len(r)) for r in rows]
