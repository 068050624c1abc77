"""A ClinConsensus run as the authors' judgements file, `DIR/<name>_judge.json`.

What the authors' scorer (eval_cacs.py, run as `--data CASES --judgements-dir DIR`) needs, and
what is written for it:
  * one JSON list with one item per case of the cases file, in the file's order (it refuses a
    list of another length): so the run must have covered every case of that file, with all 30
    criteria (its CACS divides by the 30 criteria of a case);
  * each item `{"case_id", "response", "criteria_results": [...]}` with one entry per criterion
    `{"criterion_id", "criterion", "criteria_met": true|false, "explanation"}` from the run's
    primary verdicts (the single judge's, or the panel's aggregate);
  * a criterion without a verdict (a judge error) is written `"criteria_met": false` with an
    `"error"` saying why: the official scorer counts it not met, exactly as clineval does with
    --judge-errors-as-unmet, and clineval reading the file back keeps it a judge error.
So eval_cacs.py gives the numbers of the run scored with --judge-errors-as-unmet.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from clineval.benchmarks.clinconsensus.cases import RUBRICS_PER_CASE, Case, load_cases
from clineval.errors import InputError
from clineval.judge.verdict import read_verdict_rows
from clineval.reportkit.run_files import ExportSettings, RunFiles, task_metrics
from clineval.rundir import RESULTS, SAMPLES, atomic_write_text

TASK = "clinconsensus"
SUFFIX = "_judge.json"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def file_name(run: RunFiles, metrics: dict[str, Any], settings: ExportSettings) -> str:
    """`<name>_judge.json`: --name, else the candidate model's label, else the name of the
    verdicts file the run scored, made safe for a file name."""
    if settings.name is not None:
        name = settings.name
        if not name.strip() or _UNSAFE.search(name) or name.startswith("."):
            raise InputError(
                f"--name {name!r}: use letters, digits, '.', '_' and '-' only (it names a file)"
            )
        return name + SUFFIX
    candidate = metrics.get("candidate")
    if isinstance(candidate, str) and candidate:
        raw = candidate
    else:
        notes = run.manifest.get("tasks", {}).get(TASK, {})
        source = notes.get("verdicts_file") if isinstance(notes, dict) else None
        raw = Path(str(source)).name if source else "model"
        raw = re.sub(r"(_judge)?\.jsonl?$", "", raw, flags=re.IGNORECASE)
    return (_UNSAFE.sub("_", raw).strip("._") or "model") + SUFFIX


def _cases(run: RunFiles, metrics: dict[str, Any], settings: ExportSettings) -> list[Case]:
    if settings.cases is not None:
        return load_cases(settings.cases)
    recorded = metrics.get("cases_file")
    if not isinstance(recorded, str) or not Path(recorded).is_file():
        raise InputError(
            f"the run's cases file {recorded!r} is not there: pass --cases FILE",
            path=run.path / RESULTS,
        )
    return load_cases(recorded)


def _primary_label(run: RunFiles, metrics: dict[str, Any]) -> str:
    judges = metrics.get("judges")
    if not isinstance(judges, list) or not judges:
        raise InputError("the clinconsensus results name no judge", path=run.path / RESULTS)
    if len(judges) == 1:
        return str(judges[0])
    return str(metrics.get("aggregate") or "majority")


def _check_complete(
    run: RunFiles, metrics: dict[str, Any], cases: list[Case], rows: dict[str, dict[str, Any]]
) -> None:
    n = metrics.get("n_criteria_per_case")
    if n != RUBRICS_PER_CASE:
        raise InputError(
            f"the run judged {n} criteria per case (clinconsensus.max_criteria); the official "
            f"scorer counts all {RUBRICS_PER_CASE}: export a run over every criterion",
            path=run.path,
        )
    wanted = {c.case_id for c in cases}
    absent = [c.case_id for c in cases if c.case_id not in rows]
    if absent:
        raise InputError(
            f"the run covers {len(wanted) - len(absent)} of the {len(cases)} cases of the cases "
            f"file (first missing: {absent[0]!r}; a --limit or --shard run?); the official "
            "scorer needs one item per case: export a run over every case (`clineval merge` "
            "joins shards), or pass --cases FILE holding exactly the run's cases",
            path=run.path,
        )
    extra = sorted(set(rows) - wanted)
    if extra:
        raise InputError(
            f"the run has {len(extra)} case(s) that are not in the cases file (first: "
            f"{extra[0]!r}): pass the run's own cases file as --cases",
            path=run.path,
        )
    failed = [cid for cid, row in rows.items() if row.get("candidate_error")]
    if failed:
        raise InputError(
            f"{len(failed)} case(s) have no candidate answer (first: {failed[0]!r}); the "
            "official scorer would count them as 0: run the same command again to complete "
            "them, then export",
            path=run.path,
        )


def _item(case: Case, row: dict[str, Any], label: str) -> dict[str, Any]:
    verdicts = {v.criterion_id: v for v in read_verdict_rows(row) if v.judge == label}
    entries = []
    for rubric in case.rubrics:
        verdict = verdicts.get(rubric.criterion_id)
        met = None if verdict is None else verdict.met
        entry: dict[str, Any] = {
            "criterion_id": rubric.criterion_id,
            "criterion": rubric.criterion,
            "criteria_met": met is True,
            "explanation": "" if verdict is None else verdict.explanation,
        }
        if met is None:
            why = (verdict.error if verdict is not None else None) or (
                "no verdict in the run" if verdict is None else f"no verdict from {label}"
            )
            entry["error"] = why
        entries.append(entry)
    item: dict[str, Any] = {"case_id": case.case_id}
    if isinstance(row.get("answer"), str):
        item["response"] = row["answer"]
    item["criteria_results"] = entries
    return item


def export(run: RunFiles, out_dir: Path, settings: ExportSettings) -> list[Path]:
    metrics = task_metrics(run, TASK)
    rows: dict[str, dict[str, Any]] = {}
    for row in run.samples.get(TASK, []):
        rows[str(row.get("id"))] = row
    if not rows:
        raise InputError(f"no {TASK} rows in {SAMPLES}", path=run.path / SAMPLES)
    cases = _cases(run, metrics, settings)
    _check_complete(run, metrics, cases, rows)
    label = _primary_label(run, metrics)
    items = [_item(case, rows[case.case_id], label) for case in cases]
    target = out_dir / file_name(run, metrics, settings)
    atomic_write_text(target, json.dumps(items, ensure_ascii=False, indent=1) + "\n")
    return [target]
