"""Benchmarks: one package per family (ner/, tcm_sd/, clinconsensus/), the registry, and what
a benchmark is built from. A package outside clineval adds a benchmark by exporting a
`Benchmark` under the entry-point group `clineval.benchmarks` (examples/plugin-benchmark/).

The names below are the API for benchmark authors; they load on first use so that importing a
benchmark module does not import the model stack.
"""

from __future__ import annotations

import importlib
from typing import Any

_HOME = {
    "Benchmark": "clineval.benchmarks.declaration",
    "DataSource": "clineval.benchmarks.declaration",
    "MetricSchema": "clineval.benchmarks.declaration",
    "MetricSpec": "clineval.benchmarks.declaration",
    "MetricsView": "clineval.benchmarks.results_view",
    "attribute_key": "clineval.benchmarks.results_view",
    "DataFileStatus": "clineval.benchmarks.base",
    "RunContext": "clineval.benchmarks.base",
    "Task": "clineval.benchmarks.base",
    "TaskResult": "clineval.benchmarks.base",
    "PREDICTION": "clineval.benchmarks.kit",
    "accuracy_with_interval": "clineval.benchmarks.kit",
    "parse_choice": "clineval.benchmarks.kit",
    "pending": "clineval.benchmarks.kit",
    "plan_by_chat": "clineval.benchmarks.kit",
    "predict_by_chat": "clineval.benchmarks.kit",
    "read_predictions": "clineval.benchmarks.kit",
    "select_samples": "clineval.benchmarks.kit",
}
__all__ = sorted(_HOME)


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module 'clineval.benchmarks' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOME[name]), name)


def __dir__() -> list[str]:
    return __all__
