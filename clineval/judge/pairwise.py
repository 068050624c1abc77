"""Pairwise verdicts mapped back to who wrote the answers, and their figures (pure functions).

A pairwise item is judged twice (two games): the candidate's answer in position A, then in
position B. A game's label (judge/kinds.py `Categorical`) means a score for the answer in
position A (1 win, 0.5 tie, 0 loss) and a weight (Arena-Hard counts a strong verdict `A>>B` as
3 games); in the game where the candidate stands in B its score is 1 minus that.

Two orders that disagree follow a named policy:
  tie   MT-bench's: the item's outcome is the two games' common outcome when they agree, else a
        tie (0.5); one game's weight
  both  Arena-Hard's: both games are kept, each with its weight; the item contributes
        weight-weighted wins (ties half) over its games' weight
win_rate = sum of the items' weighted wins / sum of their weights (with `tie` and unit
weights, (wins + ties / 2) / items; with `both`, the share Bradley-Terry estimates for two
players, ties as half a win). position_consistency = share of the items judged in both orders
whose two games give the candidate the same outcome (win, tie or loss).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from clineval.judge.kinds import ARENA_HARD_PAIRWISE, MT_BENCH_PAIRWISE, Categorical

POLICIES = ("tie", "both")


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
            if score not in (0.0, 0.5, 1.0) or not weight > 0:
                raise ValueError("a game's score is 0, 0.5 or 1 and its weight positive")

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


@dataclass(frozen=True)
class PairResult:
    """One item's two games combined: `wins` (weighted, ties half) over `weight`, whether
    its orders agree, and its tied games (or a tied outcome) for the tie rate."""

    wins: float
    weight: float
    consistent: bool
    ties: float  # tie policy: 1 when the item's outcome is a tie; both: tied games
    games: int  # what `ties` is counted over (1 item, or its 2 games)

    @property
    def score(self) -> float:
        return self.wins / self.weight


def combine(
    first: tuple[float, float], second: tuple[float, float], policy: str = "tie"
) -> PairResult:
    """The item's result from its two games' (candidate score, weight)."""
    if policy not in POLICIES:
        raise ValueError(f"unknown pairwise policy {policy!r} (known: {POLICIES})")
    consistent = first[0] == second[0]
    if policy == "tie":
        outcome = first[0] if consistent else 0.5
        return PairResult(outcome, 1.0, consistent, float(outcome == 0.5), 1)
    wins = first[0] * first[1] + second[0] * second[1]
    ties = float(first[0] == 0.5) + float(second[0] == 0.5)
    return PairResult(wins, first[1] + second[1], consistent, ties, 2)


def pairwise_figures(results: Sequence[PairResult]) -> dict[str, float | None]:
    """win_rate, tie_rate and position_consistency over the scored items."""
    if not results:
        return {"win_rate": None, "tie_rate": None, "position_consistency": None}
    weight = sum(r.weight for r in results)
    win_rate = sum(r.wins for r in results) / weight
    tie_rate = sum(r.ties for r in results) / sum(r.games for r in results)
    return {
        "win_rate": win_rate,
        "tie_rate": tie_rate,
        "position_consistency": sum(r.consistent for r in results) / len(results),
    }
