"""Renderings of a comparison (compare_model): a terminal table, Markdown, CSV, an HTML page.

The terminal tables fit the console's width: one row per run while that fits, else one row
per task and metric with the runs as columns (render_table); no figure is cut short. Markdown,
CSV (tidy: one row per figure) and HTML keep one layout whatever the width.
"""

from __future__ import annotations

import csv
import io

from markupsafe import Markup
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from clineval.report.compare_model import Cell, Comparison, PairRow
from clineval.report.sections_common import format_value

INTERVAL_NOTE = (
    "Intervals are seeded bootstrap percentile intervals: the run's own where it stored one "
    "(TCM-SD Macro-F1 resamples within gold labels, so every label keeps its support), "
    "else computed here over the run's samples."
)


def _fmt_cell(key: str, cell: Cell | None, with_ci: bool = True) -> str:
    if cell is None:
        return "–"
    text = format_value(key, cell.value)
    if with_ci and cell.ci is not None:
        text += f" [{format_value(key, cell.ci[0])}, {format_value(key, cell.ci[1])}]"
    return text


def _run_label(comp: Comparison, i: int) -> str:
    return comp.labels[i] + (" (fixture)" if comp.is_fixture_run(i) else "")


def _pair_text(row: PairRow) -> list[str]:
    """[task, metric, run A, run B, shared, A, B, A - B, 95% CI, p, note] as text."""
    r = row.result
    if r is None:
        return [row.task, row.metric, row.run_a, row.run_b, "", "", "", "", "", "", row.note]
    key = row.metric
    low, high = format_value(key, r.ci[0]), format_value(key, r.ci[1])
    return [
        row.task,
        row.metric,
        row.run_a,
        row.run_b,
        str(r.n_shared),
        format_value(key, r.a),
        format_value(key, r.b),
        format_value(key, r.delta),
        f"[{low}, {high}]",
        f"{r.p_value:.4f}",
        row.note,
    ]


PAIR_HEADER = [
    "task",
    "metric",
    "run A",
    "run B",
    "shared",
    "A",
    "B",
    "A - B",
    "95% CI",
    "p",
    "note",
]


_UNBOUNDED = 100_000  # columns: room enough to measure a table's natural width


def _fits(console: Console, table: Table) -> bool:
    """Whether `table` shows at its natural width (no cell wrapped or cut) on `console`."""
    natural = Measurement.get(console, console.options.update_width(_UNBOUNDED), table)
    return natural.maximum <= console.options.max_width


def _wide_leaderboard(comp: Comparison) -> Table:
    """One row per run, one column per (task, metric): the natural layout for a few metrics."""
    table = Table(title="leaderboard", show_header=True)
    table.add_column("run")
    table.add_column("model")
    for task, key in comp.columns:
        table.add_column(Text(f"{task}\n{key}"), justify="right")
    for i in range(len(comp.runs)):
        cells = []
        for task, key in comp.columns:
            text = _fmt_cell(key, comp.cells.get((i, task, key)))
            cells.append(Text(text, style="bold") if comp.best(task, key) == i else Text(text))
        # Run names and model specs are user text: Text, so no console reads markup in them.
        table.add_row(Text(_run_label(comp, i)), Text(comp.model(i)), *cells)
    return table


def _long_leaderboard(comp: Comparison, runs: list[int], stacked: bool, title: str) -> Table:
    """One row per (task, metric), the runs as columns; `stacked` puts each interval under
    its value. Every column folds rather than cutting text short with an ellipsis."""
    table = Table(title=title, show_header=True)
    table.add_column("task", overflow="fold")
    table.add_column("metric", overflow="fold")
    for i in runs:
        table.add_column(Text(_run_label(comp, i)), justify="right", overflow="fold")
    for task, key in comp.columns:
        cells = []
        for i in runs:
            cell = comp.cells.get((i, task, key))
            text = _fmt_cell(key, cell, with_ci=not stacked)
            if stacked and cell is not None and cell.ci is not None:
                text += f"\n[{format_value(key, cell.ci[0])}, {format_value(key, cell.ci[1])}]"
            cells.append(Text(text, style="bold") if comp.best(task, key) == i else Text(text))
        table.add_row(Text(task), Text(key), *cells)
    return table


def _leaderboard_tables(comp: Comparison, console: Console) -> tuple[list[Table], bool]:
    """The leaderboard laid out to fit the console, and whether the runs are its columns:
    runs as rows while that fits; else runs as columns (intervals beside, then under, the
    values), as many runs per table as fit.

    Squeezed into too few columns, rich cut a 14-column NER leaderboard to `ne… 0.…` cells."""
    wide = _wide_leaderboard(comp)
    if _fits(console, wide):
        return [wide], False
    everyone = list(range(len(comp.runs)))
    for stacked in (False, True):
        table = _long_leaderboard(comp, everyone, stacked, "leaderboard")
        if _fits(console, table):
            return [table], True
    per_table = len(everyone) - 1
    while True:
        groups = [everyone[k : k + per_table] for k in range(0, len(everyone), per_table)]
        tables = [
            _long_leaderboard(
                comp, group, True, f"leaderboard (runs {group[0] + 1}-{group[-1] + 1})"
            )
            for group in groups
        ]
        if per_table <= 1 or all(_fits(console, t) for t in tables):
            return tables, True  # one run a table is the last resort: cells fold, never cut
        per_table -= 1


def _pairs_table(tested: list[PairRow], console: Console) -> Table:
    """The paired tests, one row each; when that does not fit, task / metric / runs share
    one column and each interval goes under its difference."""
    title = "paired bootstrap on shared samples (A - B)"
    wide = Table(title=title, show_header=True)
    for name in ("task / metric", "A vs B", "n", "A", "B", "A - B", "95% CI", "p"):
        wide.add_column(name, justify="left" if name in ("task / metric", "A vs B") else "right")
    for row in tested:
        t = _pair_text(row)
        wide.add_row(Text(f"{t[0]} {t[1]}"), Text(f"{t[2]} vs {t[3]}"), *t[4:10])
    if _fits(console, wide):
        return wide
    narrow = Table(title=title, show_header=True)
    narrow.add_column("task / metric\nA vs B", overflow="fold")
    for name in ("n", "A", "B", "A - B\n95% CI", "p"):
        narrow.add_column(name, justify="right", overflow="fold")
    for row in tested:
        t = _pair_text(row)
        narrow.add_row(
            Text(f"{t[0]}\n{t[1]}\n{t[2]} vs {t[3]}"),
            t[4],
            t[5],
            t[6],
            f"{t[7]}\n{t[8]}",
            t[9],
        )
    return narrow


def render_table(comp: Comparison, console: Console) -> None:
    """The leaderboard and paired tests as tables that fit `console`'s width (see
    `_leaderboard_tables`); Markdown, CSV and HTML keep one layout whatever the width."""
    tables, runs_as_columns = _leaderboard_tables(comp, console)
    if runs_as_columns:  # the models have no column: name them above
        for i in range(len(comp.runs)):
            console.print(
                f"run {_run_label(comp, i)}: model {comp.model(i)}", markup=False, highlight=False
            )
    for table in tables:
        console.print(table)
    tested = [p for p in comp.pairs if p.result is not None]
    if tested:
        console.print(_pairs_table(tested, console))
    for row in comp.pairs:
        if row.result is None:
            console.print(
                f"not tested: {row.task} {row.metric} {row.run_a} vs {row.run_b}: {row.note}",
                markup=False,
            )
    if any(comp.fixture.values()):
        console.print("(fixture): fixture/synthetic data, not a benchmark result")


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(comp: Comparison) -> str:
    head = ["run", "model"] + [f"{t} {k}" for t, k in comp.columns]
    lines = ["| " + " | ".join(map(_md_escape, head)) + " |", "|" + "---|" * len(head)]
    for i in range(len(comp.runs)):
        cells = []
        for task, key in comp.columns:
            text = _fmt_cell(key, comp.cells.get((i, task, key)))
            cells.append(f"**{text}**" if comp.best(task, key) == i else text)
        row = [_run_label(comp, i), comp.model(i), *cells]
        lines.append("| " + " | ".join(_md_escape(c) for c in row) + " |")
    if comp.pairs:
        lines += ["", "Paired bootstrap on shared samples (A - B):", ""]
        lines.append("| " + " | ".join(PAIR_HEADER) + " |")
        lines.append("|" + "---|" * len(PAIR_HEADER))
        for pair in comp.pairs:
            lines.append("| " + " | ".join(_md_escape(c) for c in _pair_text(pair)) + " |")
    lines += ["", INTERVAL_NOTE]
    if any(comp.fixture.values()):
        lines += ["", "(fixture): fixture/synthetic data, not a benchmark result."]
    return "\n".join(lines) + "\n"


CSV_HEADER = [
    "kind",
    "task",
    "metric",
    "run",
    "other_run",
    "model",
    "fixture",
    "value",
    "ci_low",
    "ci_high",
    "p_value",
    "n_shared",
    "note",
]


def render_csv(comp: Comparison) -> str:
    """Tidy CSV: `score` rows (one per run, task, metric) and `paired` rows (value = A - B)."""
    buf = io.StringIO()
    out = csv.writer(buf, lineterminator="\n")
    out.writerow(CSV_HEADER)
    for i in range(len(comp.runs)):
        for task, key in comp.columns:
            cell = comp.cells.get((i, task, key))
            if cell is None:
                continue
            low, high = cell.ci if cell.ci is not None else ("", "")
            fixture = comp.fixture.get((i, task), False)
            out.writerow(
                [
                    "score",
                    task,
                    key,
                    comp.labels[i],
                    "",
                    comp.model(i),
                    fixture,
                    repr(cell.value),
                    low,
                    high,
                    "",
                    "",
                    "",
                ]
            )
    for pair in comp.pairs:
        r = pair.result
        # A pair without shared samples keeps its row (with the note saying why), blank figures.
        figures = (
            ["", "", "", "", ""]
            if r is None
            else [repr(r.delta), repr(r.ci[0]), repr(r.ci[1]), repr(r.p_value), r.n_shared]
        )
        out.writerow(
            ["paired", pair.task, pair.metric, pair.run_a, pair.run_b, "", "", *figures, pair.note]
        )
    return buf.getvalue()


def render_html(comp: Comparison) -> str:
    from clineval.report.html import asset, environment

    rows = []
    for i in range(len(comp.runs)):
        cells = []
        for task, key in comp.columns:
            cells.append(
                {
                    "text": _fmt_cell(key, comp.cells.get((i, task, key))),
                    "best": comp.best(task, key) == i,
                }
            )
        rows.append({"label": _run_label(comp, i), "model": comp.model(i), "cells": cells})
    return (
        environment()
        .get_template("compare.html.j2")
        .render(
            columns=comp.columns,
            rows=rows,
            pair_header=PAIR_HEADER,
            pairs=[_pair_text(p) for p in comp.pairs],
            any_fixture=any(comp.fixture.values()),
            interval_note=INTERVAL_NOTE,
            css=Markup(asset("report.css")),
        )
    )
