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
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from clineval.benchmarks.declaration import MetricSchema
from clineval.benchmarks.registry import benchmark_of, metric_schema
from clineval.errors import InputError
from clineval.metrics.bootstrap import DEFAULT_RESAMPLES
from clineval.progress import track
from clineval.report import statistics as st
from clineval.report.compare_settings import (
    RunDifferences,
    differing_samples,
    figure_n,
    run_differences,
)
from clineval.report.compare_tests import ALPHA, ColumnResamples, ReplicateCache, column_tests
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
    # the count the figure is computed on, where its metric declares one (`MetricSpec.basis`)
    basis: int | None = None
    # what the figure stands on: `basis`, else the run's samples of the task (None: unknown)
    n: int | None = None


@dataclass(frozen=True)
class PairRow:
    task: str
    metric: str
    run_a: str
    run_b: str
    result: st.PairedResult | None
    note: str = ""
    # the p-value after Holm's step-down correction over the pairs tested in this column
    p_holm: float | None = None
    # the bootstrap resamples the test drew (the same for every pair of a column)
    resamples: int | None = None


def holm(p_values: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given: the i-th smallest of m is
    multiplied by (m - i + 1), made monotone, capped at 1."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


@dataclass
class Comparison:
    runs: list[RunData]
    labels: list[str]
    columns: list[tuple[str, str]]  # (task, metric)
    cells: dict[tuple[int, str, str], Cell]  # (run index, task, metric)
    fixture: dict[tuple[int, str], bool]
    pairs: list[PairRow]
    # how each column's paired tests were drawn (columns with at least one test)
    resampling: dict[tuple[str, str], ColumnResamples] = field(default_factory=dict)
    # the settings that differ among the runs, and (run, task) -> why its samples differ
    differences: RunDifferences = field(default_factory=lambda: RunDifferences([], []))
    sample_notes: dict[tuple[int, str], str] = field(default_factory=dict)

    def leader(self, task: str, key: str) -> int | None:
        """The index of the run with the top `key` of `task` (by its declared direction);
        None when there is no single one (fewer than two runs scored it, or a tie)."""
        scored = [
            (i, c.value) for i in range(len(self.runs)) if (c := self.cells.get((i, task, key)))
        ]
        if len(scored) < 2:
            return None  # nothing to single out
        pick = max if self.higher_is_better(task, key) else min
        top = pick(v for _, v in scored)
        leaders = [i for i, v in scored if v == top]
        return leaders[0] if len(leaders) == 1 else None

    def best(self, task: str, key: str) -> int | None:
        """The leader of `key`, only where the paired test separates it from EVERY other run
        that scored the column: each of its pairs tested, the difference on the shared
        samples in the leader's favour, and the Holm-adjusted p-value (over all pairs of the
        column) below ALPHA. None otherwise: a leaderboard must not single out a run the test
        cannot tell from another."""
        lead = self.leader(task, key)
        if lead is None:
            return None
        others = {i for (i, t, k) in self.cells if t == task and k == key and i != lead}
        higher = self.higher_is_better(task, key)
        separated: set[int] = set()
        for row in self.pairs:
            if row.task != task or row.metric != key or row.result is None:
                continue
            a, b = self.labels.index(row.run_a), self.labels.index(row.run_b)
            if lead not in (a, b) or row.p_holm is None or row.p_holm >= ALPHA:
                continue
            favours_a = row.result.delta > 0 if higher else row.result.delta < 0
            if favours_a == (lead == a):
                separated.add(b if lead == a else a)
        return lead if others and others <= separated else None

    def digits(self, task: str, key: str) -> int | None:
        """The decimals `key` is shown with, as its metric declares (None: the default)."""
        schema = _schema(task, self.runs)
        spec = schema.spec(key) if schema is not None else None
        return None if spec is None else spec.digits

    def higher_is_better(self, task: str, key: str) -> bool:
        """The direction of `key`: as the task's benchmark declares it, or, when it is not
        installed, as the runs' records wrote it (else higher)."""
        return _direction(task, key, self.runs)

    def model(self, i: int) -> str:
        """Run `i`'s model spec, secrets redacted (a spec may carry a URL with a key)."""
        return redact(str(self.runs[i].manifest.get("config", {}).get("model", "?")))

    def settings(self, i: int, skip: tuple[str, ...] = ()) -> str:
        """Run `i`'s settings that differ from the other runs' ("" when none do), without
        the `skip` ones."""
        return self.differences.describe(i, skip)

    def samples_note(self, i: int) -> str:
        """Why run `i`'s samples differ from the other runs' ("" when they do not)."""
        return "; ".join(
            f"{task}: {note}" for (j, task), note in self.sample_notes.items() if j == i
        )

    def cost(self, i: int) -> float | None:
        """Run `i`'s estimated cost of model calls in USD, when its manifest recorded one."""
        usage = self.runs[i].manifest.get("llm_usage")
        value = usage.get("estimated_cost") if isinstance(usage, dict) else None
        return finite_number(value)

    def is_fixture_run(self, i: int) -> bool:
        """Whether any task of run `i` scored fixture/synthetic data."""
        return any(v for (j, _), v in self.fixture.items() if j == i)


def _notes(run: RunData, task: str) -> dict[str, Any]:
    notes = run.manifest.get("tasks", {}).get(task)
    return notes if isinstance(notes, dict) else {}


def _schema(task: str, runs: list[RunData]) -> MetricSchema | None:
    """The task's metrics: its installed benchmark's, else the first run record's that holds
    them (None: no benchmark, and records written before they kept the metrics)."""
    if benchmark_of(task) is not None:
        return metric_schema(task)
    recorded = (metric_schema(task, _notes(run, task)) for run in runs)
    return next((schema for schema in recorded if schema is not None), None)


def _direction(task: str, key: str, runs: list[RunData]) -> bool:
    schema = _schema(task, runs)
    if schema is not None:
        return schema.higher_is_better(key)
    for run in runs:  # an older record: it kept the primary metric's direction only
        notes = _notes(run, task)
        if notes.get("primary_metric") == key and isinstance(notes.get("higher_is_better"), bool):
            return bool(notes["higher_is_better"])
    return True


def higher_is_better(task: str, key: str) -> bool:
    """The direction the task's installed benchmark declares for `key` (else higher)."""
    return _direction(task, key, [])


def _basis(task: str, key: str, runs: list[RunData], metrics: dict[str, Any]) -> int | None:
    schema = _schema(task, runs)
    spec = schema.spec(key) if schema is not None else None
    if spec is None or spec.basis is None:
        return None
    n = finite_number(metrics.get(spec.basis))
    return None if n is None else int(n)


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
        schema = _schema(task, runs)
        present = [run.results.get(task, {}) for run in runs]
        keys = list(schema.ranked_keys) if schema is not None else []
        if not keys:  # nothing declares the task's metrics: its top-level numeric scalars
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
    run_dirs: list[Path], seed: int = 0, n_resamples: int | None = None
) -> Comparison:
    """The comparison of the runs; `n_resamples` fixes the bootstrap resamples of the paired
    tests (and of intervals computed here), else each column draws as many as its number of
    pairs and the closeness of its p-values to ALPHA need (compare_tests)."""
    if not run_dirs:
        raise InputError("compare needs at least one run directory")
    runs = [load_run(Path(d)) for d in run_dirs]
    labels = _labels(runs)
    columns = _columns(runs)
    tasks = list(dict.fromkeys(t for t, _ in columns))
    stats = {
        (i, task): statistics_for(
            task, run.results[task], run.samples.get(task, []), _notes(run, task)
        )
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
                    ci = st.bootstrap_interval(stat, n_resamples or DEFAULT_RESAMPLES, seed)
                basis = _basis(task, key, runs, metrics)
                cells[(i, task, key)] = Cell(value, ci, basis, figure_n(run, task, basis))
    pairs: list[PairRow] = []
    resampling: dict[tuple[str, str], ColumnResamples] = {}
    cache = ReplicateCache(seed)
    for task, key in track(columns, len(columns), "paired bootstrap", unit="columns"):
        rows: list[PairRow] = []  # this column's pairs, in run order
        tested: list[tuple[int, st.SampleStatistic, st.SampleStatistic]] = []
        for i, j in itertools.combinations(range(len(runs)), 2):
            if (i, task) not in stats or (j, task) not in stats:
                continue
            sa, sb = stats[(i, task)].get(key), stats[(j, task)].get(key)
            if sa is None or sb is None:
                continue  # e.g. invalid_rate, or a run without samples.jsonl
            aligned_a, aligned_b = st.align(sa, sb)
            note = ""
            if not _gold_agrees(aligned_a, aligned_b):
                note = "gold answers differ on shared samples: not comparable"
            elif not aligned_a.ids:
                note = "no shared samples"
            else:
                tested.append((len(rows), aligned_a, aligned_b))
            rows.append(PairRow(task, key, labels[i], labels[j], None, note))
        if tested:
            owners = [(rows[k].run_a, rows[k].run_b) for k, _, _ in tested]
            results, how = column_tests(
                [
                    ((a, task, key), sa, (b, task, key), sb)
                    for (a, b), (_, sa, sb) in zip(owners, tested, strict=True)
                ],
                cache,
                fixed=n_resamples,
            )
            resampling[(task, key)] = how
            for (k, _, _), result in zip(tested, results, strict=True):
                rows[k] = replace(rows[k], result=result, resamples=how.resamples)
        pairs.extend(rows)
    return Comparison(
        runs,
        labels,
        columns,
        cells,
        fixture,
        _with_holm(pairs),
        resampling,
        run_differences(runs),
        differing_samples(runs, tasks),
    )


def _with_holm(pairs: list[PairRow]) -> list[PairRow]:
    """Each tested pair with its p-value corrected for the other pairs of its column."""
    out = list(pairs)
    for column in dict.fromkeys((p.task, p.metric) for p in pairs):
        tested = [
            k for k, p in enumerate(pairs) if (p.task, p.metric) == column and p.result is not None
        ]
        adjusted = holm([pairs[k].result.p_value for k in tested])  # type: ignore[union-attr]
        for k, value in zip(tested, adjusted, strict=True):
            out[k] = replace(pairs[k], p_holm=value)
    return out
