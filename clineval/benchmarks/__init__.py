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
    # the judging kit (judged benchmarks: docs/architecture.md, "Where to add things")
    "Criterion": "clineval.benchmarks.judged",
    "JudgedItem": "clineval.benchmarks.judged",
    "JudgePanel": "clineval.benchmarks.judged",
    "Judging": "clineval.benchmarks.judged",
    "ReplyBounds": "clineval.benchmarks.judged",
    "answer_text": "clineval.benchmarks.judged",
    "error_rate_failures": "clineval.benchmarks.judged",
    "judge_options": "clineval.benchmarks.judged",
    "stored_answers": "clineval.benchmarks.judged",
    "stored_verdicts": "clineval.benchmarks.judged",
    "verdict_matrix": "clineval.benchmarks.judged",
    "plan_judged": "clineval.benchmarks.judged_flow",
    "predict_judged": "clineval.benchmarks.judged_flow",
    "JudgedData": "clineval.benchmarks.judged_task",
    "JudgedTask": "clineval.benchmarks.judged_task",
    "judged_metrics": "clineval.benchmarks.judged_task",
    "score_statistics": "clineval.benchmarks.judged_task",
    "JudgePrompt": "clineval.judge.prompt",
    "VerdictRecord": "clineval.judge.verdict",
    "verdict_key": "clineval.judge.verdict",
    # what reading a benchmark's own files needs
    "InputError": "clineval.errors",
    "iter_json_objects": "clineval.jsonl",
}
__all__ = sorted(_HOME)


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module 'clineval.benchmarks' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOME[name]), name)


def __dir__() -> list[str]:
    return __all__
