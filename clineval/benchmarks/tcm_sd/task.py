"""TCM-SD (arXiv:2203.10839): a Chinese clinical record -> one of 148 syndromes.

The task in its three steps, each in its own module:
load      tcm_sd_data: the official JSON Lines splits from the data root (or, only when asked
          with `--option tcm.data=synthetic`, the project's synthetic fixture generated into
          the run directory), the 148 labels in vocabulary order, --dedupe / --limit / --shard
predict   tcm_sd_predict: by backend; each output goes to the run store as `prediction`
          records keyed by sample id, and ids already stored are skipped (resume)
evaluate  tcm_sd_score: from the stored predictions only: Macro-F1 over all 148 labels,
          accuracy, invalid rate, seeded bootstrap intervals, per-class P/R/F1,
          head/middle/tail, confusions

Options: the `tcm.*` keys declared once in tcm_options (`clineval tasks --options` lists
them with their defaults and help).
"""

from __future__ import annotations

from pathlib import Path

from clineval.benchmarks.base import DataFileStatus, RunContext, Task, TaskResult
from clineval.benchmarks.kit import pending, plan_by_chat
from clineval.benchmarks.tcm_sd.dataset import SPLITS, VOCAB_NAME, find_file, find_split
from clineval.benchmarks.tcm_sd.options import TCM_OPTIONS
from clineval.benchmarks.tcm_sd.predict import predict_data
from clineval.benchmarks.tcm_sd.samples import (
    TASK,
    TcmData,
    fetched_split,
    load_data,
    record_fields,
)
from clineval.benchmarks.tcm_sd.scoring import evaluate_data
from clineval.data.cache import default_cache_dir
from clineval.plan import CallPlan


class TcmSdTask(Task[TcmData]):
    name = TASK
    family = TASK
    option_group = TCM_OPTIONS
    description = "TCM-SD: Chinese clinical record -> one of 148 syndromes"

    def data_status(self, data_root: Path | None) -> list[DataFileStatus]:
        out = []
        roots = [data_root] if data_root else []
        for split in SPLITS:
            path, synthetic = find_split(data_root, split) if data_root else (None, False)
            status = "missing" if path is None else ("ok (synthetic)" if synthetic else "ok")
            if path is None and fetched_split(split) is not None:
                status = "ok (fetch cache)"  # where the run will take it from
                roots += [default_cache_dir()] if default_cache_dir() not in roots else []
            out.append(DataFileStatus(f"tcm-sd/{split}.json", status))
        vocab = find_file(roots, (VOCAB_NAME,))
        out.append(DataFileStatus(f"tcm-sd/zy-bert/{VOCAB_NAME}", "ok" if vocab else "missing"))
        return out

    def load(self, ctx: RunContext) -> TcmData:
        data = load_data(ctx)
        for key, value in data.notes.items():
            ctx.note(TASK, key, value)
        return data

    def predict(self, ctx: RunContext, data: TcmData) -> None:
        predict_data(ctx, data)

    def plan(self, ctx: RunContext, data: TcmData, calls: CallPlan) -> None:
        if not ctx.backend.is_chat:
            return
        from clineval.benchmarks.tcm_sd.llm import make_request

        fields = record_fields(ctx)
        todo = pending(ctx, TASK, data.samples(), lambda kr: kr[0])
        requests = [(k, make_request(ctx, r, data.labels, fields)) for k, r in todo]
        plan_by_chat(ctx, TASK, calls, requests, len(data.records) - len(todo))

    def evaluate(self, ctx: RunContext, data: TcmData) -> TaskResult:
        return evaluate_data(ctx, data)
