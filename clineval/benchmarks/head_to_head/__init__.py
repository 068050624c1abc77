"""head-to-head: finished runs of one generative task judged against each other by a pairwise
judge, with no candidate call (`clineval head-to-head RUN RUN ... --judge SPEC -o OUT`).

Not a benchmark of its own data: its items are the items every compared run answered, each
pair of runs judged in both orders (MT-bench's [[A]] / [[B]] / [[C]]), read from the pairs
file the command writes into the output directory and passes as a `predictions:` file (the
answers were made elsewhere; the manifest records the file's sha256). Its figures: each run's
win rate over each other with a paired bootstrap interval, tie rate, position consistency,
and for more than two runs a Bradley-Terry ranking with bootstrap intervals beside its
length-controlled fit (docs/judging.md, "Head-to-head of finished runs").

Internal: not part of clineval's public API (`clineval`, `clineval.benchmarks`;
docs/architecture.md, "Public API"). A benchmark package imports what it needs from
`clineval.benchmarks`.
"""

from __future__ import annotations

from clineval.benchmarks import (
    JUDGED_RUN_SETTINGS,
    PAIRWISE_SCORING_SETTINGS,
    Benchmark,
    MetricSpec,
    exploding,
    pairwise_metrics,
    pairwise_options,
)
from clineval.benchmarks.head_to_head.results_view import (
    HeadToHeadMetricsView as HeadToHeadMetricsView,
)

TASK = "head-to-head"
OPTIONS = pairwise_options(TASK, "the head-to-head task")


BENCHMARK = Benchmark(
    family=TASK,
    title="Head-to-head: finished runs judged against each other (pairwise, both orders)",
    tasks=(TASK,),
    make_task="clineval.benchmarks.head_to_head.task:HeadToHeadTask",
    # besides these figures, results.json holds `runs`, `pairs` (every pair's figures) and
    # `bradley_terry` / `bradley_terry_length_controlled` (strengths with intervals)
    metrics=pairwise_metrics(
        "the first run's (wins + ties / 2) / items against the second run (every pair: `pairs`)",
        MetricSpec(
            "length_effect",
            "the length-controlled Bradley-Terry fit's coefficient of the standardised "
            "normalised length difference (log-odds of a win per standard deviation)",
            headline=False,
        ),
    ),
    options=(OPTIONS,),
    capabilities=frozenset({"predictions"}),
    statistics="clineval.benchmarks.head_to_head.statistics:head_to_head_statistics",
    report_section="clineval.benchmarks.head_to_head.report:build",
    scoring_settings=PAIRWISE_SCORING_SETTINGS,
    run_settings=JUDGED_RUN_SETTINGS,
    long_rows=exploding("verdicts", ("id", "score")),
)
