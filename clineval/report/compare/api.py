"""`clineval.compare`: the comparison `clineval compare` builds (model.Comparison), with the
text the command would print or write. Part of the Python API (clineval.api)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from clineval.api_arguments import PathLike, checked_arguments
from clineval.report.compare.model import Comparison


@checked_arguments
def compare(
    run_dirs: PathLike | Sequence[PathLike],
    *,
    format: str = "table",
    output: PathLike | None = None,
    seed: int = 0,
    resamples: int | None = None,
) -> Comparison:
    """A leaderboard across runs with paired bootstrap tests (`clineval compare`). `format`
    table|markdown|csv|html|json; with `output` the rendering is also written to that file (html
    without `output` goes to ./compare.html, as on the command line). `resamples` fixes the
    paired tests' bootstrap resamples (default: as many as the number of pairs and the
    p-values' closeness to the threshold need)."""
    import io

    from clineval.console import make_console
    from clineval.report.compare.command import compare_runs
    from clineval.report.compare.render import render_markdown

    # What the command prints goes to a string here: returned as `text`.
    sink = io.StringIO()
    console = make_console(file=sink, width=200, color_system=None, soft_wrap=False)
    target = Path(output) if output is not None else None
    # One directory as itself, not as the characters of its name.
    dirs = [run_dirs] if isinstance(run_dirs, str | os.PathLike) else list(run_dirs)
    comp = compare_runs(
        [Path(d) for d in dirs],
        fmt=format,
        output=target,
        seed=seed,
        console=console,
        resamples=resamples,
    )
    if target is not None:
        text = target.read_text(encoding="utf-8")
    elif format == "html":  # compare_runs writes an HTML page to compare.html by default
        text = Path("compare.html").read_text(encoding="utf-8")
    else:
        text = sink.getvalue()
    return replace(comp, text=text, markdown=render_markdown(comp))
