"""Renderings of a comparison (model): a terminal table, Markdown, CSV, an HTML page.

The terminal tables fit the console's width: one row per run while that fits, else one row
per task and metric with the runs as columns (render_table); no figure is cut short. Markdown,
CSV (tidy: one row per figure) and HTML keep one layout whatever the width.
"""

from __future__ import annotations

from typing import NamedTuple

from rich.console import Console
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from clineval.csv_text import csv_text
from clineval.report.compare.model import Comparison, LeaderboardCell, PairedTest
from clineval.report.compare.paired_tests import ALPHA
from clineval.reportkit.sections_common import format_value

BEST_NOTE = (
    f"Bold: the top value, separated from every other run by the paired bootstrap on shared "
    f"samples (two-sided, p < {ALPHA} after Holm's correction over the pairs of that task and "
    "metric). A top value the test does not separate is not marked. Each task and metric "
    "draws enough resamples for its number of pairs, and more while a p-value is close to "
    f"{ALPHA}; `resamples` says how many."
)
INTERVAL_NOTE = (
    "Intervals are seeded bootstrap percentile intervals: the run's own where it stored one "
    "(a benchmark may resample within strata, e.g. within gold labels so that every label "
    "keeps its support), "
    "else computed here over the run's samples."
)


def _fmt_cell(
    key: str, cell: LeaderboardCell | None, with_ci: bool = True, digits: int | None = None
) -> str:
    if cell is None:
        return "–"
    text = format_value(key, cell.value, digits)
    if with_ci and cell.ci is not None:
        low, high = (format_value(key, b, digits) for b in cell.ci)
        text += f" [{low}, {high}]"
    if cell.n is not None:  # what the figure stands on
        text += f" (n={cell.n:,})"
    return text


SAMPLES_FLAG = " [samples differ]"


def _run_label(comp: Comparison, i: int) -> str:
    return (
        comp.runs[i]
        + (" (fixture)" if comp.fixture_runs[i] else "")
        + (SAMPLES_FLAG if comp.samples_note(i) else "")
    )


def run_lines(comp: Comparison) -> list[str]:
    """What tells the runs apart: each run's settings that differ from the others', and why
    a run's samples differ (a `--limit` run beside a full one). Empty when nothing does."""
    lines = []
    if comp.differences.keys:
        lines.append("the runs differ in: " + ", ".join(comp.differences.keys))
        lines += [f"  {comp.runs[i]}: {comp.settings(i)}" for i in range(len(comp.runs))]
    for i in range(len(comp.runs)):
        note = comp.samples_note(i)
        if note:
            lines.append(f"{comp.runs[i]}{SAMPLES_FLAG}: {note}")
    return lines


class PairFigures(NamedTuple):
    """The figures of a tested pair, all present."""

    n_shared: int
    a: float
    b: float
    difference: float
    ci: tuple[float, float]
    p_value: float


def pair_figures(row: PairedTest) -> PairFigures | None:
    """A pair's figures, or None when it was not tested (its note says why)."""
    n, a, b, difference, ci, p = row.n_shared, row.a, row.b, row.difference, row.ci, row.p_value
    if n is None or a is None or b is None or difference is None or ci is None or p is None:
        return None
    return PairFigures(n, a, b, difference, ci, p)


def _pair_text(row: PairedTest, digits: int | None = None) -> list[str]:
    """[task, metric, run A, run B, shared, A, B, A - B, 95% CI, p, p Holm, note, resamples]
    as text."""
    r = pair_figures(row)
    if r is None:
        return [row.task, row.metric, row.run_a, row.run_b, *[""] * 7, row.note, ""]
    key = row.metric
    low, high = format_value(key, r.ci[0], digits), format_value(key, r.ci[1], digits)
    return [
        row.task,
        row.metric,
        row.run_a,
        row.run_b,
        str(r.n_shared),
        format_value(key, r.a, digits),
        format_value(key, r.b, digits),
        format_value(key, r.difference, digits),
        f"[{low}, {high}]",
        f"{r.p_value:.4f}",
        "" if row.p_holm is None else f"{row.p_holm:.4f}",
        row.note,
        "" if row.resamples is None else f"{row.resamples:,}",
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
    "p (Holm)",
    "note",
    "resamples",
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
    # the model column names the candidate: the rest of what differs beside it
    differs = [k for k in comp.differences.keys if k != "candidate"]
    if differs:
        table.add_column("differs")
    for task, key in comp.columns:
        table.add_column(Text(f"{task}\n{key}"), justify="right")
    for i in range(len(comp.runs)):
        cells = []
        for task, key in comp.columns:
            text = _fmt_cell(key, comp.cells.get((i, task, key)), digits=comp.digits(task, key))
            cells.append(Text(text, style="bold") if comp.best(task, key) == i else Text(text))
        # Run names and model specs are user text: Text, so no console reads markup in them.
        named = [Text(_run_label(comp, i)), Text(comp.models[i])]
        if differs:
            named.append(Text(comp.settings(i, skip=("candidate",))))
        table.add_row(*named, *cells)
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
            digits = comp.digits(task, key)
            text = _fmt_cell(key, cell, with_ci=not stacked, digits=digits)
            if stacked and cell is not None and cell.ci is not None:
                low, high = (format_value(key, b, digits) for b in cell.ci)
                text += f"\n[{low}, {high}]"
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


def _pairs_table(comp: Comparison, rows: list[PairedTest], console: Console) -> Table:
    """The paired tests, one row each; when that does not fit, task / metric / runs share
    one column and each interval goes under its difference."""
    title = "paired bootstrap on shared samples (A - B)"
    wide = Table(title=title, show_header=True)
    for name in ("task / metric", "A vs B", "n", "A", "B", "A - B", "95% CI", "p", "p Holm"):
        wide.add_column(name, justify="left" if name in ("task / metric", "A vs B") else "right")
    for row in rows:
        t = _pair_text(row, comp.digits(row.task, row.metric))
        wide.add_row(Text(f"{t[0]} {t[1]}"), Text(f"{t[2]} vs {t[3]}"), *t[4:11])
    if _fits(console, wide):
        return wide
    narrow = Table(title=title, show_header=True)
    narrow.add_column("task / metric\nA vs B", overflow="fold")
    for name in ("n", "A", "B", "A - B\n95% CI", "p\nHolm"):
        narrow.add_column(name, justify="right", overflow="fold")
    for row in rows:
        t = _pair_text(row, comp.digits(row.task, row.metric))
        narrow.add_row(
            Text(f"{t[0]}\n{t[1]}\n{t[2]} vs {t[3]}"),
            t[4],
            t[5],
            t[6],
            f"{t[7]}\n{t[8]}",
            f"{t[9]}\n{t[10]}",
        )
    return narrow


def render_table(comp: Comparison, console: Console) -> None:
    """The leaderboard and paired tests as tables that fit `console`'s width (see
    `_leaderboard_tables`); Markdown, CSV and HTML keep one layout whatever the width."""
    tables, runs_as_columns = _leaderboard_tables(comp, console)
    if runs_as_columns:  # the models have no column: name them above
        for i in range(len(comp.runs)):
            console.print(
                f"run {_run_label(comp, i)}: model {comp.models[i]}", markup=False, highlight=False
            )
    for table in tables:
        console.print(table)
    done = [p for p in comp.pairs if pair_figures(p) is not None]
    if done:
        console.print(_pairs_table(comp, done, console))
    for row in comp.pairs:
        if pair_figures(row) is None:
            console.print(
                f"not tested: {row.task} {row.metric} {row.run_a} vs {row.run_b}: {row.note}",
                markup=False,
            )
    for line in [*run_lines(comp), *resampling_lines(comp)]:
        console.print(line, markup=False, highlight=False)
    console.print(BEST_NOTE, markup=False, highlight=False)
    for line in cost_lines(comp):
        console.print(line, markup=False, highlight=False)
    if any(comp.fixture_runs):
        console.print("(fixture): fixture/synthetic data, not a benchmark result")


def resampling_lines(comp: Comparison) -> list[str]:
    """How many bootstrap resamples each column's paired tests drew (one line when the same
    for every column), and any column whose decision that number leaves open."""
    described = {column: how.describe() for column, how in comp.resampling.items()}
    if not described:
        return []
    if len(set(described.values())) == 1:
        return [f"paired tests: {next(iter(described.values()))} each"]
    return ["paired tests:"] + [f"  {t} {k}: {text}" for (t, k), text in described.items()]


def cost_lines(comp: Comparison) -> list[str]:
    """Score beside cost, for runs that recorded an estimated cost: each run's primary
    figures and what its model calls cost."""
    costs = comp.costs
    if all(c is None for c in costs):
        return []
    primaries = list(dict.fromkeys(t for t, _ in comp.columns))
    lines = ["score and cost (estimated, USD):"]
    for i, cost in enumerate(costs):
        figures = []
        for task in primaries:
            key = next(k for t, k in comp.columns if t == task)
            cell = comp.cells.get((i, task, key))
            if cell is not None:
                shown = format_value(key, cell.value, comp.digits(task, key))
                figures.append(f"{task} {key} {shown}")
        spent = "no cost recorded" if cost is None else f"${cost:,.4f}"
        lines.append(f"  {_run_label(comp, i)}: {spent}; " + ", ".join(figures))
    return lines


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(comp: Comparison) -> str:
    """The leaderboard in the long layout (one row per task and metric, a column per run),
    which stays readable however many metrics a suite has; then the runs' models and the
    paired tests."""
    runs = range(len(comp.runs))
    head = ["task", "metric", *(_run_label(comp, i) for i in runs)]
    lines = ["| " + " | ".join(map(_md_escape, head)) + " |", "|" + "---|" * len(head)]
    for task, key in comp.columns:
        cells = []
        for i in runs:
            text = _fmt_cell(key, comp.cells.get((i, task, key)), digits=comp.digits(task, key))
            cells.append(f"**{text}**" if comp.best(task, key) == i else text)
        arrow = "" if comp.higher_is_better(task, key) else " (lower is better)"
        lines.append("| " + " | ".join(_md_escape(c) for c in [task, key + arrow, *cells]) + " |")
    lines += ["", "| run | model | differs | samples |", "|---|---|---|---|"]
    lines += [
        "| "
        + " | ".join(
            _md_escape(c)
            for c in (_run_label(comp, i), comp.models[i], comp.settings(i), comp.samples_note(i))
        )
        + " |"
        for i in runs
    ]
    if comp.pairs:
        lines += ["", "Paired bootstrap on shared samples (A - B):", ""]
        lines.append("| " + " | ".join(PAIR_HEADER) + " |")
        lines.append("|" + "---|" * len(PAIR_HEADER))
        for pair in comp.pairs:
            pair_cells = _pair_text(pair, comp.digits(pair.task, pair.metric))
            lines.append("| " + " | ".join(_md_escape(c) for c in pair_cells) + " |")
    lines += ["", *resampling_lines(comp), "", BEST_NOTE, "", INTERVAL_NOTE]
    costs = cost_lines(comp)
    if costs:
        lines += ["", *costs]
    if any(comp.fixture_runs):
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
    "p_holm",
    "a",
    "b",
    # the metric's declared direction (True: higher is better), so a reader of the CSV alone
    # ranks it as compare does
    "higher_is_better",
    # the bootstrap resamples of a paired row's test
    "resamples",
    # a score row's n; its run's settings that differ from the other runs'; why its samples
    # of the task differ from the other runs'
    "n",
    "settings",
    "samples_note",
]


def render_csv(comp: Comparison) -> str:
    """Tidy CSV: `score` rows (one per run, task, metric) and `paired` rows (value = A - B)."""
    rows: list[list[object]] = []
    for i in range(len(comp.runs)):
        for task, key in comp.columns:
            cell = comp.cells.get((i, task, key))
            if cell is None:
                continue
            low, high = cell.ci if cell.ci is not None else ("", "")
            rows.append(
                [
                    "score",
                    task,
                    key,
                    comp.runs[i],
                    "",
                    comp.models[i],
                    cell.fixture,
                    repr(cell.value),
                    low,
                    high,
                    "",
                    "",
                    "",
                    "",
                    "",
                    "",
                    comp.higher_is_better(task, key),
                    "",
                    "" if cell.n is None else cell.n,
                    comp.settings(i),
                    comp.sample_notes.get((i, task), ""),
                ]
            )
    for pair in comp.pairs:
        r = pair_figures(pair)
        # A pair without shared samples keeps its row (with the note saying why), blank figures.
        figures = (
            ["", "", "", "", ""]
            if r is None
            else [repr(r.difference), repr(r.ci[0]), repr(r.ci[1]), repr(r.p_value), r.n_shared]
        )
        extra = (
            ["", "", ""]
            if r is None
            else ["" if pair.p_holm is None else repr(pair.p_holm), repr(r.a), repr(r.b)]
        )
        rows.append(
            [
                "paired",
                *(pair.task, pair.metric, pair.run_a, pair.run_b, "", ""),
                *figures,
                pair.note,
                *extra,
                comp.higher_is_better(pair.task, pair.metric),
                "" if pair.resamples is None else pair.resamples,
                "",
                "",
                "",
            ]
        )
    return csv_text(CSV_HEADER, rows)
