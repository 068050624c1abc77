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
from typing import Any

from clineval.errors import InputError, checked_arguments

PathLike = str | os.PathLike[str]

# The primary metric of each task family: the first of the task's `metric_names`
# (tests/test_api.py holds the two together).
PRIMARY_METRIC = {"ner": "token_macro_f1", "tcm-sd": "macro_f1", "clinconsensus": "cacs@7"}


def _number(metrics: Mapping[str, Any], key: str) -> float | None:
    value = metrics.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _count(metrics: Mapping[str, Any], key: str) -> int | None:
    value = metrics.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _interval(metrics: Mapping[str, Any], key: str) -> tuple[float, float] | None:
    value = metrics.get(key)
    if isinstance(value, list | tuple) and len(value) == 2:
        low, high = value
        if all(isinstance(v, int | float) and not isinstance(v, bool) for v in (low, high)):
            return float(low), float(high)
    return None


def _family(task: str) -> str:
    for family in ("ner", "tcm-sd", "clinconsensus"):
        if task == family or task.startswith(family + ":"):
            return family
    return "other"


@dataclass(frozen=True)
class TaskMetrics:
    """One task's entry of results.json. `values` is that entry exactly as written; the
    subclasses (NerMetrics, TcmSdMetrics, ClinConsensusMetrics) add typed attributes for the
    family's headline figures."""

    task: str
    values: Mapping[str, Any] = field(repr=False)

    @property
    def family(self) -> str:
        return _family(self.task)

    @property
    def primary_metric(self) -> str | None:
        """Name of the family's primary metric (None for a task clineval does not know)."""
        return PRIMARY_METRIC.get(self.family)

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

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)


@dataclass(frozen=True)
class NerMetrics(TaskMetrics):
    """`ner:*`: token-level macro F1 (primary) and nervaluate's span F1s, all in [0, 1]."""

    token_macro_f1: float | None = None
    token_macro_precision: float | None = None
    token_macro_recall: float | None = None
    span_partial_f1: float | None = None
    span_partial_precision: float | None = None
    span_partial_recall: float | None = None
    span_exact_f1: float | None = None
    span_exact_precision: float | None = None
    span_exact_recall: float | None = None
    n_documents: int | None = None
    n_gold_spans: int | None = None
    n_pred_spans: int | None = None
    missing_predictions: int | None = None

    @property
    def per_type(self) -> dict[str, Any]:
        """{type: {"token", "partial", "exact"}}, each with precision, recall, f1, support."""
        value = self.values.get("per_type")
        return dict(value) if isinstance(value, Mapping) else {}


@dataclass(frozen=True)
class TcmSdMetrics(TaskMetrics):
    """`tcm-sd`: Macro-F1 over all 148 labels (primary), accuracy, invalid rate, in [0, 1];
    95% stratified bootstrap intervals."""

    macro_f1: float | None = None
    accuracy: float | None = None
    invalid_rate: float | None = None
    macro_f1_ci: tuple[float, float] | None = None
    accuracy_ci: tuple[float, float] | None = None
    n: int | None = None
    n_invalid: int | None = None
    n_missing: int | None = None

    @property
    def per_class(self) -> dict[str, Any]:
        """{label: {precision, recall, f1, support, predicted, train_count, group}}."""
        value = self.values.get("per_class")
        return dict(value) if isinstance(value, Mapping) else {}


@dataclass(frozen=True)
class ClinConsensusMetrics(TaskMetrics):
    """`clinconsensus`: CACS@k in percent [0, 100] (CACS@7 primary); rubric accuracy, pass@k
    and the judge-error rate as shares in [0, 1]."""

    cacs_at_7: float | None = None
    cacs_at_10: float | None = None
    rubric_accuracy: float | None = None
    pass_at_7: float | None = None
    pass_at_10: float | None = None
    judge_errors: int | None = None
    judge_error_rate: float | None = None
    n_cases: int | None = None
    n_cases_scored: int | None = None
    candidate_errors: int | None = None


def _task_metrics(task: str, values: Mapping[str, Any]) -> TaskMetrics:
    """The typed view of results.json[task]."""
    family = _family(task)
    if family == "ner":
        return NerMetrics(
            task,
            values,
            token_macro_f1=_number(values, "token_macro_f1"),
            token_macro_precision=_number(values, "token_macro_precision"),
            token_macro_recall=_number(values, "token_macro_recall"),
            span_partial_f1=_number(values, "span_partial_f1"),
            span_partial_precision=_number(values, "span_partial_precision"),
            span_partial_recall=_number(values, "span_partial_recall"),
            span_exact_f1=_number(values, "span_exact_f1"),
            span_exact_precision=_number(values, "span_exact_precision"),
            span_exact_recall=_number(values, "span_exact_recall"),
            n_documents=_count(values, "n_documents"),
            n_gold_spans=_count(values, "n_gold_spans"),
            n_pred_spans=_count(values, "n_pred_spans"),
            missing_predictions=_count(values, "missing_predictions"),
        )
    if family == "tcm-sd":
        return TcmSdMetrics(
            task,
            values,
            macro_f1=_number(values, "macro_f1"),
            accuracy=_number(values, "accuracy"),
            invalid_rate=_number(values, "invalid_rate"),
            macro_f1_ci=_interval(values, "macro_f1_ci"),
            accuracy_ci=_interval(values, "accuracy_ci"),
            n=_count(values, "n"),
            n_invalid=_count(values, "n_invalid"),
            n_missing=_count(values, "n_missing"),
        )
    if family == "clinconsensus":
        return ClinConsensusMetrics(
            task,
            values,
            cacs_at_7=_number(values, "cacs@7"),
            cacs_at_10=_number(values, "cacs@10"),
            rubric_accuracy=_number(values, "rubric_accuracy"),
            pass_at_7=_number(values, "pass@7"),
            pass_at_10=_number(values, "pass@10"),
            judge_errors=_count(values, "judge_errors"),
            judge_error_rate=_number(values, "judge_error_rate"),
            n_cases=_count(values, "n_cases"),
            n_cases_scored=_count(values, "n_cases_scored"),
            candidate_errors=_count(values, "candidate_errors"),
        )
    return TaskMetrics(task, values)


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
            metrics={task: _task_metrics(task, values) for task, values in run.results.items()},
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
