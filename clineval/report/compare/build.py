"""Building the comparison behind `clineval compare` (model.Comparison) from run directories.

Leaderboard: per task, each family's headline metrics with the run's stored 95% interval (or,
when the task stored none, a seeded bootstrap interval over the run's samples, as the report).
Paired test: for every pair of runs that scored the same task, on the sample ids both scored
(and only when their gold answers agree), the same seeded bootstrap resamples are applied to
both runs' per-sample statistics (see statistics.py); the result is the difference A - B on the
shared samples, the 95% percentile interval of the replicate differences, and a two-sided
p-value. Rendering is render's, html's and command's job.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from clineval.benchmarks.registry import benchmark_of, metric_schema
from clineval.errors import InputError
from clineval.metrics.bootstrap import DEFAULT_RESAMPLES
from clineval.metrics.schema import MetricSchema
from clineval.progress import track
from clineval.report.compare.model import Comparison, LeaderboardCell, PairedTest
from clineval.report.compare.paired_tests import (
    ALPHA,
    ColumnResamples,
    ReplicateCache,
    column_tests,
)
from clineval.report.compare.settings import (
    differing_samples,
    figure_n,
    run_differences,
)
from clineval.report.task_stats import statistics_for
from clineval.reportkit import statistics as st
from clineval.reportkit.rundata import (
    RunData,
    finite_number,
    interval_of,
    is_fixture_task,
    load_run,
)
from clineval.secrets import redact


@dataclass(frozen=True)
class _Figure:
    """A leaderboard figure before the paired tests decide which run is best."""

    value: float
    ci: tuple[float, float] | None
    n: int | None


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


def _leader(figures: dict[int, _Figure], higher: bool) -> int | None:
    """The index of the run with the top value (by the column's direction); None when there
    is no single one (fewer than two runs scored it, or a tie)."""
    if len(figures) < 2:
        return None  # nothing to single out
    pick = max if higher else min
    top = pick(f.value for f in figures.values())
    leaders = [i for i, f in figures.items() if f.value == top]
    return leaders[0] if len(leaders) == 1 else None


def _best(
    lead: int | None, others: set[int], tests: list[tuple[int, int, PairedTest]], higher: bool
) -> int | None:
    """The leader, only where the paired test separates it from EVERY other run that scored
    the column: each of its pairs tested, the difference on the shared samples in the
    leader's favour, and the Holm-adjusted p-value (over all pairs of the column) below
    ALPHA. None otherwise: a leaderboard must not single out a run the test cannot tell from
    another."""
    if lead is None:
        return None
    separated: set[int] = set()
    for a, b, test in tests:
        if test.difference is None or lead not in (a, b):
            continue
        if test.p_holm is None or test.p_holm >= ALPHA:
            continue
        favours_a = test.difference > 0 if higher else test.difference < 0
        if favours_a == (lead == a):
            separated.add(b if lead == a else a)
    return lead if others and others <= separated else None


def _tested(untested: PairedTest, result: st.PairedResult, resamples: int) -> PairedTest:
    return replace(
        untested,
        difference=result.delta,
        ci=result.ci,
        p_value=result.p_value,
        n_shared=result.n_shared,
        a=result.a,
        b=result.b,
        resamples=resamples,
    )


def _with_holm(pairs: list[PairedTest]) -> list[PairedTest]:
    """Each tested pair with its p-value corrected for the other pairs of its column."""
    out = list(pairs)
    for column in dict.fromkeys((p.task, p.metric) for p in pairs):
        tested = [
            k for k, p in enumerate(pairs) if (p.task, p.metric) == column and p.p_value is not None
        ]
        adjusted = holm([p for k in tested if (p := pairs[k].p_value) is not None])
        for k, value in zip(tested, adjusted, strict=True):
            out[k] = replace(pairs[k], p_holm=value)
    return out


def _cost(run: RunData) -> float | None:
    """The run's estimated cost of model calls in USD, when its manifest recorded one."""
    usage = run.manifest.get("llm_usage")
    return finite_number(usage.get("estimated_cost") if isinstance(usage, dict) else None)


def build_comparison(
    run_dirs: list[Path], seed: int = 0, n_resamples: int | None = None
) -> Comparison:
    """The comparison of the runs; `n_resamples` fixes the bootstrap resamples of the paired
    tests (and of intervals computed here), else each column draws as many as its number of
    pairs and the closeness of its p-values to ALPHA need (paired_tests)."""
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
    figures: dict[tuple[int, str, str], _Figure] = {}
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
                figures[(i, task, key)] = _Figure(value, ci, figure_n(run, task, basis))
    # (run A's index, run B's index, its test) for every pair, column by column
    pairs: list[tuple[int, int, PairedTest]] = []
    resampling: dict[tuple[str, str], ColumnResamples] = {}
    cache = ReplicateCache(seed)
    for task, key in track(columns, len(columns), "paired bootstrap", unit="columns"):
        rows: list[tuple[int, int, PairedTest]] = []  # this column's pairs, in run order
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
            untested = PairedTest(task, key, labels[i], labels[j], None, None, None, None, note)
            rows.append((i, j, untested))
        if tested:
            owners = [(rows[k][2].run_a, rows[k][2].run_b) for k, _, _ in tested]
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
                i, j, untested = rows[k]
                rows[k] = (i, j, _tested(untested, result, how.resamples))
        pairs.extend(rows)
    corrected = _with_holm([test for _, _, test in pairs])
    indexed = [(i, j, test) for (i, j, _), test in zip(pairs, corrected, strict=True)]
    cells: dict[tuple[int, str, str], LeaderboardCell] = {}
    for task, key in columns:
        column = {i: f for (i, t, k), f in figures.items() if (t, k) == (task, key)}
        higher = _direction(task, key, runs)
        lead = _leader(column, higher)
        own = [(i, j, test) for i, j, test in indexed if (test.task, test.metric) == (task, key)]
        best = _best(lead, set(column) - {lead}, own, higher)
        for i, f in column.items():
            cells[(i, task, key)] = LeaderboardCell(
                run=labels[i],
                task=task,
                metric=key,
                value=f.value,
                ci=f.ci,
                fixture=fixture[(i, task)],
                higher_is_better=higher,
                best=best == i,
                leader=lead == i,
                n=f.n,
            )
    schemas = {task: _schema(task, runs) for task in tasks}
    decimals = {
        (task, key): spec.digits
        for task, key in columns
        if (schema := schemas[task]) is not None
        and (spec := schema.spec(key)) is not None
        and spec.digits is not None
    }
    return Comparison(
        runs=labels,
        columns=columns,
        cells={k: cells[k] for k in figures},  # run by run, as the runs were read
        pairs=corrected,
        run_dirs=[str(run.path) for run in runs],
        # a spec may carry a URL with a key
        models=[redact(str(run.manifest.get("config", {}).get("model", "?"))) for run in runs],
        costs=[_cost(run) for run in runs],
        fixture_runs=[any(v for (j, _), v in fixture.items() if j == i) for i in range(len(runs))],
        decimals=decimals,
        resampling=resampling,
        differences=run_differences(runs),
        sample_notes=differing_samples(runs, tasks),
    )
