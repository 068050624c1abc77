"""ClinConsensus's results in the Python API: its metrics as a type checker sees them (the
rule is in clineval.benchmarks.results_view) and its long form, one row per case, criterion
and judge."""

from __future__ import annotations

from clineval.benchmarks.results_view import MetricsView, exploding

# The case's fields repeated on each of its criterion rows (its query and answer are long:
# they stay in the one-row-per-case frame).
_CASE_FIELDS = ("id", "difficulty", "subject", "case_task", "user_role")


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


# One row per verdict (criterion x judge; a panel's own aggregate verdict is a row of its
# own), after the case's slice fields.
long_rows = exploding("verdicts", _CASE_FIELDS)
