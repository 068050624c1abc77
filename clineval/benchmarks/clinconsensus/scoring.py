"""ClinConsensus evaluate step: stored verdicts -> metrics and per-case sample rows.

No model is called here (`clineval score` runs this alone). Verdicts are laid out as one
(n_cases, n_criteria) float matrix per judge: 1 met, 0 not met, nan judge_error (no verdict,
or none stored). With several judges the primary figures use their aggregate (majority by
default); every judge's own figures and the agreement between judges are reported too.

judge_errors never count as "not met" unless the user asks (--judge-errors-as-unmet, the
official script's behaviour). Otherwise rubric accuracy = met / judged, and the case-level
metrics (CACS@k, pass@k, the curve, slices) use only the cases whose every criterion was
judged ("n_cases_scored"): a case with a missing verdict has no known s_i.

samples.jsonl, one row per case: id, difficulty, subject, case_task (the case's `task`; the
runner's own "task" field names the benchmark), user_role, subject_labels, task_labels, query,
answer, s (met), judged, complete, verdicts [{criterion_id, criterion, met, explanation, judge,
error?}] (every judge's, plus the aggregate's when there are several), candidate_error when the
answer failed.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np
from numpy.typing import NDArray

from clineval.benchmarks.answer_checks import add_answer_checks
from clineval.benchmarks.base import RunContext, TaskResult
from clineval.benchmarks.clinconsensus.cases import RUBRICS_PER_CASE, Case
from clineval.benchmarks.clinconsensus.common import TASK, Data
from clineval.benchmarks.clinconsensus.metrics import (
    case_level_metrics,
    reverse_ecdf,
    rubric_accuracy,
    rubric_accuracy_interval,
)
from clineval.benchmarks.clinconsensus.predict import judged_items
from clineval.benchmarks.judged import (
    answer_text,
    error_rate_failures,
    stored_answers,
    stored_verdicts,
    verdict_matrix,
)
from clineval.judge.ensemble import aggregate, agreement_table, count_ties
from clineval.judge.verdict import AnswerRecord, VerdictRecord, VerdictRow, verdict_key
from clineval.models.usage import task_usage

SLICE_FIELDS = ("difficulty", "subject", "task", "user_role")
# The official slices (the authors' script groups by each subject label): a case counts in
# every label it carries, so these groups overlap and their sizes add up to more than n_cases.
LABEL_SLICE_FIELDS = ("subject_labels", "task_labels")


def summarize(
    matrix: NDArray[np.float64],
    n: int,
    ks: tuple[int, ...],
    errors_as_unmet: bool,
    n_resamples: int,
    seed: int,
) -> tuple[dict[str, Any], NDArray[np.bool_]]:
    """Headline figures of one verdict matrix, and which rows (cases) were scored."""
    judged = (~np.isnan(matrix)).sum(axis=1)
    met = np.nansum(matrix, axis=1).astype(np.int64)
    errors = int(matrix.size - judged.sum())
    complete = np.ones(len(matrix), bool) if errors_as_unmet else judged == n
    out: dict[str, Any] = {}
    s = met[complete]
    figures = case_level_metrics(s, n, ks, n_resamples=n_resamples, seed=seed)
    out.update({k: v for k, v in figures.items() if n_resamples > 0 or "_ci" not in k})
    if errors_as_unmet:
        acc_met, acc_judged = met, np.full(len(matrix), n)
    else:
        acc_met, acc_judged = met, judged
    out["rubric_accuracy"] = _finite(rubric_accuracy(acc_met, acc_judged))
    if n_resamples > 0:
        out["rubric_accuracy_ci95"] = rubric_accuracy_interval(
            acc_met, acc_judged, n_resamples, seed
        )
    out["judge_errors"] = errors
    out["judge_error_rate"] = errors / matrix.size if matrix.size else 0.0
    out["n_judged"] = int(judged.sum())
    out["n_cases_scored"] = int(complete.sum())
    return out, complete


def _finite(value: float) -> float | None:
    return value if np.isfinite(value) else None


def _slice_values(case: Case, name: str) -> tuple[str, ...]:
    value = getattr(case, name)
    if name in LABEL_SLICE_FIELDS:
        return tuple(dict.fromkeys(value))  # a label written twice counts the case once
    return (value,)


def _slices(cases: list[Case], s: NDArray[np.int64], n: int, ks: tuple[int, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in SLICE_FIELDS + LABEL_SLICE_FIELDS:
        groups: dict[str, list[int]] = defaultdict(list)
        for i, case in enumerate(cases):
            for value in _slice_values(case, name):
                groups[value].append(i)
        rows = {}
        for value, idx in sorted(groups.items()):
            part = s[idx]
            figures = case_level_metrics(part, n, ks, n_resamples=0)
            rows[value] = {
                "n_cases": len(idx),
                **{k: v for k, v in figures.items() if "_ci" not in k},
                "rubric_accuracy": _finite(rubric_accuracy(part, np.full(len(idx), n))),
            }
        out[name] = rows
    return out


def _usage(
    ctx: RunContext, answers: list[AnswerRecord], verdicts: list[VerdictRecord]
) -> dict[str, Any]:
    """Tokens and cost of the calls this task's answers and verdicts were made by, read from
    the run store's calls as the manifest's usage is (a reused call is counted as reused);
    records stored before they named their calls count by their own usage."""
    keys = [r.call for r in answers if r.call is not None]
    keys += [key for v in verdicts for key in v.calls]
    unkeyed: list[tuple[str, dict[str, Any] | None]] = [
        (r.model, r.usage) for r in answers if r.call is None and r.usage is not None
    ]
    unkeyed += [(str(v.judge), v.usage) for v in verdicts if not v.calls and v.usage is not None]
    return task_usage(ctx.store, keys, unkeyed, ctx.config.price_table)


def evaluate(ctx: RunContext, data: Data) -> TaskResult:
    config = ctx.config
    opts = data.options
    n, ks, cases = data.n_criteria, opts.ks, data.cases
    answers = stored_answers(ctx.store, TASK)
    stored = stored_verdicts(ctx.store, TASK, data.judges)
    items = judged_items(data)
    matrices = {label: verdict_matrix(stored[label], items, n) for label in data.judges}

    # A case whose candidate call failed has nothing to judge: leave it out and fail the run.
    from_file = data.verdicts_path is not None
    answered = np.array(
        [from_file or answer_text(answers.get(c.case_id)) is not None for c in cases],
        dtype=bool,
    )
    kept = [c for c, ok in zip(cases, answered, strict=True) if ok]
    primary_label = data.judges[0] if len(data.judges) == 1 else opts.aggregate
    if len(data.judges) == 1:
        primary = matrices[data.judges[0]][answered]
    else:
        stacked = np.stack([m[answered].ravel() for m in matrices.values()])
        primary = aggregate(stacked, opts.aggregate).reshape(int(answered.sum()), n)
    seed, boots, unmet = config.seed, opts.bootstrap, config.judge_errors_as_unmet
    headline, complete = summarize(primary, n, ks, unmet, boots, seed)
    s = np.nan_to_num(primary, nan=0.0).sum(axis=1).astype(np.int64)
    scored = [c for c, ok in zip(kept, complete, strict=True) if ok]

    metrics: dict[str, Any] = {
        "fixture": data.fixture,
        "cases_file": str(data.cases_path),
        "source": "verdicts-file" if from_file else "models",
        "n_cases": len(cases),
        "n_criteria_per_case": n,
        **headline,
        "judge_errors_as_unmet": unmet,
        "candidate_errors": int((~answered).sum()),
        "curve": {
            "threshold": list(range(n + 1)),
            # null at every level when no case was scored (NaN is not JSON)
            "share_at_least": [_finite(float(x)) for x in reverse_ecdf(s[complete], n)],
        },
        "slices": _slices(scored, s[complete], n, ks),
        "judges": list(data.judges),
        "judge_is_candidate": data.judge_is_candidate,
        # read from the stored verdicts, not the --judge-prompt file (score needs no file)
        "judge_prompt": sorted(
            {r.prompt for recs in stored.values() for r in recs.values() if r.prompt}
        ),
        "candidate": None if from_file else ctx.model.label,
    }
    if n != RUBRICS_PER_CASE:
        metrics["note"] = f"only the first {n} criteria of each case were judged (max_criteria)"
    if len(data.judges) > 1:
        metrics["aggregate"] = opts.aggregate
        metrics["aggregate_ties"] = count_ties(stacked)
        metrics["per_judge"] = {
            label: summarize(m[answered], n, ks, unmet, 0, seed)[0] for label, m in matrices.items()
        }
        metrics["agreement"] = agreement_table(
            {k: m[answered].ravel() for k, m in matrices.items()}
        )
    if not from_file:
        judged = [r for recs in stored.values() for r in recs.values()]
        metrics["usage"] = _usage(ctx, list(answers.values()), judged)
        add_answer_checks(metrics, (answers.get(c.case_id) for c in cases))

    # Sample rows cover every case, those without a candidate answer included (a browser of
    # the run must show them), with their primary verdict rows left empty.
    full = np.full((len(cases), n), np.nan)
    full[answered] = primary
    full_complete = np.zeros(len(cases), dtype=bool)
    full_complete[answered] = complete
    samples = _samples(data, list(cases), stored, answers, full, primary_label, full_complete)
    errors: list[str] = []
    warnings: list[str] = []
    # a case without an answer fails the run, as every benchmark's (benchmarks.missing)
    absent = [c.case_id for c, ok in zip(cases, answered, strict=True) if not ok]
    # The bound holds for the primary figures AND for each judge of a panel.
    bounded = {"": headline, **{f" of {k}": v for k, v in metrics.get("per_judge", {}).items()}}
    errors += error_rate_failures(config.max_judge_error_rate, bounded)
    by_judge = not from_file  # a verdicts file has no judge whose failed calls a rerun retries
    hint = judge_errors_hint(str(ctx.output_dir), headline, len(kept), unmet, by_judge)
    if hint is not None:
        # results.json names no directory (a run directory may be copied or moved): RUN_DIR
        metrics["judge_errors_hint"] = judge_errors_hint(
            "RUN_DIR", headline, len(kept), unmet, by_judge
        )
        if errors:
            errors.append(hint)
        else:  # under the bound the run succeeds, but the empty figures still need a reason
            warnings.append(hint)
    return TaskResult(
        metrics=metrics, samples=samples, errors=errors, warnings=warnings, missing=absent
    )


def judge_errors_hint(
    run_dir: str, headline: dict[str, Any], n_answered: int, unmet: bool, judged: bool = True
) -> str | None:
    """What to do when judge errors left cases out of CACS@k (None when none were), naming
    the re-score that counts them as not met: a user reading an empty CACS@7 needs the flag.
    `judged`: the verdicts came from judge calls (a rerun retries the failed ones), not from
    a verdicts file (whose missing verdicts only the file can supply)."""
    left_out = n_answered - int(headline["n_cases_scored"])
    if unmet or not headline["judge_errors"] or left_out <= 0:
        return None
    other_way = (
        "or rerun the same command to retry the failed judge calls"
        if judged
        else "or give the missing verdicts in the verdicts file and rerun"
    )
    return (
        f"{left_out} of {n_answered} case(s) hold a judge error and are left out of CACS@k "
        f"(scored: {headline['n_cases_scored']}); to count judge errors as not met (the "
        f"official script's rule) re-score without a model: clineval score {run_dir} "
        f"--judge-errors-as-unmet ({other_way})"
    )


def _samples(
    data: Data,
    cases: list[Case],
    stored: dict[str, dict[str, VerdictRecord]],
    answers: dict[str, AnswerRecord],
    primary: NDArray[np.float64],
    primary_label: str,
    complete: NDArray[np.bool_],
) -> list[dict[str, Any]]:
    n = data.n_criteria
    rows = []
    for i, case in enumerate(cases):
        verdicts = []
        for j, rubric in enumerate(case.rubrics[:n]):
            key = verdict_key(case.case_id, rubric.criterion_id)
            for label in data.judges:
                record = stored[label].get(key)
                verdicts.append(
                    VerdictRow.row_of(rubric.criterion_id, rubric.criterion, label, record)
                )
            if len(data.judges) > 1:
                value = primary[i, j]
                met = None if np.isnan(value) else bool(value)
                row = VerdictRow(rubric.criterion_id, rubric.criterion, met, "", primary_label)
                verdicts.append(row.to_row())
        row = primary[i]
        answer = answers.get(case.case_id)
        rows.append(
            {
                "id": case.case_id,
                "difficulty": case.difficulty,
                "subject": case.subject,
                # not "task": the runner tags every samples.jsonl row with "task" = task name
                "case_task": case.task,
                "user_role": case.user_role,
                "subject_labels": list(case.subject_labels),
                "task_labels": list(case.task_labels),
                "query": case.query,
                "answer": answer_text(answer),
                "s": int(np.nansum(row)),
                "judged": int((~np.isnan(row)).sum()),
                "complete": bool(complete[i]),
                "verdicts": verdicts,
                **({"candidate_error": answer.error} if answer and answer.error else {}),
            }
        )
    return rows
