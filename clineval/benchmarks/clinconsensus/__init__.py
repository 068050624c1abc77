"""ClinConsensus (arXiv:2603.02097): a model answers a Chinese clinical query; an LLM judge
checks each of 30 rubric criteria; CACS@7 (primary) and @10, rubric accuracy, pass@k, slices.

The package holds the case and verdict readers (cases, judgements), the official fetch and the
authors' judge prompt (fetch, official_prompt), the metrics, the task (answers, then one judge
call per criterion), its options, statistics, report section and the export to the authors'
judgements file. Generic code knows it only through BENCHMARK below.

Internal: not part of clineval's public API (`clineval`, `clineval.benchmarks`;
docs/architecture.md, "Public API"). A benchmark package imports what it needs from
`clineval.benchmarks`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from clineval.benchmarks.clinconsensus.cases import OFFICIAL_RELATIVE_PATH
from clineval.benchmarks.clinconsensus.common import CLINCONSENSUS_OPTIONS, TASK
from clineval.benchmarks.clinconsensus.fetch import PROMPT_RELATIVE, PROMPT_URL
from clineval.benchmarks.clinconsensus.results_view import (
    ClinConsensusMetricsView as ClinConsensusMetricsView,
)
from clineval.benchmarks.clinconsensus.results_view import long_rows
from clineval.benchmarks.declaration import Benchmark, DataSource, MetricSchema, MetricSpec
from clineval.benchmarks.judged import JUDGED_RUN_SETTINGS, JUDGED_SCORING_SETTINGS
from clineval.data.fetch import Source

if TYPE_CHECKING:
    from clineval.benchmarks.base import Task
    from clineval.benchmarks.declaration import FetchStep
    from clineval.config import RunConfig
    from clineval.export.run_files import ExportSettings, RunFiles
    from clineval.report.rundata import RunData
    from clineval.report.statistics import SampleStatistic

METRICS = MetricSchema(
    (
        MetricSpec(
            "cacs@7",
            "CACS@7: mean of max(0, s - 6) / 24, in percent",
            digits=2,
            basis="n_cases_scored",
        ),
        MetricSpec(
            "cacs@10", "CACS@10 (the paper's later version)", digits=2, basis="n_cases_scored"
        ),
        MetricSpec("rubric_accuracy", "criteria met / criteria judged"),
        MetricSpec("pass@7", "share of cases with at least 7 criteria met", basis="n_cases_scored"),
        MetricSpec("judge_error_rate", "verdicts that could not be obtained", False),
        MetricSpec("n_cases", "cases", count=True),
        MetricSpec(
            "pass@10",
            "share of cases with at least 10 criteria met",
            headline=False,
            basis="n_cases_scored",
        ),
        MetricSpec("judge_errors", "verdicts that could not be obtained", False, False, True),
        MetricSpec("n_cases_scored", "cases with every verdict", headline=False, count=True),
        MetricSpec("candidate_errors", "cases without an answer", False, False, True),
    )
)


def _task(name: str) -> Task[Any]:
    from clineval.benchmarks.clinconsensus.task import ClinConsensusTask

    return ClinConsensusTask()


def _statistics(
    metrics: dict[str, Any], samples: list[dict[str, Any]]
) -> dict[str, SampleStatistic]:
    from clineval.benchmarks.clinconsensus.statistics import cc_statistics

    return cc_statistics(metrics, samples)


def _section(run: RunData, task: str) -> dict[str, Any]:
    from clineval.benchmarks.clinconsensus.report import build

    return build(run, task, METRICS)


def _fetch_step() -> FetchStep:
    from clineval.benchmarks.clinconsensus.fetch import fetch_unpinned

    return fetch_unpinned


def _check_settings(config: RunConfig) -> None:
    from clineval.benchmarks.clinconsensus.official_prompt import judge_prompt

    judge_prompt(config.judge_prompt)  # the file exists, reads, has the placeholders


def _export_judgements(run: RunFiles, out_dir: Path, settings: ExportSettings) -> list[Path]:
    from clineval.benchmarks.clinconsensus.export import export

    return export(run, out_dir, settings)


BENCHMARK = Benchmark(
    family=TASK,
    title="ClinConsensus: rubric-judged answers to Chinese clinical queries",
    tasks=(TASK,),
    make_task=_task,
    metrics=METRICS,
    options=(CLINCONSENSUS_OPTIONS,),
    capabilities=frozenset({"chat", "predictions"}),
    statistics=_statistics,
    report_section=_section,
    # the official judge prompt's source (pinned); then the cases, which have no published hash
    data_sources=(
        DataSource(
            TASK,
            (Source(PROMPT_RELATIVE, PROMPT_URL),),
            _fetch_step,
            offline_hint="clinconsensus_low.jsonl in DATA_DIR/clinconsensus/ "
            "(or pass --cases FILE)",
            provides=(OFFICIAL_RELATIVE_PATH,),
        ),
    ),
    exporters={"clinconsensus-judgements": _export_judgements},
    check_settings=_check_settings,
    scoring_settings=JUDGED_SCORING_SETTINGS,
    # the judge panel and wording, and a verdicts file (its cases are an option: --cases)
    run_settings=(*JUDGED_RUN_SETTINGS, "verdicts"),
    skills_dir=Path(__file__).parent / "skills",
    long_rows=long_rows,
)
