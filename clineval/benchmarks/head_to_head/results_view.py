"""head-to-head's metrics as a type checker sees them (the rule: clineval.benchmarks.MetricsView).
The per-pair figures and the rankings are in `values` (results.json's `pairs`,
`bradley_terry`, `bradley_terry_length_controlled`)."""

from __future__ import annotations

from clineval.benchmarks import MetricsView


class HeadToHeadMetricsView(MetricsView):
    """`RunResult.metrics_as("head-to-head", HeadToHeadMetricsView)`."""

    win_rate: float | None
    position_consistency: float | None
    tie_rate: float | None
    judge_error_rate: float | None
    n_items: int | None
    n_items_scored: int | None
    judge_errors: int | None
    candidate_errors: int | None
    length_effect: float | None
    win_rate_ci: tuple[float, float] | None
    position_consistency_ci: tuple[float, float] | None
    tie_rate_ci: tuple[float, float] | None
    judge_error_rate_ci: tuple[float, float] | None
    length_effect_ci: tuple[float, float] | None
