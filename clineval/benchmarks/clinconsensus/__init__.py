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

from clineval.benchmarks.clinconsensus.cases import OFFICIAL_RELATIVE_PATH
from clineval.benchmarks.clinconsensus.common import CLINCONSENSUS_OPTIONS, TASK
from clineval.benchmarks.clinconsensus.fetch import PROMPT_RELATIVE, PROMPT_URL
from clineval.benchmarks.clinconsensus.results_view import (
    ClinConsensusMetricsView as ClinConsensusMetricsView,
    long_rows,
)
from clineval.benchmarks.declaration import Benchmark, DataSource
from clineval.benchmarks.judged import JUDGED_RUN_SETTINGS, JUDGED_SCORING_SETTINGS
from clineval.data.fetch import Source
from clineval.metrics.schema import MetricSchema, MetricSpec

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


BENCHMARK = Benchmark(
    family=TASK,
    title="ClinConsensus: rubric-judged answers to Chinese clinical queries",
    tasks=(TASK,),
    make_task="clineval.benchmarks.clinconsensus.task:ClinConsensusTask",
    metrics=METRICS,
    options=(CLINCONSENSUS_OPTIONS,),
    capabilities=frozenset({"chat", "predictions"}),
    statistics="clineval.benchmarks.clinconsensus.statistics:cc_statistics",
    report_section="clineval.benchmarks.clinconsensus.report:build",
    # the official judge prompt's source (pinned); then the cases, which have no published hash
    data_sources=(
        DataSource(
            TASK,
            (Source(PROMPT_RELATIVE, PROMPT_URL),),
            "clineval.benchmarks.clinconsensus.fetch:fetch_unpinned",
            offline_hint="clinconsensus_low.jsonl in DATA_DIR/clinconsensus/ "
            "(or pass --cases FILE)",
            provides=(OFFICIAL_RELATIVE_PATH,),
        ),
    ),
    exporters={"clinconsensus-judgements": "clineval.benchmarks.clinconsensus.export:export"},
    # the file --judge-prompt names exists, reads and has the placeholders
    check_settings="clineval.benchmarks.clinconsensus.official_prompt:check_judge_prompt",
    scoring_settings=JUDGED_SCORING_SETTINGS,
    # the judge panel and wording (its cases and a verdicts file are options: --cases,
    # --verdicts)
    run_settings=JUDGED_RUN_SETTINGS,
    skills_dir=Path(__file__).parent / "skills",
    long_rows=long_rows,
)
