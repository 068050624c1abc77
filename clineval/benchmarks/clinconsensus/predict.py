"""ClinConsensus predict step: its cases as judged items, run through the judging kit
(clineval.benchmarks.judged: candidate answers, then one judge call per (judge, case,
criterion), all stored as they finish, resumed without repeating a call, batch rounds, the
--dry-run plan); or a --verdicts file imported as verdict records (no model).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from clineval.benchmarks.base import RunContext
from clineval.benchmarks.clinconsensus.common import (
    TASK,
    VERDICTS_FILE_JUDGE,
    Data,
)
from clineval.benchmarks.clinconsensus.judgements import FORMAT_JSONL, read_verdicts
from clineval.benchmarks.clinconsensus.wording import CANDIDATE_TEMPLATE_VERSION, candidate_messages
from clineval.benchmarks.judged import (
    Criterion,
    JudgedItem,
    JudgePanel,
    Judging,
    stored_verdicts,
)
from clineval.benchmarks.judged_flow import plan_judged, predict_judged
from clineval.judge.prompt import JudgePrompt
from clineval.judge.verdict import VerdictRecord, verdict_key, verdict_kind
from clineval.plan import CallPlan


def import_verdicts(ctx: RunContext, data: Data) -> None:
    """--verdicts FILE: validated against the whole cases file, stored like judge verdicts.

    Every selected (case, criterion) gets a record, so a criterion the file does not cover is
    an explicit judge_error, and a record left by an earlier import into the same run
    directory never survives the file that replaced it.
    """
    assert data.verdicts_path is not None
    imported = read_verdicts(data.verdicts_path, data.all_cases)
    verdicts = imported.met
    source = str(data.verdicts_path)
    items = []
    missing = 0
    for case in data.cases:
        for rubric in case.rubrics[: data.n_criteria]:
            key = verdict_key(case.case_id, rubric.criterion_id)
            if key not in verdicts:
                missing += 1
                error: str | None = (
                    "no row in the verdicts file"
                    if imported.format == FORMAT_JSONL
                    else "no entry for this criterion in the judgements file"
                )
            elif verdicts[key] is None:
                error = imported.problems.get(key, "null verdict in the verdicts file")
            else:
                error = None
            explanation = imported.explanations.get(key, "")
            record = VerdictRecord.imported(verdicts.get(key), explanation, error, source)
            items.append((key, record.to_stored()))
    ctx.store.put_records(TASK, verdict_kind(VERDICTS_FILE_JUDGE), items)
    ctx.note(TASK, "verdicts_file", source)
    ctx.note(TASK, "verdicts_format", imported.format)
    ctx.note(TASK, "criteria_missing_from_verdicts_file", missing)


def judged_items(data: Data) -> list[JudgedItem]:
    """The selected cases as the kit's items: the candidate sees the query alone."""
    return [
        JudgedItem(
            id=case.case_id,
            query=case.query,
            criteria=tuple(
                Criterion(r.criterion_id, r.criterion) for r in case.rubrics[: data.n_criteria]
            ),
            messages=candidate_messages(case.query),
        )
        for case in data.cases
    ]


def judging(data: Data, prompt: JudgePrompt) -> Judging:
    return Judging(
        task=TASK,
        prompt=prompt,
        candidate_template=CANDIDATE_TEMPLATE_VERSION,
        panel=JudgePanel(data.judges, data.judge_specs, data.judge_is_candidate),
        bounds=data.reply_bounds(),
        retries=data.options.judge_retries,
        input_tokens=data.options.judge_input_tokens,
    )


def predict(ctx: RunContext, data: Data, prompt: JudgePrompt) -> None:
    if data.verdicts_path is not None:
        import_verdicts(ctx, data)
        return
    counters = predict_judged(ctx, judging(data, prompt), judged_items(data))
    ctx.note(TASK, "progress", counters)
    ctx.note(TASK, "judge_input_truncation", input_truncation(ctx, data))
    bounds = {label: asdict(b) for label, b in data.reply_bounds().items()}
    ctx.note(TASK, "judge_reply_bounds", bounds)


def input_truncation(ctx: RunContext, data: Data) -> dict[str, Any]:
    """Whether the authors' judge-input cut was asked for, and how many judged inputs it cut
    (an hf: judge reports the untruncated length of a cut prompt in the call's usage)."""
    limit = data.options.judge_input_tokens
    cut = 0
    for records in stored_verdicts(ctx.store, TASK, data.judges).values():
        for case in data.cases:
            for rubric in case.rubrics[: data.n_criteria]:
                record = records.get(verdict_key(case.case_id, rubric.criterion_id))
                usage = record.usage if record is not None else None
                cut += usage is not None and "prompt_tokens_untruncated" in usage
    return {
        "applied": limit is not None,
        "max_input_tokens": limit,
        "tokenizer": "each hf: judge's own" if limit is not None else None,
        "inputs_cut": cut,
    }


def plan_calls(ctx: RunContext, data: Data, prompt: JudgePrompt, calls: CallPlan) -> None:
    """The calls `predict` would make, for `clineval run --dry-run` (nothing sent or written)."""
    if data.verdicts_path is not None:
        return
    plan_judged(ctx, judging(data, prompt), judged_items(data), calls)
