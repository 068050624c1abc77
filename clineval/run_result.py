"""A run directory as Python objects: typed per-task metrics (from results.json), the
manifest, per-sample records on demand (also in long form, as each benchmark explodes them),
their headline figures when printed or shown in a notebook, and pandas DataFrames when pandas
is installed.

Part of the Python API (clineval.api); light to import: only the standard library,
clineval.errors and the metric views (clineval.benchmarks.results_view) at the top, the
run-directory reader inside the functions.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from clineval.api_arguments import PathLike, checked_arguments, pandas_module
from clineval.benchmarks.results_view import MetricsView, attribute_key, view_attributes
from clineval.errors import InputError
from clineval.messages import did_you_mean

if TYPE_CHECKING:
    from clineval.metrics.schema import MetricSpec

ViewT = TypeVar("ViewT", bound=MetricsView)


def _number(metrics: Mapping[str, Any], key: str) -> float | None:
    value = metrics.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _interval(metrics: Mapping[str, Any], key: str) -> tuple[float, float] | None:
    """The interval a results entry stores for metric `key` (as `KEY_ci`, or `KEY_ci95`)."""
    for name in (f"{key}_ci", f"{key}_ci95"):
        value = metrics.get(name)
        if isinstance(value, list | tuple) and len(value) == 2:
            low, high = value
            if all(isinstance(v, int | float) and not isinstance(v, bool) for v in (low, high)):
                return float(low), float(high)
    return None


def _shown(value: float | int, digits: int) -> str:
    """A figure as the headline shows it: a count whole, others with `digits` decimals."""
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return f"{value:,}"


@dataclass(frozen=True)
class TaskMetrics:
    """One task's entry of results.json. `values` is that entry exactly as written; the
    figures its benchmark declares are attributes too (`m.token_macro_f1`, `m.cacs_at_7`,
    `m.macro_f1_ci`: None when the run did not write them), and the benchmark names its
    family, primary metric and direction. For a task no installed benchmark declares, these
    come from what its run record wrote."""

    task: str
    values: Mapping[str, Any] = field(repr=False)
    declared: Mapping[str, Any] = field(default_factory=dict, repr=False)
    # The interval of a metric the run stored none for, as `clineval run` and the report
    # compute it (a seeded bootstrap over the run's samples); None: none can be computed.
    bootstrap: Callable[[str], tuple[float, float] | None] | None = field(
        default=None, repr=False, compare=False
    )

    def interval(self, key: str) -> tuple[float, float] | None:
        """The 95% interval of metric `key`: the one the run stored (`KEY_ci` or `KEY_ci95`),
        else the bootstrap over samples that `clineval run` and the report show for it."""
        stored = _interval(self.values, key)
        if stored is not None or self.bootstrap is None or key in self.count_keys:
            return stored
        return self.bootstrap(key)

    @property
    def count_keys(self) -> tuple[str, ...]:
        return tuple(self.declared.get("count_keys", ()))

    @property
    def family(self) -> str:
        return str(self.declared.get("family") or "other")

    @property
    def primary_metric(self) -> str | None:
        """Name of the primary metric (None for a task nothing declares)."""
        value = self.declared.get("primary_metric")
        return str(value) if value else None

    @property
    def higher_is_better(self) -> bool:
        """The primary metric's direction."""
        return self.declared.get("higher_is_better") is not False

    @property
    def specs(self) -> tuple[MetricSpec, ...]:
        """Every declared metric (key, description, direction, headline and count flags),
        primary first: the installed benchmark's, else the run record's; empty for a task
        nothing declares."""
        return tuple(self.declared.get("specs", ()))

    def spec(self, key: str) -> MetricSpec | None:
        """The declared spec of metric `key` (None when nothing declares it)."""
        return next((m for m in self.specs if m.key == key), None)

    @property
    def primary(self) -> float | None:
        name = self.primary_metric
        return None if name is None else _number(self.values, name)

    @property
    def fixture(self) -> bool:
        """True when the numbers come from fixture or synthetic data: never a benchmark
        result."""
        return self.values.get("fixture") is True

    def scalars(self) -> dict[str, float | int]:
        """The top-level numeric figures (no nested tables, no flags)."""
        return {
            key: value
            for key, value in self.values.items()
            if isinstance(value, int | float) and not isinstance(value, bool)
        }

    if not TYPE_CHECKING:  # a type checker sees the metrics through a benchmark's view

        def __getattr__(self, name: str) -> Any:
            # Reached only for names that are not fields or properties: a declared metric
            # (an int stays an int) or its stored interval.
            for key in self.declared.get("metric_keys", ()):
                if attribute_key(key) == name:
                    value = self.values.get(key)
                    if isinstance(value, int) and not isinstance(value, bool):
                        return value
                    return _number(self.values, key)
                if attribute_key(key) + "_ci" == name:
                    return self.interval(key)
            if name in self.declared.get("tables", ()):
                table = self.values.get(name)
                return dict(table) if isinstance(table, Mapping) else {}
            raise AttributeError(
                f"the metrics of {self.task!r} have no {name!r}"
                + did_you_mean(name, self.metric_attributes())
            )

    def metric_attributes(self) -> list[str]:
        """The attribute names of the task's declared metrics, their intervals and tables."""
        names: list[str] = []
        for key in self.declared.get("metric_keys", ()):
            names.append(attribute_key(key))
            if key not in self.declared.get("count_keys", ()):
                names.append(attribute_key(key) + "_ci")
        return names + list(self.declared.get("tables", ()))

    def __dir__(self) -> list[str]:
        return sorted({*super().__dir__(), *self.metric_attributes()})

    def headline(self) -> list[tuple[str, float | int, tuple[float, float] | None]]:
        """(metric, value, interval or None) of the headline figures the run wrote, the
        primary first; for a task nothing declares, its primary metric (or every number)."""
        keys = list(self.declared.get("headline_keys", ()))
        if self.primary_metric is not None:
            keys = [self.primary_metric, *(k for k in keys if k != self.primary_metric)]
        scalars = self.scalars()
        if not keys:
            keys = list(scalars)
        return [(k, scalars[k], self.interval(k)) for k in keys if k in scalars]

    def shown(self, key: str, value: float | int) -> str:
        """`value` of metric `key` as printed: with the decimals the metric declares."""
        spec = self.spec(key)
        return _shown(value, 4 if spec is None else spec.digits)

    def __repr__(self) -> str:
        shown = ", ".join(f"{attribute_key(k)}={self.shown(k, v)}" for k, v, _ in self.headline())
        return f"TaskMetrics({self.task!r}{', ' if shown else ''}{shown})"

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)


def declared_metrics(task: str, notes: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What the task's benchmark declares of its metrics; for a task no installed benchmark
    declares, what the run record wrote (`manifest.json["tasks"][task]`)."""
    from clineval.benchmarks.registry import benchmark_of, metric_schema

    bench = benchmark_of(task)
    schema = metric_schema(task, notes)
    specs = schema.metrics if schema is not None else ()
    if bench is None:
        notes = notes or {}
        return {
            "family": notes.get("family"),
            "primary_metric": notes.get("primary_metric"),
            "higher_is_better": notes.get("higher_is_better"),
            "metric_keys": tuple(m.key for m in specs),
            # a count has no interval; the headline figures are what print(result) shows
            "count_keys": tuple(m.key for m in specs if m.count),
            "headline_keys": tuple(m.key for m in specs if m.headline),
            "tables": schema.tables if schema is not None else (),
            "specs": specs,
        }
    return {
        **bench.record(),
        "metric_keys": tuple(m.key for m in bench.metrics.metrics),
        "count_keys": tuple(m.key for m in bench.metrics.metrics if m.count),
        "headline_keys": bench.metrics.headline_keys,
        "tables": bench.metrics.tables,
        "specs": specs,
        "long_rows": bench.long_rows_function(),
    }


def _task_metrics(
    task: str, values: Mapping[str, Any], notes: Any = None, run: _Samples | None = None
) -> TaskMetrics:
    """The typed view of results.json[task]."""
    known = notes if isinstance(notes, Mapping) else None
    bootstrap = None if run is None else partial(run.interval, task, values, known)
    return TaskMetrics(task, values, declared_metrics(task, known), bootstrap)


class _Samples:
    """A run directory's samples, read once and only when an interval must be computed from
    them, and the intervals as the run summary computes them (statistics_for, the seed)."""

    def __init__(self, path: Path, seed: int) -> None:
        self.path = path
        self.seed = seed
        self._rows: dict[str, list[dict[str, Any]]] | None = None
        self._stats: dict[str, dict[str, Any]] = {}

    def interval(
        self, task: str, values: Mapping[str, Any], notes: Mapping[str, Any] | None, key: str
    ) -> tuple[float, float] | None:
        from clineval.report.task_stats import statistics_for
        from clineval.reportkit.statistics import bootstrap_interval
        from clineval.run_record import read_run_files

        if self._rows is None:
            self._rows = dict(read_run_files(self.path, with_samples=True).samples)
        if task not in self._stats:
            rows = self._rows.get(task, [])
            self._stats[task] = statistics_for(task, dict(values), rows, notes)
        stat = self._stats[task].get(key)
        return None if stat is None else bootstrap_interval(stat, seed=self.seed)


# ---- a run directory -----------------------------------------------------------------------


@dataclass(frozen=True)
class RunResult:
    """A run directory as Python objects: `metrics` per task (typed), `results` (results.json
    as written), `manifest` (manifest.json), and per-sample records on demand."""

    path: Path
    metrics: Mapping[str, TaskMetrics]
    results: Mapping[str, Any] = field(repr=False)
    manifest: Mapping[str, Any] = field(repr=False)

    @classmethod
    @checked_arguments
    def load(cls, run_dir: PathLike) -> RunResult:
        """Read a run directory (one `clineval run` or `clineval.run` wrote)."""
        from clineval.reportkit.rundata import load_run

        run = load_run(Path(run_dir), with_samples=False)
        seed = run.manifest.get("seed")
        samples = _Samples(run.path, seed if isinstance(seed, int) else 0)
        return cls(
            path=run.path,
            metrics={
                task: _task_metrics(task, values, run.manifest.get("tasks", {}).get(task), samples)
                for task, values in run.results.items()
            },
            results=run.results,
            manifest=run.manifest,
        )

    @property
    def tasks(self) -> list[str]:
        return list(self.metrics)

    def __getitem__(self, task: str) -> TaskMetrics:
        return self.metrics[task]

    def metrics_as(self, task: str, view: type[ViewT]) -> ViewT:
        """The metrics of `task` typed as a benchmark's view for type checkers
        (`clineval.benchmarks.ner.NerMetricsView`, ...): a misspelt metric is then the type
        checker's error. InputError when the task is not in the run or its benchmark does
        not declare every metric the view names."""
        metrics = self._task(task)
        if not (isinstance(view, type) and issubclass(view, MetricsView)):
            raise InputError(f"RunResult.metrics_as: {view!r} is not a metrics view")
        missing = sorted(set(view_attributes(view)) - set(metrics.metric_attributes()))
        if missing:
            raise InputError(
                f"{getattr(view, '__name__', view)} does not fit the metrics of {task!r} "
                f"(family {metrics.family}): it names {', '.join(missing[:5])}, which the task "
                "does not declare"
            )
        return cast(ViewT, metrics)

    def _task(self, task: str) -> TaskMetrics:
        if task not in self.metrics:
            raise InputError(
                f"no task {task!r} in this run{did_you_mean(task, self.metrics)} "
                f"(tasks: {', '.join(self.metrics)})"
            )
        return self.metrics[task]

    def __repr__(self) -> str:
        parts = []
        for task, m in self.metrics.items():
            figures = " ".join(f"{k}={m.shown(k, v)}" for k, v, _ in m.headline()[:1])
            parts.append(f"{task} {figures}".strip() + (" (fixture)" if m.fixture else ""))
        return f"<RunResult {self.path}: {'; '.join(parts) or 'no results'}>"

    def __str__(self) -> str:
        """The headline figures of every task with their intervals."""
        lines = [f"run directory: {self.path}"]
        for task, m in self.metrics.items():
            lines.append(
                f"{task} ({m.family})" + ("  FIXTURE DATA: not a benchmark result" * m.fixture)
            )
            rows = m.headline()
            width = max((len(k) for k, _, _ in rows), default=0)
            for key, value, interval in rows:
                ci = (
                    ""
                    if interval is None
                    else f"  [{m.shown(key, interval[0])}, {m.shown(key, interval[1])}]"
                )
                mark = "  <- primary" if key == m.primary_metric else ""
                lines.append(f"  {key:<{width}}  {m.shown(key, value)}{ci}{mark}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        """The headline figures as an HTML table (Jupyter shows it for a cell's value)."""
        esc = html.escape
        rows = []
        for task, m in self.metrics.items():
            headline = m.headline() or [("-", 0, None)]
            note = " <em>(fixture data: not a benchmark result)</em>" if m.fixture else ""
            for i, (key, value, interval) in enumerate(headline):
                cells = (
                    f'<td rowspan="{len(headline)}"><b>{esc(task)}</b>{note}</td>' if i == 0 else ""
                )
                name = f"<b>{esc(key)}</b>" if key == m.primary_metric else esc(key)
                ci = (
                    ""
                    if interval is None
                    else f"{m.shown(key, interval[0])} – {m.shown(key, interval[1])}"
                )
                shown = m.shown(key, value) if key != "-" else ""
                rows.append(f"<tr>{cells}<td>{name}</td><td>{shown}</td><td>{ci}</td></tr>")
        return (
            f"<div><p>run directory: <code>{esc(str(self.path))}</code></p>"
            "<table><thead><tr><th>task</th><th>metric</th><th>value</th><th>interval</th>"
            f"</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
        )

    def samples(self, task: str | None = None) -> list[dict[str, Any]]:
        """samples.jsonl as dicts (each with its "task"), of one task or all; read on each
        call, so a long NER run costs memory only when asked."""
        from clineval.reportkit.rundata import load_run

        by_task = load_run(self.path, with_samples=True).samples
        if task is not None:
            self._task(task)
        chosen = [task] if task is not None else list(by_task)
        return [{**row, "task": name} for name in chosen for row in by_task.get(name, [])]

    def to_dataframe(self, task: str | None = None) -> Any:
        """The per-sample records as a pandas DataFrame (pandas must be installed)."""
        return pandas_module().DataFrame(self.samples(task))

    def long_rows(self, task: str | None = None) -> list[dict[str, Any]]:
        """The samples in long form, each row with its "task": as the task's benchmark
        explodes a sample (NER one row per span, ClinConsensus one per case, criterion and
        judge), or one row per sample where it declares nothing."""
        out: list[dict[str, Any]] = []
        for row in self.samples(task):
            name = row.pop("task")
            explode: Callable[[dict[str, Any]], list[dict[str, Any]]] | None = None
            if name in self.metrics:
                explode = self.metrics[name].declared.get("long_rows")
            for item in explode(row) if explode is not None else [row]:
                out.append({"task": name, **item})
        return out

    def long_frame(self, task: str | None = None) -> Any:
        """`long_rows` as a pandas DataFrame (pandas must be installed)."""
        return pandas_module().DataFrame(self.long_rows(task))

    def metrics_dataframe(self) -> Any:
        """One row per task, its top-level numeric figures as columns (pandas needed)."""
        rows = [{"task": task, **m.scalars()} for task, m in self.metrics.items()]
        return pandas_module().DataFrame(rows).set_index("task")

    def table(self) -> str:
        """The headline figures as plain text: primary metric first, then every top-level
        number, and a fixture warning where the data was not the benchmark's."""
        lines: list[str] = []
        for task, m in self.metrics.items():
            values = m.scalars()
            order = [m.primary_metric] if m.primary_metric in values else []
            order += [k for k in values if k not in order]
            width = max((len(str(k)) for k in order), default=0)
            lines.append(f"{task}" + ("  (FIXTURE DATA: not a benchmark result)" * m.fixture))
            for key in order:
                value = values[str(key)]
                shown = f"{value:.4f}" if isinstance(value, float) else str(value)
                mark = "  <- primary" if key == m.primary_metric else ""
                lines.append(f"  {key:<{width}}  {shown}{mark}")
        return "\n".join(lines)
