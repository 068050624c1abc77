"""example-mcq: a clineval benchmark plugin, the template to copy for a new benchmark.

A Chinese medical multiple-choice FIXTURE (12 questions written for this example, not a
benchmark: its scores are plumbing checks). The model answers with an option letter;
accuracy (primary, with a 95% bootstrap interval) and the invalid-answer rate are reported.
Models: `predictions:FILE` (JSON Lines {"id", "answer"}), `openai:...`, `llamacpp:...`.

This module is the declaration clineval reads (through the entry point in pyproject.toml);
task.py does the work. Nothing in clineval names this benchmark.
"""

from __future__ import annotations

from clineval.benchmarks import Benchmark, MetricSchema, MetricSpec, MetricsView

TASK = "example-mcq"

METRICS = MetricSchema(
    (
        # per_sample: the samples.jsonl field whose mean is the figure; compare's paired test
        # and the report's interval come from it, even where this package is not installed
        MetricSpec("accuracy", "share of questions answered with the right letter",
                   per_sample="correct"),
        MetricSpec("invalid_rate", "share of questions without a readable answer", False),
        MetricSpec("n", "questions scored", count=True),
    )
)  # fmt: skip


class McqMetricsView(MetricsView):
    """The metrics for type checkers: `RunResult.metrics_as(TASK, McqMetricsView).accuracy`."""

    accuracy: float | None
    invalid_rate: float | None
    n: int | None
    accuracy_ci: tuple[float, float] | None
    invalid_rate_ci: tuple[float, float] | None


BENCHMARK = Benchmark(
    family=TASK,
    title="Example: Chinese medical multiple choice (FIXTURE)",
    tasks=(TASK,),
    # "module:attribute", imported only when the task is used: listing the tasks stays cheap
    make_task="clineval_example_mcq.task:McqTask",
    metrics=METRICS,
    capabilities=frozenset({"chat", "predictions"}),
)
