"""Clinical NER as the NCER benchmark defines it (arXiv:2410.05046): four corpora, entity types
mapped to OMOP CDM domains, token macro-F1 (primary) and nervaluate's span F1s.

The package holds the corpora's readers and preparation (pubtator, bioc, brat, chia, corpora),
the metrics (tokens, token_f1, span_f1), the model adapters (crf, hf_tagger, gliner_tagger,
llm, predictions), the task (task.py), its options, statistics and report section. Generic
code knows it only through BENCHMARK below.

Internal: not part of clineval's public API (`clineval`, `clineval.benchmarks`;
docs/architecture.md, "Public API"). A benchmark package imports what it needs from
`clineval.benchmarks`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from clineval.benchmarks.declaration import Benchmark, DataSource, MetricSchema, MetricSpec
from clineval.benchmarks.ner.options import NER_OPTIONS
from clineval.benchmarks.ner.records import DATASET_TYPES

if TYPE_CHECKING:
    from clineval.benchmarks.base import Task
    from clineval.report.rundata import RunData
    from clineval.report.statistics import SampleStatistic

FAMILY = "ner"
TASKS = tuple(f"{FAMILY}:{dataset}" for dataset in DATASET_TYPES)

METRICS = MetricSchema(
    (
        MetricSpec("token_macro_f1", "token-level macro F1 over the dataset's types (NCER)"),
        MetricSpec("span_partial_f1", "span F1, same type and overlapping (nervaluate ent_type)"),
        MetricSpec("span_exact_f1", "span F1, exact offsets and type (nervaluate strict)"),
        *(
            MetricSpec(f"{name}_{part}", f"{part} of {name}", headline=False)
            for name in ("token_macro", "span_partial", "span_exact")
            for part in ("precision", "recall")
        ),
        MetricSpec("n_documents", "documents scored", headline=False, count=True),
        MetricSpec("n_gold_spans", "gold spans", headline=False, count=True),
        MetricSpec("n_pred_spans", "predicted spans", headline=False, count=True),
        MetricSpec("missing_predictions", "documents with no prediction", False, False, True),
    ),
    tables=("per_type",),
)


def _task(name: str) -> Task[Any]:
    from clineval.benchmarks.ner.task import NerTask

    return NerTask(name.removeprefix(f"{FAMILY}:"))


def _statistics(
    metrics: dict[str, Any], samples: list[dict[str, Any]]
) -> dict[str, SampleStatistic]:
    from clineval.benchmarks.ner.statistics import ner_statistics

    return ner_statistics(metrics, samples)


def _section(run: RunData, task: str) -> dict[str, Any]:
    from clineval.benchmarks.ner.report import build

    return build(run, task, METRICS)


def _sources() -> tuple[DataSource, ...]:
    from clineval.benchmarks.ner.sources import SOURCES

    return tuple(DataSource(name, files) for name, files in SOURCES.items())


BENCHMARK = Benchmark(
    family=FAMILY,
    title="Clinical NER (NCER: NCBI Disease, BC5CDR, BioRED, CHIA; OMOP CDM types)",
    tasks=TASKS,
    make_task=_task,
    metrics=METRICS,
    options=(NER_OPTIONS,),
    capabilities=frozenset({"chat", "checkpoint", "baseline", "predictions", "span_tagger"}),
    statistics=_statistics,
    report_section=_section,
    data_sources=_sources(),
    skills_dir=Path(__file__).parent / "skills",
)
