"""example-mcq: a clineval benchmark plugin, the template to copy for a new benchmark.

A Chinese medical multiple-choice FIXTURE (12 questions written for this example, not a
benchmark: its scores are plumbing checks). The model answers with an option letter;
accuracy (primary, with a 95% bootstrap interval) and the invalid-answer rate are reported.
Models: `predictions:FILE` (JSON Lines {"id", "answer"}), `openai:...`, `llamacpp:...`.

This module is the declaration clineval reads (through the entry point in pyproject.toml);
task.py does the work. Nothing in clineval names this benchmark.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from clineval.benchmarks import Benchmark, MetricSchema, MetricSpec

if TYPE_CHECKING:
    from clineval.benchmarks import Task

TASK = "example-mcq"

METRICS = MetricSchema(
    (
        # per_sample: the samples.jsonl field whose mean is the figure; compare's paired test
        # and the report's interval come from it, even where this package is not installed
        MetricSpec("accuracy", "share of questions answered with the right letter",
                   per_sample="correct"),
        MetricSpec("invalid_rate", "share of questions without a readable answer", False),
        MetricSpec("n", "questions scored", count=True),
        MetricSpec("n_missing", "questions the model gave no answer to", False, False, True),
    )
)  # fmt: skip


def _task(name: str) -> Task[Any]:
    from clineval_example_mcq.task import McqTask

    return McqTask()


BENCHMARK = Benchmark(
    family=TASK,
    title="Example: Chinese medical multiple choice (FIXTURE)",
    tasks=(TASK,),
    make_task=_task,
    metrics=METRICS,
    capabilities=frozenset({"chat", "predictions"}),
)
