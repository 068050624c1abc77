"""The comparison of runs as data: `Comparison`, the one model that `clineval compare` and
the Python API's `clineval.compare` return and that every rendering (terminal, Markdown,
CSV, JSON, HTML) reads. build.py makes it; render.py, html.py and command.py render it.

Public through `clineval` (Comparison, LeaderboardCell, PairedTest), so this module imports
only the standard library and the API's light helpers at its top: `import clineval` must not
load numpy, rich or pydantic (docs/skills-and-api.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from clineval.api_arguments import pandas_module

if TYPE_CHECKING:
    from clineval.report.compare.paired_tests import ColumnResamples
    from clineval.report.compare.settings import RunDifferences


@dataclass(frozen=True)
class LeaderboardCell:
    """One figure of the leaderboard: a run's value of one metric of one task."""

    run: str
    task: str
    metric: str
    value: float
    ci: tuple[float, float] | None
    fixture: bool
    # the metric's direction (declared, or as the run record wrote it when the benchmark is
    # not installed); `leader`: this run has the single top value; `best`: and the paired
    # test separates it from every other run (Holm-corrected, level ALPHA of paired_tests)
    higher_is_better: bool = True
    best: bool = False
    leader: bool = False
    # what the figure stands on (its declared basis, else the run's samples of the task)
    n: int | None = None


@dataclass(frozen=True)
class PairedTest:
    """Run A minus run B on the samples both scored, with a seeded paired bootstrap. A pair
    that was not tested (no shared samples, gold answers that differ) has no figures, and its
    `note` says why."""

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
    """`clineval compare` as data.

    Public: `runs` (the run labels, in the order given), `leaderboard` (one cell per run,
    task and metric), `pairs` (the paired tests), `text` (the comparison rendered in the
    format asked for) and `markdown`, `to_dataframe()`.
    The renderings read the rest: `columns` (task, metric) in leaderboard order, `cells`
    (the leaderboard by run index, task and metric), each run's directory, model spec
    (secrets redacted), estimated cost and fixture flag, how each column's tests were drawn,
    the settings that differ among the runs and the runs whose samples differ."""

    runs: list[str]
    columns: list[tuple[str, str]]
    cells: dict[tuple[int, str, str], LeaderboardCell] = field(repr=False)
    pairs: list[PairedTest]
    run_dirs: list[str] = field(repr=False)
    models: list[str] = field(repr=False)
    costs: list[float | None] = field(repr=False)
    fixture_runs: list[bool] = field(repr=False)
    # the decimals each column is shown with, where its metric declares them
    decimals: dict[tuple[str, str], int] = field(repr=False)
    # how each column's paired tests were drawn (columns with at least one test)
    resampling: dict[tuple[str, str], ColumnResamples] = field(repr=False)
    # the settings that differ among the runs, and (run, task) -> why its samples differ
    differences: RunDifferences = field(repr=False)
    sample_notes: dict[tuple[int, str], str] = field(repr=False)
    # the renderings the Python API adds (api.compare): in the format asked for, and in
    # Markdown for a notebook
    text: str = field(default="", repr=False)
    markdown: str = field(default="", repr=False)

    @property
    def leaderboard(self) -> list[LeaderboardCell]:
        """One cell per run, task and metric, run by run."""
        return list(self.cells.values())

    def _repr_markdown_(self) -> str:  # a notebook shows the Markdown leaderboard
        return self.markdown

    def __str__(self) -> str:
        return self.text

    def to_dataframe(self) -> Any:
        """The leaderboard, one row per run, task and metric (pandas needed)."""
        return pandas_module().DataFrame([vars(cell) for cell in self.leaderboard])

    @cached_property
    def _by_column(self) -> dict[tuple[str, str], list[tuple[int, LeaderboardCell]]]:
        """(task, metric) -> its cells with their run's index: what the renderings look up
        once a cell, kept so that a wide leaderboard costs no pass over every cell each time."""
        out: dict[tuple[str, str], list[tuple[int, LeaderboardCell]]] = {}
        for (i, task, key), cell in self.cells.items():
            out.setdefault((task, key), []).append((i, cell))
        return out

    def leader(self, task: str, key: str) -> int | None:
        """The index of the run with the single top `key` of `task` (None: no single one)."""
        return next((i for i, c in self._by_column.get((task, key), []) if c.leader), None)

    def best(self, task: str, key: str) -> int | None:
        """The index of the leader of `key` that the paired tests separate from every other
        run (None: none is)."""
        return next((i for i, c in self._by_column.get((task, key), []) if c.best), None)

    def higher_is_better(self, task: str, key: str) -> bool:
        """The direction of a column (every cell of a column has its column's)."""
        cells = self._by_column.get((task, key))
        return cells[0][1].higher_is_better if cells else True

    def digits(self, task: str, key: str) -> int | None:
        """The decimals `key` is shown with, as its metric declares (None: the default)."""
        return self.decimals.get((task, key))

    def settings(self, i: int, skip: tuple[str, ...] = ()) -> str:
        """Run `i`'s settings that differ from the other runs' ("" when none do), without
        the `skip` ones."""
        return self.differences.describe(i, skip)

    def samples_note(self, i: int) -> str:
        """Why run `i`'s samples differ from the other runs' ("" when they do not)."""
        return "; ".join(
            f"{task}: {note}" for (j, task), note in self.sample_notes.items() if j == i
        )
