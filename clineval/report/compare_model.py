"""The comparison behind `clineval compare`, as data (rendering is compare_render's job).

Leaderboard: per task, each family's headline metrics with the run's stored 95% interval (or,
when the task stored none, a seeded bootstrap interval over the run's samples, as the report).
Paired test: for every pair of runs that scored the same task, on the sample ids both scored
(and only when their gold answers agree), the same seeded bootstrap resamples are applied to
both runs' per-sample statistics (see statistics.py); the result is the difference A - B on the
shared samples, the 95% percentile interval of the replicate differences, and a two-sided
p-value.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clineval.benchmarks.registry import benchmark_of
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
)
from clineval.report.task_stats import statistics_for
from clineval.secrets import redact


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

    def best(self, task: str, key: str) -> int | None:
        """The index of the run with the best `key` of `task`; None when there is no single
        best (fewer than two runs scored it, or all scored the same)."""
        scored = [
            (i, c.value) for i in range(len(self.runs)) if (c := self.cells.get((i, task, key)))
        ]
        if len(scored) < 2 or len({v for _, v in scored}) == 1:
            return None  # nothing to single out
        pick = max if higher_is_better(task, key) else min
        return pick(scored, key=lambda t: t[1])[0]

    def model(self, i: int) -> str:
        """Run `i`'s model spec, secrets redacted (a spec may carry a URL with a key)."""
        return redact(str(self.runs[i].manifest.get("config", {}).get("model", "?")))

    def is_fixture_run(self, i: int) -> bool:
        """Whether any task of run `i` scored fixture/synthetic data."""
        return any(v for (j, _), v in self.fixture.items() if j == i)


def higher_is_better(task: str, key: str) -> bool:
    """The direction the task's benchmark declares for `key`; for a task no installed
    benchmark declares, the direction its run record wrote (else higher)."""
    bench = benchmark_of(task)
    return True if bench is None else bench.metrics.higher_is_better(key)


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
        bench = benchmark_of(task)
        present = [run.results.get(task, {}) for run in runs]
        keys = list(bench.metrics.ranked_keys) if bench is not None else []
        if not keys:  # a task no installed benchmark declares: its top-level numeric scalars
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
    for task, key, i, j in track(jobs, len(jobs), "paired bootstrap", unit="tests"):
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
