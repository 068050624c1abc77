"""`clineval compare RUN_DIR...`: a leaderboard across runs and paired bootstrap tests.

The comparison itself (runs read, shared samples aligned, paired bootstrap tests) is
model's; its renderings (terminal table, Markdown, CSV, HTML) are render's.
This module picks the format and writes or prints the result.
"""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from clineval.console import make_console
from clineval.errors import InputError
from clineval.jsonio import json_document
from clineval.report.compare.build import build_comparison
from clineval.report.compare.html import render_html
from clineval.report.compare.model import Comparison
from clineval.report.compare.render import render_csv, render_markdown, render_table
from clineval.rundir import atomic_write_text

FORMATS = ("table", "markdown", "csv", "html", "json")
MIN_FIXED_RESAMPLES = 100  # fewer cannot draw a 95% interval's tails
MAX_FIXED_RESAMPLES = 5_000_000  # bounds the time a typo (an extra zero or three) can cost


def compare_runs(
    run_dirs: list[Path],
    fmt: str = "table",
    output: Path | None = None,
    seed: int = 0,
    console: Console | None = None,
    resamples: int | None = None,
) -> Comparison:
    """Build the comparison and write/print it in `fmt` (table|markdown|csv|html|json).
    `resamples` fixes the paired tests' bootstrap resamples (default: as many as each column
    needs, see paired_tests)."""
    if fmt not in FORMATS:
        raise InputError(f"--format {fmt!r} is not one of {', '.join(FORMATS)}")
    if resamples is not None and not MIN_FIXED_RESAMPLES <= resamples <= MAX_FIXED_RESAMPLES:
        raise InputError(
            f"--resamples {resamples}: give {MIN_FIXED_RESAMPLES:,} to {MAX_FIXED_RESAMPLES:,}"
        )
    comp = build_comparison(run_dirs, seed=seed, n_resamples=resamples)
    console = console or make_console()
    if fmt == "table":
        if output is None:
            render_table(comp, console)
            return comp
        recorder = make_console(record=True, width=200, file=io.StringIO())
        render_table(comp, recorder)
        text = recorder.export_text()
    elif fmt == "markdown":
        text = render_markdown(comp)
    elif fmt == "csv":
        text = render_csv(comp)
    elif fmt == "json":
        text = render_json(comp)
    else:
        text = render_html(comp)
        output = output or Path("compare.html")
    if output is None:
        console.print(text, markup=False, highlight=False, soft_wrap=True, end="")
    else:
        atomic_write_text(output, text)
        console.print(f"wrote {output}")
    return comp


def render_json(comp: Comparison) -> str:
    """The comparison as one JSON document (`compare --format json`): the runs, one leaderboard
    cell per run, task and metric (with its 95% interval), and the paired tests."""
    runs = [
        {
            "label": label,
            "run_dir": comp.run_dirs[i],
            "model": comp.models[i],
            "fixture": comp.fixture_runs[i],
            "settings": comp.differences.values[i],
            "samples_differ": {
                task: note for (j, task), note in comp.sample_notes.items() if j == i
            },
        }
        for i, label in enumerate(comp.runs)
    ]
    cells = [
        {
            "run": cell.run,
            "task": task,
            "metric": metric,
            "value": cell.value,
            "ci": None if cell.ci is None else list(cell.ci),
            "n": cell.n,
            "samples_differ": (i, task) in comp.sample_notes,
            "best": cell.best,
            "fixture": cell.fixture,
        }
        for (i, task, metric), cell in comp.cells.items()
    ]
    pairs = [
        {
            "task": row.task,
            "metric": row.metric,
            "run_a": row.run_a,
            "run_b": row.run_b,
            "n_shared": row.n_shared,
            "a": row.a,
            "b": row.b,
            "difference": row.difference,
            "ci": None if row.ci is None else list(row.ci),
            "p_value": row.p_value,
            "p_holm": row.p_holm,
            "resamples": row.resamples,
            "note": row.note,
        }
        for row in comp.pairs
    ]
    resampling = [
        {"task": task, "metric": metric, **vars(how), "text": how.describe()}
        for (task, metric), how in comp.resampling.items()
    ]
    return json_document(
        {
            "runs": runs,
            "differing_settings": comp.differences.keys,
            "leaderboard": cells,
            "pairs": pairs,
            "resampling": resampling,
        }
    )
