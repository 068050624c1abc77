"""ClinConsensus (arXiv:2603.02097): Chinese clinical queries judged against 30 rubric criteria.

load      cases from --cases FILE, <data_root>/clinconsensus/clinconsensus_low.jsonl, the same
          file in the data cache (`clineval data fetch clinconsensus`), or the fixture
          (--option clinconsensus.cases=fixture); --limit, then --shard
predict   candidate answers + one judge call per (judge, case, criterion), all stored as they
          finish (predict.py on the judging kit); or import a --verdicts file (no model)
evaluate  CACS@k, rubric accuracy, pass@k, curve, slices, judge errors (scoring.py)
Options and the verdicts-file contract are documented in common.py.
"""

from __future__ import annotations

from pathlib import Path

from clineval.benchmarks.base import DataFileStatus, RunContext, Task, TaskResult
from clineval.benchmarks.clinconsensus.cases import OFFICIAL_RELATIVE_PATH
from clineval.benchmarks.clinconsensus.common import (
    CLINCONSENSUS_OPTIONS,
    TASK,
    Data,
    load_data,
    official_cases_path,
    run_prompt,
    verdicts_option,
)
from clineval.benchmarks.clinconsensus.official_prompt import judge_prompt
from clineval.models.registry import backend_info
from clineval.plan import CallPlan


class ClinConsensusTask(Task[Data]):
    name = TASK
    family = TASK
    option_group = CLINCONSENSUS_OPTIONS
    description = "ClinConsensus: rubric-judged answers to Chinese clinical queries (CACS@7)"

    def data_status(self, data_root: Path | None) -> list[DataFileStatus]:
        exists = official_cases_path(data_root) is not None  # the data root or the data cache
        return [DataFileStatus(OFFICIAL_RELATIVE_PATH, "not checked" if exists else "missing")]

    def load(self, ctx: RunContext) -> Data:
        data = load_data(ctx)
        ctx.note(TASK, "cases_file", str(data.cases_path))
        ctx.note(TASK, "fixture", data.fixture)
        ctx.note(TASK, "n_cases", len(data.cases))
        return data

    def predict(self, ctx: RunContext, data: Data) -> None:
        from clineval.benchmarks.clinconsensus.predict import predict

        verdicts = verdicts_option(ctx.config)
        if verdicts and not backend_info(ctx.model).replays_predictions:
            from clineval.models.predictions_files import predictions_note

            # provenance of the scored bytes (the runner notes a predictions: model's file)
            path = Path(verdicts).expanduser()
            ctx.note(TASK, "predictions_file", predictions_note(path))

        predict(ctx, data, run_prompt(judge_prompt(ctx.config.judge_prompt), data.options))

    def plan(self, ctx: RunContext, data: Data, calls: CallPlan) -> None:
        from clineval.benchmarks.clinconsensus.predict import plan_calls

        prompt = run_prompt(judge_prompt(ctx.config.judge_prompt), data.options)
        plan_calls(ctx, data, prompt, calls)

    def evaluate(self, ctx: RunContext, data: Data) -> TaskResult:
        from clineval.benchmarks.clinconsensus.scoring import evaluate

        return evaluate(ctx, data)
