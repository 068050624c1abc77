"""`clineval compare RUN_DIR...`: a leaderboard across runs and paired bootstrap tests.

Leaderboard: per task, each family's headline metrics with the run's stored 95% interval (or,
when the task stored none, a seeded bootstrap interval over the run's samples, as the report).
Paired test: for every pair of runs that scored the same task, on the sample ids both scored
(and only when their gold answers agree), the same seeded bootstrap resamples are applied to
both runs' per-sample statistics (see statistics.py); the report is the difference A - B on the
shared samples, the 95% percentile interval of the replicate differences, and a two-sided
p-value. Output: a terminal table, Markdown, CSV (tidy: one row per figure) or an HTML page.
The terminal tables fit the console's width: one row per run while that fits, else one row
per task and metric with the runs as columns (render_table); no figure is cut short.
"""

from __future__ import annotations

import csv
import io
import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from markupsafe import Markup
from rich.console import Console
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table

from clineval.errors import InputError
from clineval.metrics.bootstrap import DEFAULT_RESAMPLES
from clineval.progress import track
from clineval.report import statistics as st
from clineval.report.rundata import (
    RunData,
    finite_number,
    interval_of,
    is_fixture_task,
    load_run,
    task_family,
)
from clineval.report.sections_common import HEADLINE_KEYS, format_value
from clineval.report.task_stats import statistics_for
from clineval.rundir import atomic_write_text
from clineval.secrets import redact

FORMATS = ("table", "markdown", "csv", "html")
INTERVAL_NOTE = (
    "Intervals are seeded bootstrap percentile intervals: the run's own where it stored one "
    "(TCM-SD Macro-F1 resamples within gold labels, so every label keeps its support), "
    "else computed here over the run's samples."
)
LOWER_IS_BETTER = ("invalid_rate", "judge_error_rate")
_COUNT_KEYS = ("n", "n_cases")


@dataclass(frozen=True)
class Cell:
    value: float
    ci: tuple[float, float] | None


@dataclass(frozen=True)
class PairRow:
    task: str
    metric: str
    run_a: str
    run_b: str
    result: st.PairedResult | None
    note: str = ""


@dataclass
class Comparison:
    runs: list[RunData]
    labels: list[str]
    columns: list[tuple[str, str]]  # (task, metric)
    cells: dict[tuple[int, str, str], Cell]  # (run index, task, metric)
    fixture: dict[tuple[int, str], bool]
    pairs: list[PairRow]


def _labels(runs: list[RunData]) -> list[str]:
    names = [r.path.name for r in runs]
    if len(set(names)) == len(names):
        return names
    return [str(r.path) for r in runs]


def _columns(runs: list[RunData]) -> list[tuple[str, str]]:
    tasks: dict[str, None] = {}
    for run in runs:
        for task in run.results:
            tasks.setdefault(task, None)
    cols: list[tuple[str, str]] = []
    for task in tasks:
        family = task_family(task)
        present = [run.results.get(task, {}) for run in runs]
        keys = [k for k in HEADLINE_KEYS.get(family, ()) if k not in _COUNT_KEYS]
        if not keys:  # unknown task: its top-level numeric scalars
            keys = (
                [
                    k
                    for k, v in present[0].items()
                    if isinstance(v, int | float) and not isinstance(v, bool)
                ]
                if present
                else []
            )
        cols.extend((task, k) for k in keys if any(_number(m.get(k)) is not None for m in present))
    return cols


def _number(value: Any) -> float | None:
    return finite_number(value)  # NaN (e.g. macro-F1 of no samples) is no score to rank


def _gold_agrees(a: st.SampleStatistic, b: st.SampleStatistic) -> bool:
    if a.gold is None or b.gold is None:
        return True
    gold_b = dict(zip(b.ids, b.gold, strict=True))
    return all(gold_b.get(i, g) == g for i, g in zip(a.ids, a.gold, strict=True))


def build_comparison(
    run_dirs: list[Path], seed: int = 0, n_resamples: int = DEFAULT_RESAMPLES
) -> Comparison:
    if not run_dirs:
        raise InputError("compare needs at least one run directory")
    runs = [load_run(Path(d)) for d in run_dirs]
    labels = _labels(runs)
    columns = _columns(runs)
    tasks = list(dict.fromkeys(t for t, _ in columns))
    stats = {
        (i, task): statistics_for(task, run.results[task], run.samples.get(task, []))
        for i, run in enumerate(runs)
        for task in run.results
        if task in tasks
    }
    cells: dict[tuple[int, str, str], Cell] = {}
    fixture: dict[tuple[int, str], bool] = {}
    for i, run in enumerate(runs):
        for task, metrics in run.results.items():
            fixture[(i, task)] = is_fixture_task(run, task)
            for t, key in columns:
                value = _number(metrics.get(key)) if t == task else None
                if value is None:
                    continue
                ci = interval_of(metrics, key)
                stat = stats.get((i, task), {}).get(key)
                if ci is None and stat is not None:  # as the report: bootstrap over samples
                    ci = st.bootstrap_interval(stat, n_resamples, seed)
                cells[(i, task, key)] = Cell(value, ci)
    pairs: list[PairRow] = []
    jobs = [
        (task, key, i, j)
        for task in tasks
        for key in [k for t, k in columns if t == task]
        for i, j in itertools.combinations(range(len(runs)), 2)
        if (i, task) in stats and (j, task) in stats
    ]
    for task, key, i, j in track(jobs, total=len(jobs), description="paired bootstrap"):
        sa, sb = stats[(i, task)].get(key), stats[(j, task)].get(key)
        if sa is None or sb is None:
            continue  # e.g. invalid_rate, or a run without samples.jsonl
        aligned_a, aligned_b = st.align(sa, sb)
        if not _gold_agrees(aligned_a, aligned_b):
            note = "gold answers differ on shared samples: not comparable"
            pairs.append(PairRow(task, key, labels[i], labels[j], None, note))
            continue
        result = st.paired_bootstrap(sa, sb, n_resamples=n_resamples, seed=seed)
        note = "" if result is not None else "no shared samples"
        pairs.append(PairRow(task, key, labels[i], labels[j], result, note))
    return Comparison(runs, labels, columns, cells, fixture, pairs)


# -- rendering ------------------------------------------------------------------------------
def _fmt_cell(key: str, cell: Cell | None, with_ci: bool = True) -> str:
    if cell is None:
        return "–"
    text = format_value(key, cell.value)
    if with_ci and cell.ci is not None:
        text += f" [{format_value(key, cell.ci[0])}, {format_value(key, cell.ci[1])}]"
    return text


def _best(comp: Comparison, task: str, key: str) -> int | None:
    scored = [(i, c.value) for i in range(len(comp.runs)) if (c := comp.cells.get((i, task, key)))]
    if len(scored) < 2 or len({v for _, v in scored}) == 1:
        return None  # nothing to single out
    pick = min if key in LOWER_IS_BETTER else max
    return pick(scored, key=lambda t: t[1])[0]


def _model(run: RunData) -> str:
    return redact(str(run.manifest.get("config", {}).get("model", "?")))


def _run_label(comp: Comparison, i: int) -> str:
    fixture = any(v for (j, _), v in comp.fixture.items() if j == i)
    return comp.labels[i] + (" (fixture)" if fixture else "")


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
        table.add_column(escape(f"{task}\n{key}"), justify="right")
    for i, run in enumerate(comp.runs):
        cells = []
        for task, key in comp.columns:
            text = _fmt_cell(key, comp.cells.get((i, task, key)))
            cells.append(f"[bold]{text}[/bold]" if _best(comp, task, key) == i else text)
        # Run names and model specs are user text: escaped, so "[" in them is not rich markup.
        table.add_row(escape(_run_label(comp, i)), escape(_model(run)), *cells)
    return table


def _long_leaderboard(comp: Comparison, runs: list[int], stacked: bool, title: str) -> Table:
    """One row per (task, metric), the runs as columns; `stacked` puts each interval under
    its value. Every column folds rather than cutting text short with an ellipsis."""
    table = Table(title=title, show_header=True)
    table.add_column("task", overflow="fold")
    table.add_column("metric", overflow="fold")
    for i in runs:
        table.add_column(escape(_run_label(comp, i)), justify="right", overflow="fold")
    for task, key in comp.columns:
        cells = []
        for i in runs:
            cell = comp.cells.get((i, task, key))
            text = _fmt_cell(key, cell, with_ci=not stacked)
            if stacked and cell is not None and cell.ci is not None:
                text += f"\n[{format_value(key, cell.ci[0])}, {format_value(key, cell.ci[1])}]"
            text = escape(text)
            cells.append(f"[bold]{text}[/bold]" if _best(comp, task, key) == i else text)
        table.add_row(escape(task), escape(key), *cells)
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
        wide.add_row(escape(f"{t[0]} {t[1]}"), escape(f"{t[2]} vs {t[3]}"), *t[4:10])
    if _fits(console, wide):
        return wide
    narrow = Table(title=title, show_header=True)
    narrow.add_column("task / metric\nA vs B", overflow="fold")
    for name in ("n", "A", "B", "A - B\n95% CI", "p"):
        narrow.add_column(name, justify="right", overflow="fold")
    for row in tested:
        t = _pair_text(row)
        narrow.add_row(
            escape(f"{t[0]}\n{t[1]}\n{t[2]} vs {t[3]}"), t[4], t[5], t[6], f"{t[7]}\n{t[8]}", t[9]
        )
    return narrow


def render_table(comp: Comparison, console: Console) -> None:
    """The leaderboard and paired tests as tables that fit `console`'s width (see
    `_leaderboard_tables`); Markdown, CSV and HTML keep one layout whatever the width."""
    tables, runs_as_columns = _leaderboard_tables(comp, console)
    if runs_as_columns:  # the models have no column: name them above
        for i, run in enumerate(comp.runs):
            console.print(
                f"run {_run_label(comp, i)}: model {_model(run)}", markup=False, highlight=False
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
    for i, run in enumerate(comp.runs):
        cells = []
        for task, key in comp.columns:
            text = _fmt_cell(key, comp.cells.get((i, task, key)))
            cells.append(f"**{text}**" if _best(comp, task, key) == i else text)
        row = [_run_label(comp, i), _model(run), *cells]
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
    for i, run in enumerate(comp.runs):
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
                    _model(run),
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
    for i, run in enumerate(comp.runs):
        cells = []
        for task, key in comp.columns:
            cells.append(
                {
                    "text": _fmt_cell(key, comp.cells.get((i, task, key))),
                    "best": _best(comp, task, key) == i,
                }
            )
        rows.append({"label": _run_label(comp, i), "model": _model(run), "cells": cells})
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


def compare_runs(
    run_dirs: list[Path],
    fmt: str = "table",
    output: Path | None = None,
    seed: int = 0,
    console: Console | None = None,
) -> Comparison:
    """Build the comparison and write/print it in `fmt` (table|markdown|csv|html)."""
    if fmt not in FORMATS:
        raise InputError(f"--format {fmt!r} is not one of {', '.join(FORMATS)}")
    comp = build_comparison(run_dirs, seed=seed)
    console = console or Console()
    if fmt == "table":
        if output is None:
            render_table(comp, console)
            return comp
        recorder = Console(record=True, width=200, file=io.StringIO())
        render_table(comp, recorder)
        text = recorder.export_text()
    elif fmt == "markdown":
        text = render_markdown(comp)
    elif fmt == "csv":
        text = render_csv(comp)
    else:
        text = render_html(comp)
        output = output or Path("compare.html")
    if output is None:
        console.print(text, markup=False, highlight=False, soft_wrap=True, end="")
    else:
        atomic_write_text(output, text)
        console.print(f"wrote {output}")
    return comp
