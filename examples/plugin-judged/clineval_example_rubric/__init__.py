"""example-rubric: a judged clineval benchmark plugin, the template to copy for a rubric-graded
benchmark (HealthBench's shape: each criterion carries points, some negative).

A FIXTURE of 4 clinical questions written for this example (not a benchmark: its scores are
plumbing checks). The candidate answers; each criterion is judged met or not by the judges of
`--judge` (default: the candidate judges itself); an item's score is the points of its met
criteria over its positive points, clipped to [0, 1], and `score` is their mean.
Models: `openai:...`, `llamacpp:...`, or `predictions:FILE` (JSON Lines {"id", "answer"},
judged by `--judge`). Options: `--option example-rubric.judge_retries=N` and the rest of
`clineval tasks --options`.

This module is the declaration clineval reads (through the entry point in pyproject.toml);
task.py holds the items, the wording and the score. Nothing in clineval names this benchmark.
"""

from __future__ import annotations

from clineval.benchmarks import (
    JUDGED_RUN_SETTINGS,
    JUDGED_SCORING_SETTINGS,
    Benchmark,
    exploding,
    judge_options,
    judged_metrics,
    score_statistics,
)

TASK = "example-rubric"
OPTIONS = judge_options(TASK, "the example-rubric task")


BENCHMARK = Benchmark(
    family=TASK,
    title="Example: point-weighted rubric grading (FIXTURE)",
    tasks=(TASK,),
    # "module:attribute", imported only when the task is used (task.py imports numpy)
    make_task="clineval_example_rubric.task:RubricTask",
    metrics=judged_metrics("mean of clip(points met / positive points, 0, 1)"),
    options=(OPTIONS,),
    capabilities=frozenset({"chat", "predictions"}),
    statistics=score_statistics,
    # --judge-errors-as-unmet and --max-judge-error-rate apply to this task
    scoring_settings=JUDGED_SCORING_SETTINGS,
    # --judge, --judge-base-url and --judge-prompt apply to this task
    run_settings=JUDGED_RUN_SETTINGS,
    # RunResult.long_frame: one row per verdict (criterion x judge) of an item
    long_rows=exploding("verdicts", ("id", "score")),
)
