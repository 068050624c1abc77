"""`clineval compare` as Python objects: the leaderboard cells, the paired tests, and the
comparison rendered as the command renders it. Part of the Python API (clineval.api)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clineval.errors import checked_arguments
from clineval.run_result import PathLike, pandas_module


@dataclass(frozen=True)
class LeaderboardCell:
    run: str
    task: str
    metric: str
    value: float
    ci: tuple[float, float] | None
    fixture: bool
    # the metric's direction (declared, or as the run record wrote it when the benchmark is
    # not installed); `leader`: this run has the single top value; `best`: and the paired
    # test separates it from every other run (Holm-corrected, level ALPHA of compare_model)
    higher_is_better: bool = True
    best: bool = False
    leader: bool = False
    # what the figure stands on (its declared basis, else the run's samples of the task)
    n: int | None = None


@dataclass(frozen=True)
class PairedTest:
    """Run A minus run B on the samples both scored, with a seeded paired bootstrap."""

    task: str
    metric: str
    run_a: str
    run_b: str
    difference: float | None
    ci: tuple[float, float] | None
    p_value: float | None
    n_shared: int | None
    note: str
    # run A's and run B's figure on the shared samples, and the p-value after Holm's
    # correction over the pairs of the same task and metric
    a: float | None = None
    b: float | None = None
    p_holm: float | None = None
    # the bootstrap resamples the test drew (compare draws as many as the column needs)
    resamples: int | None = None


@dataclass(frozen=True)
class Comparison:
    """`clineval compare` as data: `leaderboard` (one cell per run, task and metric),
    `pairs` (paired tests), and `text`, the comparison rendered in the format asked for."""

    runs: list[str]
    leaderboard: list[LeaderboardCell]
    pairs: list[PairedTest]
    text: str = field(repr=False)
    markdown: str = field(repr=False)

    def _repr_markdown_(self) -> str:  # a notebook shows the Markdown leaderboard
        return self.markdown

    def __str__(self) -> str:
        return self.text

    def to_dataframe(self) -> Any:
        """The leaderboard, one row per run, task and metric (pandas needed)."""
        return pandas_module().DataFrame([vars(cell) for cell in self.leaderboard])


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
    from clineval.report.compare import compare_runs
    from clineval.report.compare_render import render_markdown

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
    cells = [
        LeaderboardCell(
            run=comp.labels[i],
            task=task,
            metric=metric,
            value=cell.value,
            ci=cell.ci,
            fixture=comp.fixture.get((i, task), False),
            higher_is_better=comp.higher_is_better(task, metric),
            best=comp.best(task, metric) == i,
            leader=comp.leader(task, metric) == i,
            n=cell.n,
        )
        for (i, task, metric), cell in comp.cells.items()
    ]
    pairs = [
        PairedTest(
            task=row.task,
            metric=row.metric,
            run_a=row.run_a,
            run_b=row.run_b,
            difference=None if row.result is None else row.result.delta,
            ci=None if row.result is None else row.result.ci,
            p_value=None if row.result is None else row.result.p_value,
            n_shared=None if row.result is None else row.result.n_shared,
            note=row.note,
            a=None if row.result is None else row.result.a,
            b=None if row.result is None else row.result.b,
            p_holm=row.p_holm,
            resamples=row.resamples,
        )
        for row in comp.pairs
    ]
    return Comparison(
        runs=list(comp.labels),
        leaderboard=cells,
        pairs=pairs,
        text=text,
        markdown=render_markdown(comp),
    )
