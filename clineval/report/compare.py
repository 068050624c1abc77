"""`clineval compare RUN_DIR...`: a leaderboard across runs and paired bootstrap tests.

The comparison itself (runs read, shared samples aligned, paired bootstrap tests) is
compare_model's; its renderings (terminal table, Markdown, CSV, HTML) are compare_render's.
This module picks the format and writes or prints the result.
"""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from clineval.console import make_console
from clineval.errors import InputError
from clineval.report.compare_model import Comparison, build_comparison
from clineval.report.compare_render import render_csv, render_html, render_markdown, render_table
from clineval.rundir import atomic_write_text

FORMATS = ("table", "markdown", "csv", "html")


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
    else:
        text = render_html(comp)
        output = output or Path("compare.html")
    if output is None:
        console.print(text, markup=False, highlight=False, soft_wrap=True, end="")
    else:
        atomic_write_text(output, text)
        console.print(f"wrote {output}")
    return comp
