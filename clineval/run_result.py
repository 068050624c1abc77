"""A run directory as Python objects: typed per-task metrics (from results.json), the
manifest, per-sample records on demand, and pandas DataFrames when pandas is installed.

Part of the Python API (clineval.api); light to import: only the standard library and
clineval.errors at the top, the run-directory reader inside the functions.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clineval.errors import InputError, checked_arguments

if TYPE_CHECKING:
    from clineval.benchmarks.declaration import MetricSpec

PathLike = str | os.PathLike[str]


def _number(metrics: Mapping[str, Any], key: str) -> float | None:
    value = metrics.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _interval(metrics: Mapping[str, Any], key: str) -> tuple[float, float] | None:
    value = metrics.get(key)
    if isinstance(value, list | tuple) and len(value) == 2:
        low, high = value
        if all(isinstance(v, int | float) and not isinstance(v, bool) for v in (low, high)):
            return float(low), float(high)
    return None


def attribute_key(name: str) -> str:
    """A Python attribute name for a results.json key: `cacs@7` is `cacs_at_7`."""
    return name.replace("@", "_at_")


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

    def __getattr__(self, name: str) -> Any:
        # Reached only for names that are not fields or properties: a declared metric (an
        # int stays an int) or its stored interval.
        for key in self.declared.get("metric_keys", ()):
            if attribute_key(key) == name:
                value = self.values.get(key)
                if isinstance(value, int) and not isinstance(value, bool):
                    return value
                return _number(self.values, key)
            if attribute_key(key) + "_ci" == name:
                return _interval(self.values, f"{key}_ci")
        if name in self.declared.get("tables", ()):
            table = self.values.get(name)
            return dict(table) if isinstance(table, Mapping) else {}
        raise AttributeError(f"the metrics of {self.task!r} have no {name!r}")

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)


# The names of clineval 0.1, when each family had a class of its own: one class now.
NerMetrics = TcmSdMetrics = ClinConsensusMetrics = TaskMetrics


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
            "tables": schema.tables if schema is not None else (),
            "specs": specs,
        }
    return {
        **bench.record(),
        "metric_keys": tuple(m.key for m in bench.metrics.metrics),
        "tables": bench.metrics.tables,
        "specs": specs,
    }


def _task_metrics(task: str, values: Mapping[str, Any], notes: Any = None) -> TaskMetrics:
    """The typed view of results.json[task]."""
    known = notes if isinstance(notes, Mapping) else None
    return TaskMetrics(task, values, declared_metrics(task, known))


# ---- a run directory -----------------------------------------------------------------------


def pandas_module() -> Any:
    """pandas, which clineval does not depend on: an ImportError with one line of advice."""
    try:
        return importlib.import_module("pandas")
    except ImportError:
        raise ImportError(
            "a DataFrame needs pandas, which clineval does not install: pip install pandas"
        ) from None


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
        from clineval.report.rundata import load_run

        run = load_run(Path(run_dir), with_samples=False)
        return cls(
            path=run.path,
            metrics={
                task: _task_metrics(task, values, run.manifest.get("tasks", {}).get(task))
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

    def samples(self, task: str | None = None) -> list[dict[str, Any]]:
        """samples.jsonl as dicts (each with its "task"), of one task or all; read on each
        call, so a long NER run costs memory only when asked."""
        from clineval.report.rundata import load_run

        by_task = load_run(self.path, with_samples=True).samples
        if task is not None and task not in self.metrics:
            raise InputError(f"no task {task!r} in this run (tasks: {', '.join(self.metrics)})")
        chosen = [task] if task is not None else list(by_task)
        return [{**row, "task": name} for name in chosen for row in by_task.get(name, [])]

    def to_dataframe(self, task: str | None = None) -> Any:
        """The per-sample records as a pandas DataFrame (pandas must be installed)."""
        return pandas_module().DataFrame(self.samples(task))

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
