"""HealthBench (arXiv:2505.08775): health conversations graded per physician-written rubric
criterion by an LLM grader, scored as the authors' code does; and its meta-evaluation (the model
as grader, against physicians). Built on `clineval.benchmarks` alone, as a plugin would be
(each module's docstring says what it holds).

Internal: not part of clineval's public API (`clineval`, `clineval.benchmarks`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from clineval.benchmarks import (
    JUDGED_RUN_SETTINGS,
    JUDGED_SCORING_SETTINGS,
    Benchmark,
    DataSource,
    MetricSchema,
    MetricSpec,
    MetricsView,
    Option,
    OptionGroup,
    choice,
    exploding,
    judge_options,
    judged_metrics,
    score_statistics,
    text,
)
from clineval.benchmarks.healthbench.data import FILES, META

FAMILY = "healthbench"
TASKS = ("healthbench", "healthbench:hard", "healthbench:consensus")
_JUDGED = judge_options(FAMILY, "the healthbench tasks")
_OWN = (  # name, parser, help, default, changes the requests
    ("cases", text(), "a file in the authors' layout instead of the fetched one, or fixture "
     "(our own FIXTURE in that layout; results say fixture: true)", None, True),
    ("completions", choice("model", "ideal"), "model: the candidate answers; ideal: grade the "
     "data's physician completions (no candidate; examples without one left out)", "model", True),
    ("clip", choice("mean", "sample"), "mean: clip each figure's mean to [0, 1] (the authors); "
     "sample: clip each example's score first (inspect_evals)", "mean", False),
    ("meta_reference", choice("pairwise", "majority"), "meta-eval: pairwise (the authors' "
     "figures); majority: inspect_evals' majority_f1 besides them", "pairwise", False),
)  # fmt: skip
OPTIONS = OptionGroup(
    FAMILY,
    "the healthbench tasks",
    (*_JUDGED.options, *(Option(n, p, h, d, c, not c) for n, p, h, d, c in _OWN)),
)
_SHARED: Any = {  # the judged settings both families read, and the prompt checked up front
    "options": (OPTIONS,),
    "check_settings": "clineval.benchmarks.healthbench.task:check_prompt",
    "scoring_settings": JUDGED_SCORING_SETTINGS,
    "run_settings": JUDGED_RUN_SETTINGS,
}

BENCHMARK = Benchmark(
    family=FAMILY,
    title="HealthBench: rubric-graded health conversations (the authors' scoring)",
    tasks=TASKS,
    make_task="clineval.benchmarks.healthbench.task:HealthBenchTask",
    metrics=judged_metrics(
        "clipped mean over examples of points met / positive points",
        MetricSpec("score:bootstrap_std", "std of 1,000 clipped bootstrap means", headline=False),
    ),
    capabilities=frozenset({"chat", "predictions"}),
    statistics=score_statistics,  # compare resamples the examples' unclipped scores
    report_section="clineval.benchmarks.healthbench.report:build",
    data_sources=(
        DataSource(
            FAMILY,
            unpinned="clineval.benchmarks.healthbench.data:fetch",
            offline_hint="the authors' four .jsonl files in DATA_DIR/healthbench/ (or "
            "--option healthbench.cases=FILE)",
            provides=tuple(f"healthbench/{name}" for name in FILES.values()),
        ),
    ),
    **_SHARED,
    skills_dir=Path(__file__).parent / "skills",
    long_rows=exploding("verdicts", ("id", "score")),
)

META_BENCHMARK = Benchmark(
    family="healthbench-meta",
    title="HealthBench meta-evaluation: the grader under test against physicians",
    tasks=(META,),
    make_task="clineval.benchmarks.healthbench.task:MetaEvalTask",
    metrics=MetricSchema(
        (
            MetricSpec("balanced_f1", "pooled pairwise balanced F1 against each physician"),
            MetricSpec("physician_mean", "the physicians' n-weighted leave-one-out figure"),
            MetricSpec("grader_percentile", "the grader's percentile among the physicians"),
            MetricSpec("majority_f1", "macro F1 vs each row's majority", headline=False),
            MetricSpec("judge_error_rate", "labels that could not be obtained", False),
            MetricSpec("n_items", "rows", count=True),
            MetricSpec("judge_errors", "labels that could not be obtained", False, False, True),
        )
    ),
    capabilities=frozenset({"chat"}),
    report_section="clineval.benchmarks.healthbench.report:build_meta_eval",
    **_SHARED,
)


class HealthBenchMetricsView(MetricsView):
    """The metrics of `healthbench`, `:hard` and `:consensus` as a type checker sees them (by
    the rule in clineval.benchmarks.results_view): `RunResult.metrics_as(task, view)`."""

    score: float | None
    criteria_met_rate: float | None
    judge_error_rate: float | None
    n_items: int | None
    n_items_scored: int | None
    judge_errors: int | None
    candidate_errors: int | None
    score_bootstrap_std: float | None
    score_ci: tuple[float, float] | None
    criteria_met_rate_ci: tuple[float, float] | None
    judge_error_rate_ci: tuple[float, float] | None
    score_bootstrap_std_ci: tuple[float, float] | None


class HealthBenchMetaEvalMetricsView(MetricsView):
    """The metrics of `healthbench:meta-eval`."""

    balanced_f1: float | None
    physician_mean: float | None
    grader_percentile: float | None
    majority_f1: float | None
    judge_error_rate: float | None
    n_items: int | None
    judge_errors: int | None
    balanced_f1_ci: tuple[float, float] | None
    physician_mean_ci: tuple[float, float] | None
    grader_percentile_ci: tuple[float, float] | None
    majority_f1_ci: tuple[float, float] | None
    judge_error_rate_ci: tuple[float, float] | None
