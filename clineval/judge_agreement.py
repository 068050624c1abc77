"""`clineval judge-agreement RUN_DIR --labels FILE [--task NAME]`: stored judge verdicts vs
human labels, for any judged task (one that stores the judging kit's verdict records,
clineval.judge.verdict): ClinConsensus or a plugin's. `--task` names it when the run holds
several; the judges are those the task's result lists (else every judge with stored verdicts),
and a panel's aggregate uses the rule its result records (else majority).

Labels file: JSON Lines {"case_id", "criterion_id", "criteria_met": true|false} ("id" may stand
for "case_id": a sample id) with an optional "labeler" (a non-empty string; absent or null: one
unnamed labeler). Several rows for one criterion from different labelers (several physicians)
are each compared with the judge, as HealthBench's meta-evaluation compares its grader with
every physician grade.

One labeler labels a criterion once. A line repeating an earlier (labeler, case_id,
criterion_id) with the same label is a copy (files joined twice, an export run again): it is
counted once, and the result lists it under "duplicate_lines" ([line, first line] pairs) and
the command prints how many there were. The same key with the other label is an error naming
both lines: which one holds is not ours to guess.

Per judge (and the aggregate, when the run has several judges): the number of compared pairs,
labels the judge has no verdict for (judge_error or not judged: reported, never compared),
accuracy, Cohen's kappa, F1 of the "met" class, F1 of the "not met" class, and their mean, the
balanced F1 (HealthBench's headline figure for a grader). Written to RUN_DIR/judge_agreement.json.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from rich.console import Console
from rich.table import Table

from clineval.errors import InputError
from clineval.jsonl import iter_json_objects
from clineval.judge.ensemble import AGGREGATES, aggregate, cohen_kappa
from clineval.judge.verdict import as_id, judge_of_kind, read_verdicts, verdict_key, verdict_kind
from clineval.option_flags import config_from_manifest
from clineval.run_record import read_manifest
from clineval.rundir import MANIFEST, CannotWrite, write_json
from clineval.store import STORE_FILENAME, RunStore

OUTPUT = "judge_agreement.json"


@dataclass
class Labels:
    """The labels of a file, each (labeler, case, criterion) once (see the module doc)."""

    rows: list[tuple[str, bool, str | None]]  # (verdict key, human label, labeler)
    duplicate_lines: list[tuple[int, int]] = field(default_factory=list)  # (line, first line)


def _labeler(row: dict[str, Any], path: Path, lineno: int) -> str | None:
    labeler = row.get("labeler")
    if labeler is None:
        return None
    if not isinstance(labeler, str) or not labeler.strip():
        # str(42) and str(["a"]) would make up a name, and 1 and "1" would pass for one person.
        raise InputError(
            "'labeler' must be a non-empty string (or left out)", path=path, line=lineno
        )
    return labeler


def read_labels(path: Path) -> Labels:
    """The labels of a file; errors name the file and line."""
    labels = Labels(rows=[])
    # (labeler, verdict key) -> (line, label) of its first line
    first: dict[tuple[str | None, str], tuple[int, bool]] = {}
    # iter_json_objects numbers the file's own lines (blank lines included), so an error
    # names the line a user sees in an editor.
    for lineno, row in iter_json_objects(path, what="labels file"):
        sample = row.get("case_id", row.get("id"))
        case_id, criterion_id = as_id(sample), as_id(row.get("criterion_id"))
        met = row.get("criteria_met")
        if case_id is None or criterion_id is None:
            raise InputError("needs 'case_id' and 'criterion_id'", path=path, line=lineno)
        if not isinstance(met, bool):
            raise InputError("'criteria_met' must be true or false", path=path, line=lineno)
        labeler = _labeler(row, path, lineno)
        key = verdict_key(case_id, criterion_id)
        seen = first.get((labeler, key))
        if seen is None:
            first[(labeler, key)] = (lineno, met)
            labels.rows.append((key, met, labeler))
        elif seen[1] == met:
            labels.duplicate_lines.append((lineno, seen[0]))
        else:
            who = "the unnamed labeler" if labeler is None else f"labeler {labeler!r}"
            raise InputError(
                f"{who} labels case {case_id!r} criterion {criterion_id!r} "
                f"{'met' if met else 'not met'} here and {'met' if seen[1] else 'not met'} "
                f"on line {seen[0]}: keep one of lines {seen[0]} and {lineno}",
                path=path,
                line=lineno,
            )
    if not labels.rows:
        raise InputError("no labels in file", path=path)
    return labels


def binary_f1(truth: NDArray[np.bool_], pred: NDArray[np.bool_], positive: bool) -> float:
    """F1 of one class; 0 when the class is neither predicted nor present (sklearn's
    zero_division=0 convention)."""
    t = truth == positive
    p = pred == positive
    tp = float((t & p).sum())
    denom = float(t.sum() + p.sum())
    return 2 * tp / denom if denom else 0.0


def compare(human: NDArray[np.float64], judge: NDArray[np.float64]) -> dict[str, Any]:
    """Figures of one judge against human labels (judge nan = no verdict)."""
    has = ~np.isnan(judge)
    truth = human[has].astype(bool)
    pred = judge[has].astype(bool)
    out: dict[str, Any] = {"n_pairs": int(has.sum()), "n_without_verdict": int((~has).sum())}
    if truth.size == 0:  # the same keys as below, so readers of the JSON need no special case
        figures = ("accuracy", "cohen_kappa", "f1_met", "f1_not_met", "balanced_f1")
        rates = ("human_met_rate", "judge_met_rate")
        return {**out, **dict.fromkeys(figures + rates)}
    f1_met = binary_f1(truth, pred, True)
    f1_unmet = binary_f1(truth, pred, False)
    return {
        **out,
        "accuracy": float((truth == pred).mean()),
        "cohen_kappa": cohen_kappa(human[has], judge[has]),
        "f1_met": f1_met,
        "f1_not_met": f1_unmet,
        "balanced_f1": (f1_met + f1_unmet) / 2,
        "human_met_rate": float(truth.mean()),
        "judge_met_rate": float(pred.mean()),
    }


def _stored(store: RunStore, task: str, label: str, keys: list[str]) -> NDArray[np.float64]:
    records = read_verdicts(store.records(task, verdict_kind(label)))
    return np.array([records[k].value if k in records else np.nan for k in keys])


def _judged_tasks(store: RunStore) -> dict[str, list[str]]:
    """{task: its judges with stored verdicts}, for every task that stored any."""
    out: dict[str, list[str]] = {}
    for task in store.tasks():
        judges = [j for k in store.record_kinds(task) if (j := judge_of_kind(k)) is not None]
        if judges:
            out[task] = judges
    return out


def _pick_task(judged: dict[str, list[str]], task: str | None, run_dir: Path) -> str:
    if task is not None:
        if task not in judged:
            held = ", ".join(judged) or "none"
            raise InputError(f"--task {task}: no stored verdicts of it (judged tasks: {held})")
        return task
    if not judged:
        raise InputError("no judged task in this run (no stored verdicts)", path=run_dir)
    if len(judged) > 1:
        raise InputError(f"the run holds several judged tasks ({', '.join(judged)}): give --task")
    return next(iter(judged))


def _panel(result: dict[str, Any] | None, stored: list[str]) -> tuple[list[str], str]:
    """The judges (in the order the task's result lists them) and the aggregate rule."""
    metrics = result.get("metrics") if isinstance(result, dict) else None
    metrics = metrics if isinstance(metrics, dict) else {}
    listed = metrics.get("judges")
    judges = [j for j in listed if j in stored] if isinstance(listed, list) else []
    rule = metrics.get("aggregate")
    return judges or stored, rule if isinstance(rule, str) and rule in AGGREGATES else "majority"


def judge_agreement(run_dir: Path, labels_path: Path, task: str | None = None) -> dict[str, Any]:
    if not (run_dir / STORE_FILENAME).is_file():
        raise InputError("not a run directory (no run store)", path=run_dir)
    manifest = read_manifest(run_dir)  # validated, or InputError
    try:
        config = config_from_manifest(manifest.config, str(run_dir / MANIFEST))
    except InputError:
        raise InputError("manifest has no valid run config", path=run_dir / MANIFEST) from None
    labels = read_labels(labels_path)
    keys = [k for k, _, _ in labels.rows]
    human = np.array([1.0 if met else 0.0 for _, met, _ in labels.rows])
    del config  # validated: a run directory whose settings cannot be read is refused
    with RunStore(run_dir / STORE_FILENAME, read_only=True) as store:
        judged = _judged_tasks(store)
        name = _pick_task(judged, task, run_dir)
        judges, rule = _panel(store.task_results().get(name), judged[name])
        verdicts = {label: _stored(store, name, label, keys) for label in judges}
    per_judge = {label: compare(human, v) for label, v in verdicts.items()}
    if all(r["n_pairs"] == 0 for r in per_judge.values()):
        raise InputError(
            "none of the labelled (case_id, criterion_id) pairs has a stored verdict in this run",
            path=labels_path,
        )
    result: dict[str, Any] = {
        "task": name,
        "labels_file": str(labels_path),
        "n_labels": len(labels.rows),
        "n_labelers": len({lab for _, _, lab in labels.rows if lab is not None}) or None,
        "duplicate_lines": [list(pair) for pair in labels.duplicate_lines],
        "judges": per_judge,
    }
    if len(judges) > 1:
        combined = aggregate(np.stack(list(verdicts.values())), rule)
        result["aggregate"] = {"rule": rule, **compare(human, combined)}
    try:
        write_json(run_dir / OUTPUT, result)
    except CannotWrite as exc:  # a read-only run directory: the figures are printed anyway
        result["not_written"] = exc.one_line()
    return result


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def judge_agreement_report(
    run_dir: Path, labels_path: Path, console: Console, task: str | None = None
) -> dict[str, Any]:
    """Compute, print a table, and write RUN_DIR/judge_agreement.json."""
    result = judge_agreement(Path(run_dir), Path(labels_path), task)
    table = Table(title=f"judge vs human labels ({result['n_labels']} labels)")
    columns = ("n_pairs", "n_without_verdict", "balanced_f1", "f1_met", "f1_not_met")
    table.add_column("judge")
    for name in (*columns, "accuracy", "cohen_kappa"):
        table.add_column(name, justify="right")
    rows = dict(result["judges"])
    if "aggregate" in result:
        rows[f"aggregate ({result['aggregate']['rule']})"] = result["aggregate"]
    for label, figures in rows.items():
        table.add_row(label, *(_fmt(figures.get(c)) for c in (*columns, "accuracy", "cohen_kappa")))
    console.print(table)
    if duplicates := result["duplicate_lines"]:
        shown = ", ".join(f"{line} (= {first})" for line, first in duplicates[:5])
        more = f" and {len(duplicates) - 5} more" if len(duplicates) > 5 else ""
        console.print(
            f"{len(duplicates)} duplicate label line(s) counted once: line {shown}{more}",
            markup=False,
        )
    if "not_written" in result:
        print(f"note: {OUTPUT} not written: {result['not_written']}", file=sys.stderr)
    else:
        console.print(f"written: {Path(run_dir) / OUTPUT}")
    return result
