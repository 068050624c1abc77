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

from clineval.benchmarks.declaration import Benchmark
from clineval.benchmarks.ner.options import NER_OPTIONS
from clineval.benchmarks.ner.records import DATASET_TYPES
from clineval.benchmarks.ner.results_view import NerMetricsView as NerMetricsView, long_rows
from clineval.benchmarks.ner.sources import DATA_SOURCES
from clineval.metrics.schema import MetricSchema, MetricSpec

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


BENCHMARK = Benchmark(
    family=FAMILY,
    title="Clinical NER (NCER: NCBI Disease, BC5CDR, BioRED, CHIA; OMOP CDM types)",
    tasks=TASKS,
    make_task="clineval.benchmarks.ner.task:NerTask",
    metrics=METRICS,
    options=(NER_OPTIONS,),
    capabilities=frozenset({"chat", "checkpoint", "baseline", "predictions", "span_tagger"}),
    statistics="clineval.benchmarks.ner.statistics:ner_statistics",
    report_section="clineval.benchmarks.ner.report:build",
    data_sources=DATA_SOURCES,
    skills_dir=Path(__file__).parent / "skills",
    long_rows=long_rows,
)
