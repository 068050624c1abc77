"""Per-sample statistics of a task's headline metrics, from its samples.jsonl rows, as its
benchmark declares them (`Benchmark.statistics`). They feed the paired bootstrap of `clineval
compare` and the report's intervals for metrics a task stored without one. A metric whose
per-sample data are missing is simply absent; a task no installed benchmark knows has none.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

import numpy as np

from clineval.benchmarks.declaration import Benchmark
from clineval.benchmarks.registry import benchmark_of, guarded, metric_schema
from clineval.reportkit import statistics as st


def statistics_for(
    task: str,
    metrics: dict[str, Any],
    samples: list[dict[str, Any]],
    notes: Mapping[str, Any] | None = None,
) -> dict[str, st.SampleStatistic]:
    """{metric key: per-sample statistic} for the task's headline metrics that allow one: what
    the benchmark's `statistics` computes, and the mean of each metric's declared `per_sample`
    field. The declaration comes from the installed benchmark or, without it, from the run
    record `notes` (so a run of a plugin that is not installed here still gets its tests)."""
    out: dict[str, st.SampleStatistic] = {}
    schema = metric_schema(task, notes)
    if schema is not None:
        for spec in schema.metrics:
            if spec.per_sample is not None and not spec.count:
                stat = _mean_of(samples, spec.per_sample)
                if stat is not None:
                    out[spec.key] = stat
    bench = benchmark_of(task)
    if bench is not None and bench.statistics is not None:
        out.update(guarded(task, "statistics", partial(_declared, bench, metrics, samples)))
    return out


def _declared(
    bench: Benchmark, metrics: dict[str, Any], samples: list[dict[str, Any]]
) -> dict[str, st.SampleStatistic]:
    # resolved inside the guard: a plugin's reference that does not resolve names its package
    compute = bench.statistics_function()
    return {} if compute is None else compute(metrics, samples)


def _mean_of(samples: list[dict[str, Any]], field: str) -> st.SampleStatistic | None:
    """The mean of `field` over the samples that hold a number (or true/false) in it."""
    ids: list[str] = []
    values: list[float] = []
    for row in samples:
        value = row.get(field)
        if "id" not in row or not isinstance(value, bool | int | float):
            continue
        if not np.isfinite(float(value)):
            continue
        ids.append(str(row["id"]))
        values.append(float(value))
    return st.mean_statistic(ids, values) if ids else None
