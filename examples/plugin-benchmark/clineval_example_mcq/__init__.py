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
    from clineval.report.statistics import SampleStatistic

TASK = "example-mcq"

METRICS = MetricSchema(
    (
        MetricSpec("accuracy", "share of questions answered with the right letter"),
        MetricSpec("invalid_rate", "share of questions without a readable answer", False),
        MetricSpec("n", "questions scored", count=True),
        MetricSpec("n_missing", "questions the model gave no answer to", False, False, True),
    )
)


def _task(name: str) -> Task[Any]:
    from clineval_example_mcq.task import McqTask

    return McqTask()


def _statistics(
    metrics: dict[str, Any], samples: list[dict[str, Any]]
) -> dict[str, SampleStatistic]:
    """Per-question correctness: what compare's paired bootstrap resamples."""
    from clineval.report.statistics import mean_statistic

    rows = [r for r in samples if "correct" in r]
    if not rows:
        return {}
    ids = [str(r["id"]) for r in rows]
    correct = [float(bool(r["correct"])) for r in rows]
    return {"accuracy": mean_statistic(ids, correct, [str(r["gold"]) for r in rows])}


BENCHMARK = Benchmark(
    family=TASK,
    title="Example: Chinese medical multiple choice (FIXTURE)",
    tasks=(TASK,),
    make_task=_task,
    metrics=METRICS,
    capabilities=frozenset({"chat", "predictions"}),
    statistics=_statistics,
)
