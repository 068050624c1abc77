"""TCM-SD (arXiv:2203.10839): a Chinese clinical record -> one of 148 TCM syndromes; Macro-F1
over all 148 labels (primary), accuracy, invalid-output rate.

The package holds the dataset readers (dataset, norm), the SYNTHETIC fixture generator
(synthetic), the official fetch (fetch), the metrics, the model adapters (baselines,
hf_classifier, llm, predictions, answer parsing), the task, its options, statistics and
report section. Generic code knows it only through BENCHMARK below.

Internal: not part of clineval's public API (`clineval`, `clineval.benchmarks`;
docs/architecture.md, "Public API"). A benchmark package imports what it needs from
`clineval.benchmarks`.
"""

from __future__ import annotations

from pathlib import Path

from clineval.benchmarks.declaration import Benchmark, DataSource
from clineval.benchmarks.tcm_sd.fetch import LICENSE_NOTICE
from clineval.benchmarks.tcm_sd.options import TCM_OPTIONS
from clineval.benchmarks.tcm_sd.results_view import TcmSdMetricsView as TcmSdMetricsView
from clineval.benchmarks.tcm_sd.schema import METRICS

FAMILY = "tcm-sd"


BENCHMARK = Benchmark(
    family=FAMILY,
    title="TCM-SD: Chinese clinical record -> one of 148 TCM syndromes",
    tasks=(FAMILY,),
    make_task="clineval.benchmarks.tcm_sd.task:TcmSdTask",
    metrics=METRICS,
    options=(TCM_OPTIONS,),
    capabilities=frozenset({"chat", "checkpoint", "baseline", "predictions"}),
    statistics="clineval.benchmarks.tcm_sd.statistics:tcm_statistics",
    report_section="clineval.benchmarks.tcm_sd.report:build",
    # Pinned by git blob ids, not by the package manifest: all of it in the fetch step.
    data_sources=(
        DataSource(
            FAMILY,
            (),
            "clineval.benchmarks.tcm_sd.fetch:fetch_tcm_sd",
            notice=LICENSE_NOTICE,
            offline_hint="train.json, dev.json, test.json and syndrome_vocab.txt in "
            "DATA_DIR/tcm-sd/",
            # as the task's data status names them (the vocabulary: where the data root has it)
            provides=(
                "tcm-sd/train.json",
                "tcm-sd/dev.json",
                "tcm-sd/test.json",
                "tcm-sd/zy-bert/syndrome_vocab.txt",
            ),
        ),
    ),
    synthesizers={FAMILY: "clineval.benchmarks.tcm_sd.synthetic:write_synthetic"},
    skills_dir=Path(__file__).parent / "skills",
)
