"""TCM-SD's metrics as a type checker sees them (the rule is in
clineval.benchmarks.results_view). Its long form is its samples: one row per record."""

from __future__ import annotations

from typing import Any

from clineval.benchmarks.results_view import MetricsView


class TcmSdMetricsView(MetricsView):
    """The metrics of the `tcm-sd` task: `RunResult.metrics_as("tcm-sd", TcmSdMetricsView)`."""

    macro_f1: float | None
    present_macro_f1: float | None
    accuracy: float | None
    invalid_rate: float | None
    n: int | None
    n_invalid: int | None
    n_missing: int | None
    macro_f1_ci: tuple[float, float] | None
    present_macro_f1_ci: tuple[float, float] | None
    accuracy_ci: tuple[float, float] | None
    invalid_rate_ci: tuple[float, float] | None
    per_class: dict[str, Any]
