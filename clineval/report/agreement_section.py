"""The report's tables of a judge's agreement with human labels: what `clineval judge-agreement`
wrote to RUN_DIR/judge_agreement.json for a task, each statistic's exact variant beside them.

The report only reads that file: figures are never recomputed here, and a file that cannot be
read (or belongs to another task) adds nothing, as any missing piece of a run does.
"""

from __future__ import annotations

from typing import Any

from clineval.errors import InputError
from clineval.jsonio import read_json_file
from clineval.report.rundata import RunData
from clineval.report.sections_common import table_block

FILE = "judge_agreement.json"
# the columns shown, in order, when the figures have them
COLUMNS = (
    "n",
    "n_no_majority",
    "cohen_kappa",
    "cohen_kappa_quadratic",
    "krippendorff_alpha",
    "balanced_f1",
    "icc_2_1",
    "accuracy",
)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _rows(figures: dict[str, Any], columns: list[str]) -> list[list[str]]:
    return [
        [str(name), *(_cell(f.get(c)) for c in columns)]
        for name, f in figures.items()
        if isinstance(f, dict)
    ]


def agreement_blocks(run: RunData, task: str) -> list[dict[str, Any]]:
    """Table blocks for `task` when judge-agreement was run on it; [] otherwise."""
    try:
        data = read_json_file(run.path / FILE, "judge agreement file")
    except InputError:
        return []
    if not isinstance(data, dict) or data.get("task") != task:
        return []
    judges = dict(data.get("judges") or {})
    if isinstance(data.get("aggregate"), dict):
        judges[f"aggregate ({data['aggregate'].get('rule')})"] = data["aggregate"]
    raters = data.get("raters") or {}
    shown = {k for f in (*judges.values(), *raters.values()) if isinstance(f, dict) for k in f}
    columns = [c for c in COLUMNS if c in shown]
    variants = data.get("variants") or {}
    note = " ".join(f"{k}: {v}." for k, v in variants.items() if k in columns)
    header = ["", *columns]
    title = (
        f"Judges vs human labels ({data.get('n_raters')} rater(s), {data.get('n_units')} "
        f"{data.get('kind')} units, {data.get('labels_file')})"
    )
    blocks = [table_block(title, header, _rows(judges, columns), note=note)]
    if raters:
        blocks.append(
            table_block(
                "Each rater vs the other raters (leave-one-out: the human baseline)",
                header,
                _rows(raters, columns),
            )
        )
    return blocks
