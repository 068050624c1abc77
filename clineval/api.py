"""The Python surface of clineval (`import clineval`): run, score, report and compare from a
notebook or a script, through the same code the command line uses.

Every function here builds what the matching `clineval` command builds and calls the same
function after it (`RunConfig.checked` then `clineval.runner.run` for `clineval run`, ...), so
a run made here and one made on the command line write the same run directory: store, resume,
manifest, results.json, samples.jsonl. Bad input is raised as `clineval.InputError` (the
message the command line prints after `error:`); nothing here exits the interpreter.

This module is imported on first use of one of its names (see clineval/__init__.py), and it
imports the heavy parts of clineval (pydantic, numpy, rich, ...) only inside its functions.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clineval.errors import InputError

__all__ = [
    "ClinConsensusMetrics",
    "Comparison",
    "LeaderboardCell",
    "NerMetrics",
    "PairedTest",
    "RunFailed",
    "RunResult",
    "TaskMetrics",
    "TcmSdMetrics",
    "compare",
    "dry_run",
    "run",
    "score",
    "write_report",
]

PathLike = str | os.PathLike[str]

# The primary metric of each task family: the first of the task's `metric_names`
# (tests/test_api.py holds the two together).
PRIMARY_METRIC = {"ner": "token_macro_f1", "tcm-sd": "macro_f1", "clinconsensus": "cacs@7"}


class RunFailed(Exception):
    """A run wrote its results, but a task failed a bound (judge-error rate, missing
    predictions, failed candidate calls): what `clineval run` reports with exit code 1.
    `result` is the run as written; `reasons` says what failed."""

    def __init__(self, message: str, result: RunResult) -> None:
        super().__init__(message)
        self.result = result
        self.reasons = message


# ---- per-task metrics ----------------------------------------------------------------------


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


def _pandas() -> Any:
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
        return _pandas().DataFrame(self.samples(task))

    def metrics_dataframe(self) -> Any:
        """One row per task, its top-level numeric figures as columns (pandas needed)."""
        rows = [{"task": task, **m.scalars()} for task, m in self.metrics.items()]
        return _pandas().DataFrame(rows).set_index("task")

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


# ---- commands ------------------------------------------------------------------------------


def _option_items(options: Mapping[str, Any] | Iterable[str] | None) -> dict[str, str]:
    """`options` as {KEY: VALUE}: a mapping (numbers are written as the command line would
    take them) or `KEY=VALUE` strings as after --option."""
    from clineval.options import split_option_items

    if options is None:
        return {}
    if isinstance(options, str):
        return split_option_items([options])
    if isinstance(options, Mapping):
        out = {}
        for key, value in options.items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                value = str(value)
            if not isinstance(value, str):
                raise InputError(f"--option {key}: the value must be a string or a number")
            out[str(key)] = value
        return out
    return split_option_items(options)


def _as_list(value: str | Sequence[str] | None) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def _config(tasks: str | Sequence[str], model: str | None, settings: dict[str, Any]) -> Any:
    """The RunConfig `clineval run` would build from the same settings (RunConfig field
    names: data_dir, limit, seed, base_urls, judges, timeout_s, options, ...)."""
    from clineval.config import RunConfig

    for name in ("data_dir", "cases", "verdicts", "judge_prompt", "price_table"):
        if isinstance(settings.get(name), os.PathLike):
            settings[name] = os.fspath(settings[name])
    verdicts = settings.get("verdicts")
    if model is None:
        if verdicts is None:
            raise InputError(
                "clineval.run: model= is missing (or verdicts=FILE to score a verdicts file)"
            )
        model = f"predictions:{verdicts}"  # as on the command line: the file is the model
    for name in ("base_urls", "judges"):
        if name in settings:
            settings[name] = _as_list(settings[name])
    if "options" in settings:
        settings["options"] = _option_items(settings["options"])
    return RunConfig.checked(tasks=_as_list(tasks), model=model, **settings)


def run(
    tasks: str | Sequence[str],
    *,
    output_dir: PathLike,
    model: str | None = None,
    wait: bool = False,
    **settings: Any,
) -> RunResult:
    """Run (or resume) `tasks` with `model` into `output_dir`, as `clineval run` does, and
    return the run. Settings take the RunConfig names: data_dir, limit, seed, base_urls,
    judges, concurrency, cases, verdicts, judge_prompt, judge_errors_as_unmet,
    max_judge_error_rate, shard, dedupe, temperature, max_tokens, timeout_s, max_retries,
    price_table, options ({"KEY": "VALUE"} or ["KEY=VALUE"]). `wait=True` waits for another
    process using output_dir (--wait).

    Raises InputError for bad input, and RunFailed when results were written but a task
    failed a bound (exit code 1 on the command line).
    """
    from clineval.runner import TaskFailures
    from clineval.runner import run as run_tasks

    config = _config(tasks, model, dict(settings))
    path = Path(output_dir)
    try:
        # runner.run checks the output directory and the whole config before it takes the
        # lock, exactly as for `clineval run`
        run_tasks(config, path, wait=wait)
    except TaskFailures as exc:
        raise RunFailed(str(exc), RunResult.load(path)) from None
    return RunResult.load(path)


def dry_run(
    tasks: str | Sequence[str],
    *,
    output_dir: PathLike,
    model: str | None = None,
    **settings: Any,
) -> dict[str, Any]:
    """What `clineval run --dry-run` prints, as data: per task, role and model the calls
    still to send, the ones stored, estimated prompt tokens, the completion-token ceiling and
    a cost range (with price_table=). Calls no model and writes nothing."""
    from clineval.runner import plan

    return plan(_config(tasks, model, dict(settings)), Path(output_dir))


def score(run_dir: PathLike, *, data_dir: PathLike | None = None, force: bool = False) -> RunResult:
    """Recompute results.json from the run store, calling no model (`clineval score`)."""
    from clineval.runner import TaskFailures
    from clineval.runner import score as score_run

    path = Path(run_dir)
    try:
        score_run(path, data_dir=None if data_dir is None else os.fspath(data_dir), force=force)
    except TaskFailures as exc:
        raise RunFailed(str(exc), RunResult.load(path)) from None
    return RunResult.load(path)


def write_report(run_dir: PathLike, output: PathLike | None = None) -> Path:
    """Write the run's self-contained HTML report (`clineval report`); default
    RUN_DIR/report.html. Returns its path. (Not called `report`: that name is the
    clineval.report package.)"""
    from clineval.report.html import write_report as write_html

    path = Path(run_dir)
    return write_html(path, Path(output) if output is not None else path / "report.html")


@dataclass(frozen=True)
class LeaderboardCell:
    run: str
    task: str
    metric: str
    value: float
    ci: tuple[float, float] | None
    fixture: bool


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
        return _pandas().DataFrame([vars(cell) for cell in self.leaderboard])


def compare(
    run_dirs: Sequence[PathLike],
    *,
    format: str = "table",
    output: PathLike | None = None,
    seed: int = 0,
) -> Comparison:
    """A leaderboard across runs with paired bootstrap tests (`clineval compare`). `format`
    table|markdown|csv|html; with `output` the rendering is also written to that file (html
    without `output` goes to ./compare.html, as on the command line)."""
    import io

    from rich.console import Console

    from clineval.report.compare import compare_runs, render_markdown

    # What the command prints goes to a string here: returned as `text`.
    sink = io.StringIO()
    console = Console(file=sink, width=200, color_system=None, soft_wrap=False)
    target = Path(output) if output is not None else None
    comp = compare_runs(
        [Path(d) for d in run_dirs], fmt=format, output=target, seed=seed, console=console
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
