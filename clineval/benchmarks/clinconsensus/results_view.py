"""ClinConsensus's results in the Python API: its metrics as a type checker sees them (the
rule is in clineval.benchmarks.results_view) and its long form, one row per case, criterion
and judge."""

from __future__ import annotations

from typing import Any

from clineval.benchmarks.results_view import MetricsView

# The case's fields repeated on each of its criterion rows (its query and answer are long:
# they stay in the one-row-per-case frame).
_CASE_FIELDS = ("id", "difficulty", "subject", "case_task", "user_role")
_VERDICT_FIELDS = ("criterion_id", "criterion", "judge", "met", "explanation", "error")


class ClinConsensusMetricsView(MetricsView):
    """The metrics of the `clinconsensus` task:
    `RunResult.metrics_as("clinconsensus", ClinConsensusMetricsView)`."""

    cacs_at_7: float | None
    cacs_at_10: float | None
    rubric_accuracy: float | None
    pass_at_7: float | None
    judge_error_rate: float | None
    n_cases: int | None
    pass_at_10: float | None
    judge_errors: int | None
    n_cases_scored: int | None
    candidate_errors: int | None
    cacs_at_7_ci: tuple[float, float] | None
    cacs_at_10_ci: tuple[float, float] | None
    rubric_accuracy_ci: tuple[float, float] | None
    pass_at_7_ci: tuple[float, float] | None
    judge_error_rate_ci: tuple[float, float] | None
    pass_at_10_ci: tuple[float, float] | None


def long_rows(sample: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per verdict of a case's samples.jsonl row (criterion x judge; a panel's own
    aggregate verdict is a row of its own), with the case's slice fields."""
    case = {name: sample.get(name) for name in _CASE_FIELDS}
    return [
        {**case, **{name: verdict.get(name) for name in _VERDICT_FIELDS}}
        for verdict in sample.get("verdicts") or []
        if isinstance(verdict, dict)
    ]
