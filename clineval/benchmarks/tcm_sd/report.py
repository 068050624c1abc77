"""TCM-SD section: per-class F1 by support (head vs tail), group breakdown, confusions."""

from __future__ import annotations

from typing import Any

from clineval.benchmarks.tcm_sd.schema import METRICS
from clineval.reportkit import plots
from clineval.reportkit.rundata import RunData, finite_number
from clineval.reportkit.sections_common import (
    SampleTable,
    base_section,
    fields_part,
    filter_values,
    table_block,
    yes_no,
)

GROUPS = ("head", "middle", "tail")
MAX_CONFUSIONS = 20


def _num(value: Any, default: float = 0.0) -> float:
    number = finite_number(value)
    return default if number is None else number


def class_groups(per_class: dict[str, dict[str, Any]], metrics: dict[str, Any]) -> dict[str, str]:
    """label -> head/middle/tail: the task's own assignment when stored, else train-count thirds.

    The task may store the group per class (`group`/`bucket`) or list labels per group in its
    breakdown; otherwise labels are split into thirds by train frequency (support when no train
    counts), which the section then says it did.
    """
    groups: dict[str, str] = {}
    for label, row in per_class.items():
        for key in ("group", "bucket", "frequency_group"):
            if isinstance(row.get(key), str):
                groups[label] = row[key]
    if groups:
        return groups
    breakdown = _breakdown(metrics)
    for name, info in breakdown.items():
        labels = info.get("labels") if isinstance(info, dict) else None
        if isinstance(labels, list):
            groups.update({str(label): name for label in labels})
    if groups:
        return groups
    key = "train_count" if any("train_count" in r for r in per_class.values()) else "support"
    ordered = sorted(per_class, key=lambda lab: (-_num(per_class[lab].get(key)), lab))
    n = len(ordered)
    for i, label in enumerate(ordered):
        groups[label] = GROUPS[min(3 * i // max(n, 1), 2)]
    return groups


def _breakdown(metrics: dict[str, Any]) -> dict[str, Any]:
    for key in ("head_middle_tail", "frequency_groups", "breakdown", "groups", "by_frequency"):
        value = metrics.get(key)
        if isinstance(value, dict) and any(g in value for g in GROUPS):
            return {g: value[g] for g in GROUPS if g in value}
    found = {g: metrics[g] for g in GROUPS if isinstance(metrics.get(g), dict)}
    return found


def _confusions(metrics: dict[str, Any]) -> list[tuple[str, str, int]]:
    raw = metrics.get("confusions") or metrics.get("most_confused") or []
    out: list[tuple[str, str, int]] = []
    if isinstance(raw, list):
        for item in raw:
            if isinstance(item, dict):
                gold, pred, count = item.get("gold"), item.get("pred"), item.get("count")
            elif isinstance(item, list | tuple) and len(item) == 3:
                gold, pred, count = item
            else:
                continue
            number = finite_number(count)
            if gold is not None and pred is not None and number is not None:
                out.append((str(gold), str(pred), int(number)))
    return sorted(out, key=lambda t: -t[2])[:MAX_CONFUSIONS]


def _confusions_from_samples(samples: list[dict[str, Any]]) -> list[tuple[str, str, int]]:
    counts: dict[tuple[str, str], int] = {}
    for row in samples:
        gold, pred = row.get("gold"), row.get("pred")
        if gold is not None and pred is not None and gold != pred:
            counts[(str(gold), str(pred))] = counts.get((str(gold), str(pred)), 0) + 1
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_CONFUSIONS]
    return [(g, p, c) for (g, p), c in ordered]


def build(run: RunData, task: str) -> dict[str, Any]:
    """The task's report section (the declaration's `report_section`)."""
    metrics = run.results.get(task, {})
    samples = run.samples.get(task, [])
    section = base_section(run, task, "tcm-sd", METRICS)
    blocks: list[dict[str, Any]] = section["blocks"]
    per_class = metrics.get("per_class")
    if isinstance(per_class, dict) and per_class:
        per_class = {str(k): v for k, v in per_class.items() if isinstance(v, dict)}
        groups = class_groups(per_class, metrics)
        order = sorted(
            per_class,
            key=lambda lab: (
                -_num(per_class[lab].get("support")),
                -_num(per_class[lab].get("train_count")),
                lab,
            ),
        )
        # sorted horizontal bars: 148 labels stay readable (one row each, written across)
        ranked = sorted(
            (lab for lab in order if _num(per_class[lab].get("support")) > 0),
            key=lambda lab: (-_num(per_class[lab].get("f1")), -_num(per_class[lab].get("support"))),
        )
        if ranked:
            svg = plots.horizontal_bars(
                ranked,
                [_num(per_class[lab].get("f1")) for lab in ranked],
                [int(_num(per_class[lab].get("support"))) for lab in ranked],
                f"F1 per class, best first ({len(ranked)} classes with test samples; n = support)",
                "F1",
                (0, 1),
                fmt="{:.3f}",
            )
            blocks.append({"kind": "plot", "title": "Per-class F1", "svg": svg, "small": True})
        rows = [
            [
                lab,
                groups.get(lab, ""),
                f"{_num(per_class[lab].get('support')):.0f}",
                "" if "train_count" not in per_class[lab] else str(per_class[lab]["train_count"]),
                f"{_num(per_class[lab].get('precision')):.3f}",
                f"{_num(per_class[lab].get('recall')):.3f}",
                f"{_num(per_class[lab].get('f1')):.3f}",
            ]
            for lab in order
        ]
        blocks.append(
            table_block(
                f"Per-class figures ({len(order)} labels)",
                ["label", "group", "support", "train count", "P", "R", "F1"],
                rows,
                note="click a column to sort",
            )
        )
        group_block = _group_block(metrics, per_class, groups)
        if group_block:
            blocks.append(group_block)
    confusions = _confusions(metrics) or _confusions_from_samples(samples)
    if confusions:
        matrix = confused_classes(samples, confusions)
        if matrix is not None:
            labels, counts = matrix
            svg = plots.heatmap(labels, labels, counts, "Gold x predicted, most confused classes")
            blocks.append({"kind": "plot", "title": "Confusions", "svg": svg, "small": True})
        blocks.append(
            table_block(
                "Most confused pairs (gold -> predicted)",
                ["gold", "predicted", "count"],
                [[g, p, str(c)] for g, p, c in confusions],
            )
        )
    if samples:
        section["table"] = _table(section["anchor"], samples)
    return section


def _group_block(
    metrics: dict[str, Any], per_class: dict[str, dict[str, Any]], groups: dict[str, str]
) -> dict[str, Any] | None:
    """Macro-F1 per frequency group: the task's breakdown if stored, else from per-class F1."""
    stored = _breakdown(metrics)
    names: list[str] = []
    values: list[float] = []
    counts: list[int] = []
    for g in GROUPS:
        labels = [lab for lab, grp in groups.items() if grp == g]
        info = stored.get(g)
        value = None
        if isinstance(info, dict):
            value = finite_number(info.get("macro_f1", info.get("f1")))
        if value is None and labels:
            value = sum(_num(per_class[lab].get("f1")) for lab in labels) / len(labels)
        if value is not None:
            names.append(g)
            values.append(value)
            counts.append(len(labels))
    if not names:
        return None
    svg = plots.horizontal_bars(
        names,
        values,
        counts,
        "Macro-F1 by train-frequency group (n = labels)",
        "Macro-F1",
        (0, 1),
        fmt="{:.3f}",
    )
    return {"kind": "plot", "title": "Head / middle / tail", "svg": svg, "small": True}


def _table(anchor: str, samples: list[dict[str, Any]]) -> SampleTable:
    rows = []
    for row in samples:
        correct = row.get("correct")
        if correct is None and row.get("gold") is not None:
            correct = row.get("gold") == row.get("pred")
        rows.append(
            {
                "id": str(row.get("id", "")),
                "gold": "" if row.get("gold") is None else str(row.get("gold")),
                "pred": "" if row.get("pred") is None else str(row.get("pred")),
                "valid": yes_no(row.get("valid")),
                "correct": yes_no(correct),
                "raw_output": "" if row.get("raw_output") is None else str(row["raw_output"]),
            }
        )
    columns = [
        {"key": "id", "label": "id"},
        {"key": "gold", "label": "gold"},
        {"key": "pred", "label": "predicted"},
        {"key": "valid", "label": "valid"},
        {"key": "correct", "label": "correct"},
    ]
    filters = [
        {"key": key, "label": label, "values": filter_values(rows, key)}
        for key, label in (("correct", "correct"), ("valid", "valid"), ("gold", "gold"))
    ]
    return SampleTable(
        element_id=f"{anchor}-samples",
        columns=columns,
        filters=[f for f in filters if f["values"]],
        search=["raw_output"],
        detail=[
            fields_part(
                [
                    ("id", "id"),
                    ("gold", "gold"),
                    ("pred", "predicted"),
                    ("valid", "valid"),
                    ("correct", "correct"),
                    ("raw_output", "raw model output"),
                ]
            )
        ],
        rows=rows,
        title="Records",
    )


MATRIX_CLASSES = 10


def confused_classes(
    samples: list[dict[str, Any]], confusions: list[tuple[str, str, int]]
) -> tuple[list[str], list[list[int]]] | None:
    """The classes of the most confused pairs (at most MATRIX_CLASSES) and their full gold x
    predicted counts from the samples, diagonal included; None without samples."""
    labels: list[str] = []
    for gold, pred, _ in confusions:
        for label in (gold, pred):
            if label not in labels and len(labels) < MATRIX_CLASSES:
                labels.append(label)
    index = {label: i for i, label in enumerate(labels)}
    counts = [[0] * len(labels) for _ in labels]
    seen = False
    for row in samples:
        if row.get("gold") is None or row.get("pred") is None:
            continue
        i, j = index.get(str(row["gold"])), index.get(str(row["pred"]))
        if i is not None and j is not None:
            counts[i][j] += 1
            seen = True
    return (labels, counts) if seen else None
