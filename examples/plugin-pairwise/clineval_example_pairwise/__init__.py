"""example-pairwise: a pairwise judged clineval benchmark plugin, the template to copy for an
MT-bench-style comparison (the candidate's answer against a reference answer, judged in both
orders; the judge replies [[A]], [[B]] or [[C]] for a tie).

A FIXTURE of 4 clinical questions with reference answers written for this example (not a
benchmark: its scores are plumbing checks); `--option example-pairwise.items=FILE` reads
JSON Lines {"id", "question", "reference"} instead. `win_rate` (the primary figure) is the
candidate's wins plus half its ties over the items; two orders that disagree are a tie
(`--option example-pairwise.disagreement=both` keeps both games, Arena-Hard's way).

This module is the declaration clineval reads (through the entry point in pyproject.toml);
task.py holds the items and the wording. Nothing in clineval names this benchmark.
"""

from __future__ import annotations

from clineval.benchmarks import (
    JUDGED_RUN_SETTINGS,
    PAIRWISE_SCORING_SETTINGS,
    Benchmark,
    Option,
    exploding,
    pairwise_metrics,
    pairwise_options,
    pairwise_statistics,
    text,
)

TASK = "example-pairwise"
ITEMS = Option(
    "items",
    text(),
    'JSON Lines {"id", "question", "reference"} (default: the FIXTURE shipped here)',
    None,
    changes_requests=True,  # other items are other requests: a resume must not mix them
)
OPTIONS = pairwise_options(TASK, "the example-pairwise task", ITEMS)

BENCHMARK = Benchmark(
    family=TASK,
    title="Example: pairwise comparison with a reference answer (FIXTURE)",
    tasks=(TASK,),
    # "module:attribute", imported only when the task is used
    make_task="clineval_example_pairwise.task:PairwiseExample",
    metrics=pairwise_metrics("(wins + ties / 2) / items, against the reference answer"),
    options=(OPTIONS,),
    capabilities=frozenset({"chat", "predictions"}),
    statistics=pairwise_statistics,
    # --max-judge-error-rate applies to this task (a game has no "not met")
    scoring_settings=PAIRWISE_SCORING_SETTINGS,
    # --judge, --judge-base-url and --judge-prompt apply to this task
    run_settings=JUDGED_RUN_SETTINGS,
    # RunResult.long_frame: one row per verdict (game x judge) of an item
    long_rows=exploding("verdicts", ("id", "score")),
)
