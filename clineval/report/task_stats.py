"""Per-sample statistics of a task's headline metrics, from its samples.jsonl rows, as its
benchmark declares them (`Benchmark.statistics`). They feed the paired bootstrap of `clineval
compare` and the report's intervals for metrics a task stored without one. A metric whose
per-sample data are missing is simply absent; a task no installed benchmark knows has none.
"""

from __future__ import annotations

from typing import Any

from clineval.benchmarks.registry import benchmark_of
from clineval.report import statistics as st


def statistics_for(
    task: str, metrics: dict[str, Any], samples: list[dict[str, Any]]
) -> dict[str, st.SampleStatistic]:
    """{metric key: per-sample statistic} for the task's headline metrics that allow one."""
    bench = benchmark_of(task)
    if bench is None or bench.statistics is None:
        return {}
    return bench.statistics(metrics, samples)
