"""ClinConsensus section: reverse-ECDF curve with k marked, per-slice bars, case browser."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from clineval.benchmarks.clinconsensus import METRICS
from clineval.benchmarks.clinconsensus.report_figures import (
    case_task,
    cases_note,
    reverse_ecdf_plot,
    s_of,
    slice_intervals,
    unmet_criteria,
)
from clineval.judge.verdict import read_verdict_rows
from clineval.report import plots
from clineval.report.rundata import RunData, finite_number
from clineval.report.sections_common import (
    SampleTable,
    base_section,
    filter_values,
    flatten,
    heading_part,
    rows_part,
    short_model_label,
    table_block,
    text_part,
)

SLICE_KEYS = ("difficulty", "subject", "task", "user_role", "subject_labels", "task_labels")
# Multi-label slices (the official ones): a case counts in each label it carries.
LABEL_SLICES = {"subject_labels": "subject label", "task_labels": "task label"}
DEFAULT_N = 30
_K = re.compile(r"^cacs@(\d+)$")
MAX_SLICE_BARS = 25


def thresholds(metrics: dict[str, Any]) -> list[int]:
    """The k of every cacs@k in the results, primary (smallest) first; [7] when none."""
    ks = sorted(int(m.group(1)) for key in metrics if (m := _K.match(key)))
    return ks or [7]


def n_criteria(metrics: dict[str, Any], samples: list[dict[str, Any]]) -> int:
    for key in ("n_criteria_per_case", "n_criteria", "criteria_per_case", "N"):
        value = finite_number(metrics.get(key))
        if value is not None and value > 0:
            return int(value)
    counts = [len({v.criterion_id for v in read_verdict_rows(r)}) for r in samples]
    return max(counts) if counts and max(counts) > 0 else DEFAULT_N


def curve_of(metrics: dict[str, Any], samples: list[dict[str, Any]], n: int) -> list[float] | None:
    """share(s >= L), L = 0..N: the stored curve when it has that shape, else from samples."""
    raw = metrics.get("curve")
    if isinstance(raw, dict):
        for key in ("share_at_least", "share", "shares", "y"):
            if key in raw:
                raw = raw[key]
                break
    if isinstance(raw, list) and raw and all(isinstance(x, dict) for x in raw):
        raw = [x.get("share", x.get("y")) for x in raw]
    if isinstance(raw, list) and len(raw) >= 2:
        values = [finite_number(x) for x in raw]
        if all(v is not None for v in values):
            return [float(v) for v in values if v is not None]
    s = [v for r in samples if (v := s_of(r)) is not None]
    if not s:
        return None
    counts = np.clip(np.asarray(s, dtype=np.int64), 0, n)
    at_least = np.cumsum(np.bincount(counts, minlength=n + 1)[::-1])[::-1]
    return [float(x) for x in at_least / counts.size]


def _cacs(s: list[int], n: int, k: int) -> float:
    arr = np.asarray(s, dtype=np.float64)
    return float(100.0 * np.maximum(0.0, arr - k + 1).mean() / (n - k + 1))


def slices_of(
    metrics: dict[str, Any], samples: list[dict[str, Any]], n: int, k: int, task_name: str = ""
) -> dict[str, list[tuple[str, float, int]]]:
    """{slice key: [(value, CACS@k, n cases)]}: stored slices first, else from the samples."""
    out: dict[str, list[tuple[str, float, int]]] = {}
    stored = metrics.get("slices")
    metric = f"cacs@{k}"
    if isinstance(stored, dict):
        for dim, groups in stored.items():
            if not isinstance(groups, dict):
                continue
            bars = []
            for name, info in groups.items():
                if isinstance(info, dict):
                    value = finite_number(info.get(metric))
                    count = finite_number(info.get("n_cases", info.get("n")))
                    if value is not None:
                        bars.append((str(name), value, int(count or 0)))
            if bars:
                out[str(dim)] = bars
    if out:
        return out
    for dim in SLICE_KEYS:
        by_value: dict[str, list[int]] = {}
        for row in samples:
            value = case_task(row, task_name) if dim == "task" else row.get(dim)
            s = s_of(row)
            if value is None or s is None:
                continue
            for name in value if isinstance(value, list) else [value]:
                by_value.setdefault(str(name), []).append(s)
        if by_value:
            out[dim] = [(name, _cacs(v, n, k), len(v)) for name, v in by_value.items()]
    return out


def build(run: RunData, task: str) -> dict[str, Any]:
    """The task's report section (the declaration's `report_section`)."""
    metrics = run.results.get(task, {})
    samples = run.samples.get(task, [])
    section = base_section(run, task, "clinconsensus", METRICS)
    blocks: list[dict[str, Any]] = section["blocks"]
    n = n_criteria(metrics, samples)
    ks = [k for k in thresholds(metrics) if 1 <= k <= n]
    scored_note = cases_note(metrics)
    for card in (*section["cards"], *section["rest"]):
        if _K.match(card.key) or card.key.startswith("pass@"):
            card.note = scored_note
    curve = curve_of(metrics, samples, n)
    if curve is not None:
        svg = reverse_ecdf_plot(curve, ks, "Reverse ECDF of criteria met per case")
        blocks.append({"kind": "plot", "title": "Rubric hits per case", "svg": svg, "small": True})
    # Slices show CACS at the smallest k the run reports; a run judged on fewer criteria than
    # any k (a smoke run) has no CACS to slice (CACS@k is null for k > N).
    k = ks[0] if ks else 0
    sliced = slices_of(metrics, samples, n, k, task) if ks else {}
    seed = int(run.manifest.get("seed") or 0)
    for dim, bars in sliced.items():
        bars = sorted(bars, key=lambda b: (-b[2], b[0]))[:MAX_SLICE_BARS]
        name = LABEL_SLICES.get(dim, dim)
        intervals = slice_intervals(samples, dim, [b[0] for b in bars], n, k, task, seed)
        svg = plots.horizontal_bars(
            [b[0] for b in bars],
            [b[1] for b in bars],
            [b[2] for b in bars],
            f"CACS@{k} by {name} (95% bootstrap interval over the slice's cases)",
            f"CACS@{k} (%)",
            (0, 100),
            intervals=intervals,
        )
        title = f"By {name}" + (
            " (a case counts in each of its labels)" if dim in LABEL_SLICES else ""
        )
        blocks.append({"kind": "plot", "title": title, "svg": svg, "small": True})
    by, unmet = unmet_criteria(samples)
    if unmet:
        blocks.append(
            table_block(
                f"Most unmet criteria (by {by})",
                [by, "verdicts", "met", "not met", "judge errors", "hit rate"],
                [
                    [key, f"{v:,}", f"{m:,}", f"{u:,}", f"{e:,}", f"{m / max(m + u, 1):.3f}"]
                    for key, v, m, u, e in unmet
                ],
                note=f"the {by}s not met most often (the same wording in several cases is one "
                "row), most not-met verdicts first; a rubric position is not the same "
                "criterion from case to case, so it ranks nothing",
            )
        )
    blocks.extend(_label_slice_tables(metrics, ks))
    blocks.extend(_judge_blocks(metrics, ks))
    usage = metrics.get("usage")
    if isinstance(usage, dict) and usage:
        rows = [[k, v] for k, v in flatten(usage)]
        blocks.append(
            {
                "kind": "table",
                "title": "Token usage and cost",
                "collapsed": True,
                "header": ["item", "value"],
                "rows": rows,
            }
        )
    if samples:
        section["table"] = _table(section["anchor"], task, samples)
    return section


def _fmt(value: Any, digits: int = 4) -> str:
    number = finite_number(value)
    return "" if number is None else f"{number:.{digits}f}"


def _label_slice_tables(metrics: dict[str, Any], ks: list[int]) -> list[dict[str, Any]]:
    """Every figure of the official (label) slices, one table per label kind."""
    stored = metrics.get("slices")
    if not isinstance(stored, dict):
        return []
    keys = [f"cacs@{k}" for k in ks] + [f"pass@{k}" for k in ks] + ["rubric_accuracy"]
    out = []
    for dim, name in LABEL_SLICES.items():
        groups = stored.get(dim)
        if not isinstance(groups, dict) or not groups:
            continue
        rows = [
            [str(label), str(info.get("n_cases", ""))]
            + [_fmt(info.get(key), 2 if key.startswith("cacs") else 4) for key in keys]
            for label, info in sorted(groups.items())
            if isinstance(info, dict)
        ]
        out.append(
            {
                "kind": "table",
                "title": f"Every {name} (official slice)",
                "collapsed": True,
                "header": [name, "cases", *keys],
                "rows": rows,
            }
        )
    return out


def _judge_blocks(metrics: dict[str, Any], ks: list[int]) -> list[dict[str, Any]]:
    """A judge panel: each judge's own figures, and the agreement between judges."""
    out: list[dict[str, Any]] = []
    per_judge = metrics.get("per_judge")
    if isinstance(per_judge, dict) and per_judge:
        keys = [f"cacs@{k}" for k in ks] + ["rubric_accuracy", "judge_error_rate"]
        rows = [
            [str(judge)] + [_fmt(fig.get(k), 2 if k.startswith("cacs") else 4) for k in keys]
            for judge, fig in per_judge.items()
            if isinstance(fig, dict)
        ]
        title = f"Each judge of the panel (aggregate: {metrics.get('aggregate', '?')})"
        out.append({"kind": "table", "title": title, "header": ["judge", *keys], "rows": rows})
    agreement = metrics.get("agreement")
    if isinstance(agreement, dict) and isinstance(agreement.get("pairs"), list):
        rows = [
            [
                " vs ".join(str(j) for j in pair.get("judges", [])),
                str(pair.get("n_items", "")),
                _fmt(pair.get("percent_agreement")),
                _fmt(pair.get("cohen_kappa")),
            ]
            for pair in agreement["pairs"]
            if isinstance(pair, dict)
        ]
        rows.append(
            [
                "mean",
                "",
                _fmt(agreement.get("mean_percent_agreement")),
                _fmt(agreement.get("mean_cohen_kappa")),
            ]
        )
        out.append(
            {
                "kind": "table",
                "title": "Agreement between judges",
                "header": ["judges", "criteria", "percent agreement", "Cohen's kappa"],
                "rows": rows,
            }
        )
    return out


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return str(value)


def _table(anchor: str, task_name: str, samples: list[dict[str, Any]]) -> SampleTable:
    """Rows for the case browser; verdicts as compact arrays, judges interned (27,000 of them).

    verdict = [criterion_id, criterion, met (true/false/null), explanation, judge index]
    """
    judges: dict[str, int] = {}
    rows = []
    for row in samples:
        verdicts = []
        errors = 0
        for v in read_verdict_rows(row):
            errors += v.met is None
            verdicts.append(
                [
                    v.criterion_id,
                    v.criterion,
                    v.met,
                    v.explanation,
                    judges.setdefault(v.judge, len(judges)),
                ]
            )
        query = row.get("query")
        if query is None:
            parts = [row.get("clinical_context"), row.get("user_request")]
            query = "\n\n".join(str(p) for p in parts if p)
        s = s_of(row)
        rows.append(
            {
                "id": _text(row.get("id", row.get("case_id"))),
                "difficulty": _text(row.get("difficulty")),
                "subject": _text(row.get("subject")),
                "task": _text(case_task(row, task_name)),
                "user_role": _text(row.get("user_role")),
                "s": "" if s is None else s,
                "judge_errors": errors,
                "query": _text(query),
                "answer": _text(row.get("answer", row.get("response"))),
                "v": verdicts,
            }
        )
    columns = [
        {"key": "id", "label": "case"},
        {"key": "difficulty", "label": "difficulty"},
        {"key": "subject", "label": "subject"},
        {"key": "task", "label": "task"},
        {"key": "user_role", "label": "user role"},
        {"key": "s", "label": "criteria met"},
        {"key": "judge_errors", "label": "judge errors"},
    ]
    filters = [
        {"key": key, "label": label, "values": filter_values(rows, key)}
        for key, label in (
            ("difficulty", "difficulty"),
            ("subject", "subject"),
            ("task", "task"),
            ("user_role", "user role"),
        )
    ]
    return SampleTable(
        element_id=f"{anchor}-samples",
        columns=columns,
        filters=[f for f in filters if f["values"]],
        search=["query", "answer"],
        detail=[
            heading_part("Case {id} — {s} criteria met"),
            text_part("Query", "query"),
            text_part("Answer", "answer"),
            rows_part(
                "Verdicts",
                "v",
                [
                    {"label": "criterion", "index": 0},
                    {"label": "text", "index": 1},
                    {
                        "label": "verdict",
                        "index": 2,
                        "labels": {"true": "met", "false": "not met", "null": "judge error"},
                        "classes": {
                            "true": "verdict-met",
                            "false": "verdict-unmet",
                            "null": "verdict-error",
                        },
                    },
                    {"label": "judge", "index": 4, "lookup": "judges"},
                    {"label": "explanation", "index": 3},
                ],
                css_class="verdicts",
            ),
        ],
        rows=rows,
        extra={"judges": [short_model_label(j) for j in judges], "autoshow": True},
        title="Case browser",
    )
