"""`clineval judge-agreement RUN_DIR --labels FILE [--task NAME] [--json]`: stored judge verdicts
against human labels, for any judged task (one that stores the judging kit's verdict records,
clineval.judge.verdict). `--task` names it when the run holds several; the judges are those the
task's result lists (else every judge with stored verdicts), and a panel's aggregate uses the
rule its result records (else majority; graded verdicts: the mean).

The labels file is read by clineval.judge_labels. A unit is one (item, criterion).

Per judge (and the panel's aggregate): Cohen's kappa against the raters' strict majority,
Krippendorff's alpha with the judge as one more rater, HealthBench's pooled balanced F1
(binary), ICC(2,1) against the raters' mean (graded). Per rater, the same figures leave-one-out
against the other raters: the human baseline a judge is read against. `VARIANTS` names each
variant; the figures are the pure functions of clineval.metrics.agreement. Written to
RUN_DIR/judge_agreement.json.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from rich.console import Console
from rich.table import Table

from clineval.errors import InputError
from clineval.judge.ensemble import AGGREGATES, aggregate
from clineval.judge.verdict import judge_of_kind, read_verdicts, verdict_kind
from clineval.judge_labels import BINARY, GRADED, Labels, read_labels
from clineval.metrics.agreement import (
    class_f1_of,
    cohen_kappa,
    icc_2_1,
    krippendorff_alpha,
    strict_majority,
)
from clineval.option_flags import config_from_manifest
from clineval.run_record import read_manifest
from clineval.rundir import MANIFEST, CannotWrite, write_json
from clineval.store import STORE_FILENAME, RunStore

OUTPUT = "judge_agreement.json"

# {figure: its exact variant}, printed under the tables and written with the figures
VARIANTS = {
    "cohen_kappa": "Cohen's kappa, unweighted, against the raters' strict-majority label (a "
    "label more than half of a unit's labels hold; for a rater: the other raters'); units "
    "without one are left out and counted in n_no_majority",
    "cohen_kappa_quadratic": "graded: Cohen's kappa with quadratic weights (the squared "
    "difference of the two scores), against the same strict-majority label",
    "krippendorff_alpha": "Krippendorff's alpha over the units, the judge as one more rater "
    "beside all raters (for a rater: among all raters, the same figure for each), missing "
    "labels allowed, units with one label left out; nominal for binary labels, ordinal for "
    "graded",
    "balanced_f1": "binary: HealthBench's pooled pairwise balanced F1, every label of the judge "
    "paired with each other rater's label of the same unit, pooled over units and raters; the "
    "mean of F1(true) and F1(false); null when a class is absent from either side",
    "icc_2_1": "graded: ICC(2,1), two-way random effects, absolute agreement, single rater "
    "(McGraw and Wong's ICC(A,1)), over two columns: the judge's score and the raters' mean "
    "score (for a rater: the other raters'), on the units that have both",
    "accuracy": "binary: share of the pooled (judge, rater) pairs that agree",
}


def _finite(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def compare(own: NDArray[np.float64], others: NDArray[np.float64], kind: str) -> dict[str, Any]:
    """The figures of one rater or judge (`own`, nan = no label) against `others` (units x
    raters, nan = no label), on the units `others` labelled."""
    others = others[:, None] if others.ndim == 1 else others
    labelled = ~np.isnan(others).all(axis=1)
    has = ~np.isnan(own) & labelled
    majority = strict_majority(others)
    with_majority = has & ~np.isnan(majority)
    out: dict[str, Any] = {
        "n": int(has.sum()),
        "n_without_verdict": int((labelled & np.isnan(own)).sum()),
        "n_no_majority": int((has & np.isnan(majority)).sum()),
        "cohen_kappa": cohen_kappa(own[with_majority], majority[with_majority]),
        "krippendorff_alpha": krippendorff_alpha(
            np.column_stack([others, own])[labelled], "nominal" if kind == BINARY else "ordinal"
        ),
    }
    if not out["n"]:
        return _none_compared(out, kind)
    if kind == BINARY:
        # every (judge label, one rater's label) pair: pooled_pairs, as arrays
        paired = ~np.isnan(own)[:, None] & ~np.isnan(others)
        grader = np.broadcast_to(own[:, None], others.shape)[paired] == 1.0
        rater = others[paired] == 1.0
        f1_met, f1_not_met = class_f1_of(grader, rater, True), class_f1_of(grader, rater, False)
        return {
            **out,
            "n_pairs": int(paired.sum()),
            "balanced_f1": _finite((f1_met + f1_not_met) / 2),
            "f1_met": _finite(f1_met),
            "f1_not_met": _finite(f1_not_met),
            "accuracy": float((grader == rater).mean()) if grader.size else None,
        }
    mean = np.full(own.shape, np.nan)
    mean[labelled] = np.nanmean(others[labelled], axis=1)
    return {
        **out,
        "cohen_kappa_quadratic": cohen_kappa(
            own[with_majority], majority[with_majority], "quadratic"
        ),
        "balanced_f1": None,
        "icc_2_1": icc_2_1(np.column_stack([own, mean])[has]),
    }


def _none_compared(out: dict[str, Any], kind: str) -> dict[str, Any]:
    """No unit compared: the keys of a compared one, figures null (not the raters' alpha)."""
    if kind == BINARY:
        binary = ("krippendorff_alpha", "balanced_f1", "f1_met", "f1_not_met", "accuracy")
        return {**out, "n_pairs": 0, **dict.fromkeys(binary)}
    graded = ("krippendorff_alpha", "cohen_kappa_quadratic", "balanced_f1", "icc_2_1")
    return {**out, **dict.fromkeys(graded)}


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


def _matrix(labels: Labels) -> tuple[list[str], list[str], NDArray[np.float64]]:
    """The units (verdict keys, in file order), the raters (in file order) and the
    (units x raters) label matrix, nan where a rater gave no label."""
    units = list(dict.fromkeys(k for k, _, _ in labels.rows))
    raters = list(dict.fromkeys(r for _, _, r in labels.rows))
    row, column = {k: i for i, k in enumerate(units)}, {r: i for i, r in enumerate(raters)}
    matrix = np.full((len(units), len(raters)), np.nan)
    for key, value, rater in labels.rows:
        matrix[row[key], column[rater]] = value
    return units, raters, matrix


def _check_kinds(labels: Labels, verdicts: dict[str, NDArray[np.float64]], path: Path) -> None:
    """Binary labels need binary verdicts, graded ones scores: else every figure would compare
    two different scales."""
    values = np.concatenate([v[~np.isnan(v)] for v in verdicts.values()] or [np.array([])])
    binary_verdicts = bool(np.isin(values, (0.0, 1.0)).all())
    if labels.kind == BINARY and not binary_verdicts:
        raise InputError("true/false labels, but the run's verdicts are scores", path=path)
    _, _, matrix = _matrix(labels)
    given = matrix[~np.isnan(matrix)]
    if labels.kind == GRADED and binary_verdicts and not np.isin(given, (0.0, 1.0)).all():
        raise InputError("score labels, but the run's verdicts are true/false", path=path)


def _panel_verdict(verdicts: dict[str, NDArray[np.float64]], kind: str, rule: str) -> Any:
    stacked = np.stack(list(verdicts.values()))
    if kind == BINARY:
        return rule, aggregate(stacked, rule)
    answered = ~np.isnan(stacked).all(axis=0)
    mean = np.full(stacked.shape[1], np.nan)
    mean[answered] = np.nanmean(stacked[:, answered], axis=0)
    return "mean", mean


def agreement_figures(
    labels: Labels, verdicts: dict[str, NDArray[np.float64]], rule: str = "majority"
) -> dict[str, Any]:
    """Per judge (verdicts over `_matrix(labels)`'s units), the panel's aggregate when there
    are several judges, and per rater leave-one-out: the figures of `compare`."""
    _, raters, matrix = _matrix(labels)
    out: dict[str, Any] = {
        "judges": {name: compare(v, matrix, labels.kind) for name, v in verdicts.items()},
        "raters": {
            rater: compare(matrix[:, i], np.delete(matrix, i, axis=1), labels.kind)
            for i, rater in enumerate(raters)
        },
    }
    if len(raters) < 2:
        out["raters"] = {}  # one rater has no other to be compared with
    if len(verdicts) > 1:
        rule, combined = _panel_verdict(verdicts, labels.kind, rule)
        out["aggregate"] = {"rule": rule, **compare(combined, matrix, labels.kind)}
    return out


def judge_agreement(run_dir: Path, labels_path: Path, task: str | None = None) -> dict[str, Any]:
    if not (run_dir / STORE_FILENAME).is_file():
        raise InputError("not a run directory (no run store)", path=run_dir)
    manifest = read_manifest(run_dir)  # validated, or InputError
    try:
        config_from_manifest(manifest.config, str(run_dir / MANIFEST))
    except InputError:
        raise InputError("manifest has no valid run config", path=run_dir / MANIFEST) from None
    labels = read_labels(labels_path)
    units, raters, _ = _matrix(labels)
    with RunStore(run_dir / STORE_FILENAME, read_only=True) as store:
        judged = _judged_tasks(store)
        name = _pick_task(judged, task, run_dir)
        judges, rule = _panel(store.task_results().get(name), judged[name])
        verdicts = {label: _stored(store, name, label, units) for label in judges}
    if all(np.isnan(v).all() for v in verdicts.values()):
        raise InputError(
            "none of the labelled (id, criterion) units has a stored verdict in this run",
            path=labels_path,
        )
    _check_kinds(labels, verdicts, labels_path)
    figures = agreement_figures(labels, verdicts, rule)
    result: dict[str, Any] = {
        "task": name,
        "labels_file": str(labels_path),
        "kind": labels.kind,
        "n_labels": len(labels.rows),
        "n_units": len(units),
        "n_raters": len(raters),
        "n_labelers": len(raters) if labels.named else None,
        "duplicate_lines": [list(pair) for pair in labels.duplicate_lines],
        **figures,
        "variants": {k: v for k, v in VARIANTS.items() if _shown_for(k, labels.kind)},
    }
    try:
        write_json(run_dir / OUTPUT, result)
    except CannotWrite as exc:  # a read-only run directory: the figures are printed anyway
        result["not_written"] = exc.one_line()
    return result


def _shown_for(figure: str, kind: str) -> bool:
    if figure in ("balanced_f1", "accuracy"):
        return kind == BINARY
    if figure in ("icc_2_1", "cohen_kappa_quadratic"):
        return kind == GRADED
    return True


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def _table(title: str, rows: dict[str, dict[str, Any]], columns: list[str]) -> Table:
    table = Table(title=title)
    table.add_column("")
    for name in columns:
        table.add_column(name, justify="right")
    for label, figures in rows.items():
        table.add_row(label, *(_fmt(figures.get(c)) for c in columns))
    return table


def print_agreement(result: dict[str, Any], console: Console) -> None:
    """The tables, the variants they are, and the notes (units left out, duplicates)."""
    columns = ["n", "n_no_majority", "cohen_kappa", "krippendorff_alpha"]
    columns += (
        ["balanced_f1", "f1_met", "f1_not_met", "accuracy"]
        if result["kind"] == BINARY
        else ["cohen_kappa_quadratic", "icc_2_1"]
    )
    judges = dict(result["judges"])
    if "aggregate" in result:
        judges[f"aggregate ({result['aggregate']['rule']})"] = result["aggregate"]
    title = f"judges vs {result['n_raters']} rater(s), {result['n_units']} {result['kind']} units"
    console.print(_table(title, judges, columns))
    if result["raters"]:
        title = "each rater vs the other raters (leave-one-out: the human baseline)"
        console.print(_table(title, result["raters"], columns))
    for name, figures in judges.items():
        if figures["n_no_majority"]:
            console.print(
                f"{name}: {figures['n_no_majority']} unit(s) without a strict majority of "
                "raters left out of cohen_kappa",
                markup=False,
            )
    for figure, variant in result["variants"].items():
        console.print(f"{figure}: {variant}", markup=False, soft_wrap=True)
    if duplicates := result["duplicate_lines"]:
        shown = ", ".join(f"{line} (= {first})" for line, first in duplicates[:5])
        more = f" and {len(duplicates) - 5} more" if len(duplicates) > 5 else ""
        console.print(
            f"{len(duplicates)} duplicate label line(s) counted once: line {shown}{more}",
            markup=False,
        )


def judge_agreement_report(
    run_dir: Path, labels_path: Path, console: Console, task: str | None = None
) -> dict[str, Any]:
    """Compute, print the tables, and write RUN_DIR/judge_agreement.json."""
    result = judge_agreement(Path(run_dir), Path(labels_path), task)
    print_agreement(result, console)
    if "not_written" in result:
        print(f"note: {OUTPUT} not written: {result['not_written']}", file=sys.stderr)
    else:
        console.print(f"written: {Path(run_dir) / OUTPUT}")
    return result
