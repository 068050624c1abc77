"""The end of a run as data: each task's headline metrics with their 95% intervals, the notes
a reader must see beside them, and the commands that come next.

The columns are what each benchmark declares as headline metrics (`MetricSchema`), grouped by
benchmark family (tasks of one family share their columns). An interval is the one the task
stored; for a metric stored without one, the seeded bootstrap over the run's samples that the
report and `clineval compare` compute (same statistics, same seed: the console, the report
and compare show the same interval). `clineval run`, `score` and `merge` end with it
(clineval.cli_output renders it).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clineval.benchmarks.missing import MISSING_KEY
from clineval.benchmarks.registry import benchmark_of, metric_schema
from clineval.reportkit.rundata import RunData
from clineval.reportkit.sections_common import (
    NOTE_KEYS,
    Metric,
    fill_intervals,
    format_value,
    headline,
)
from clineval.run_record import read_run_files
from clineval.rundir import MANIFEST, SAMPLES


@dataclass(frozen=True)
class Cell:
    value: str  # formatted as the report formats it
    interval: str | None  # "[low, high]", formatted like the value
    computed: bool = False  # the interval is the bootstrap over samples, not stored by the task


@dataclass
class Row:
    task: str
    cells: dict[str, Cell]
    fixture: bool = False


@dataclass
class Table:
    """The tasks of one benchmark family: a row per task, a column per headline metric."""

    family: str
    columns: list[str]
    rows: list[Row] = field(default_factory=list)


@dataclass
class Summary:
    tables: list[Table]
    # one line each, "TASK: text": data notes (fixture data), self-judged runs, scope notes
    notes: list[str]
    run_dir: Path | None = None
    next_commands: list[str] = field(default_factory=list)
    # "TASK: judge LABEL: figures" per judge of a panel, then its agreement line
    judges: list[str] = field(default_factory=list)
    cost: str | None = None  # the run's calls, tokens and estimated cost (manifest llm_usage)


def _cell(metric: Metric) -> Cell:
    return Cell(metric.value, metric.ci, bool(metric.ci_note))


def _is_fixture(metrics: dict[str, Any], record: dict[str, Any]) -> bool:
    """Whether the task's results or its run record's notes (`ctx.note(task, "fixture",
    True)`, what the judging kit's template writes) say fixture/synthetic."""
    return any(d.get(k) is True for d in (metrics, record) for k in ("fixture", "synthetic"))


def _notes(task: str, metrics: dict[str, Any], record: dict[str, Any]) -> list[str]:
    notes = []
    if _is_fixture(metrics, record):
        # Fixture/synthetic data must be named as such wherever its numbers appear.
        notes.append(str(metrics.get("data_note") or "fixture data: not a benchmark result"))
    elif metrics.get("data_note"):
        notes.append(str(metrics["data_note"]))
    if metrics.get("judge_is_candidate") is True:
        # A result key any judged benchmark sets: the candidate graded its own answers.
        who = metrics.get("candidate")
        notes.append(
            "self-judged: the judge was the candidate model"
            + (f" ({who})" if isinstance(who, str) and who else "")
            + ", so these scores grade its own answers; give --judge for an independent judge"
        )
    notes += [str(metrics[k]) for k in NOTE_KEYS if k != "data_note" and metrics.get(k)]
    missing = _missing(metrics)
    if missing:
        notes.append(
            f"{missing:,} sample(s) without a prediction, scored as no answer "
            f"({MISSING_KEY}): these figures are not the benchmark's over its samples"
        )
    return [f"{task}: {note}" for note in notes]


def _missing(metrics: dict[str, Any]) -> int | None:
    """The samples without a prediction (clineval.benchmarks.missing), if the task counted."""
    value = metrics.get(MISSING_KEY)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def summarize(
    results: dict[str, dict[str, Any]],
    run_dir: Path | None = None,
    *,
    command: str = "run",
    seed: int | None = None,
) -> Summary:
    """The summary of `results` (task -> metrics, as results.json holds them). With `run_dir`
    its samples give the intervals the tasks did not store, and the next commands name it."""
    run: RunData | None = None
    record: dict[str, Any] = {}  # manifest.json["tasks"]: a task's metrics as its run recorded
    cost: str | None = None
    if run_dir is not None and (run_dir / MANIFEST).exists():
        manifest = read_run_files(run_dir, with_samples=False).manifest
        record = manifest.get("tasks") or {}
        cost = cost_line(manifest.get("llm_usage"))
    tables: dict[str, Table] = {}
    notes: list[str] = []
    judges: list[str] = []
    for task, metrics in results.items():
        bench = benchmark_of(task)
        entry = record.get(task)
        task_record: dict[str, Any] = entry if isinstance(entry, dict) else {}
        schema = metric_schema(task, task_record)
        family = bench.family if bench is not None else str(task_record.get("family") or task)
        keys = schema.headline_keys if schema is not None else ()
        digits = schema.digits() if schema is not None else None
        cards, _ = headline(metrics, keys, digits)
        counts = {spec.key for spec in schema.metrics if spec.count} if schema else set()
        if run_dir is not None and any(c.ci is None and c.key not in counts for c in cards):
            # The samples are read only when a task stored no interval (27,000 verdict rows
            # of a ClinConsensus run take seconds to read, for intervals it stored).
            if run is None and (run_dir / SAMPLES).exists():
                run = read_run_files(run_dir, with_samples=True)
            if run is not None:
                from clineval.report.task_stats import statistics_for  # numpy: only if needed

                if seed is None:
                    seed = int(run.manifest.get("seed") or 0)
                stats = statistics_for(task, metrics, run.samples.get(task, []), task_record)
                fill_intervals(cards, stats, seed, digits)
        table = tables.setdefault(family, Table(family, []))
        for card in cards:
            if card.key not in table.columns:
                table.columns.append(card.key)
        fixture = _is_fixture(metrics, task_record)
        cells = {c.key: _cell(c) for c in cards}
        if (missing := _missing(metrics)) is not None:
            cells[MISSING_KEY] = Cell(f"{missing:,}", None)
        table.rows.append(Row(task, cells, fixture))
        notes += _notes(task, metrics, task_record)
        judges += judge_lines(task, metrics, keys, digits)
    for table in tables.values():
        # a column only where a sample went without a prediction: never a silent gap
        gaps = any(_nonzero(row.cells.get(MISSING_KEY)) for row in table.rows)
        if gaps and MISSING_KEY not in table.columns:
            table.columns.append(MISSING_KEY)
    commands = next_commands(run_dir, command) if run_dir is not None else []
    return Summary(list(tables.values()), notes, run_dir, commands, judges, cost)


def cost_line(usage: Any) -> str | None:
    """What the run's model calls took: calls, tokens, reused calls, estimated cost (the
    manifest's `llm_usage`, read from the stored calls); None for a run without any."""
    if not isinstance(usage, dict) or not usage.get("models"):
        return None
    made, reused = int(usage.get("calls") or 0), int(usage.get("reused_calls") or 0)
    tokens = (
        f"{int(usage.get('prompt_tokens') or 0):,} prompt + "
        f"{int(usage.get('completion_tokens') or 0):,} completion tokens"
    )
    cost = usage.get("estimated_cost")
    money = (
        "cost unknown (give --price-table)"
        if not isinstance(cost, int | float)
        else f"estimated cost {cost:,.4f} (the price table's currency)"
    )
    unpriced = usage.get("unpriced_models") or []
    if isinstance(cost, int | float) and unpriced:
        money += f", without {', '.join(map(str, unpriced))} (no price)"
    again = f", {reused:,} reused from earlier runs (paid there)" if reused else ""
    return f"model calls: {made:,} ({tokens}){again}; {money}"


def judge_lines(
    task: str, metrics: dict[str, Any], keys: tuple[str, ...], digits: dict[str, int] | None
) -> list[str]:
    """A judged task with a panel: each judge's headline figures (`per_judge`, the judging
    kit's key), then the judges' agreement (`agreement`)."""
    per_judge = metrics.get("per_judge")
    if not isinstance(per_judge, dict):
        return []
    lines = []
    for label, figures in per_judge.items():
        if not isinstance(figures, dict):
            continue
        shown = [
            f"{key} {format_value(key, value, (digits or {}).get(key))}"
            for key in keys
            if isinstance(value := figures.get(key), int | float) and not isinstance(value, bool)
        ]
        lines.append(f"{task}: judge {label}: " + (", ".join(shown) or "no figure"))
    agreement = metrics.get("agreement")
    if isinstance(agreement, dict):
        pct, kappa = agreement.get("mean_percent_agreement"), agreement.get("mean_cohen_kappa")
        lines.append(
            f"{task}: judges agree on "
            + ("-" if not isinstance(pct, int | float) else f"{pct:.1%}")
            + " of verdicts, Cohen's kappa "
            + ("-" if not isinstance(kappa, int | float) else f"{kappa:.3f}")
            + " (mean over judge pairs)"
        )
    return lines


def _nonzero(cell: Cell | None) -> bool:
    return cell is not None and cell.value not in ("0", "")


def next_commands(run_dir: Path, command: str = "run") -> list[str]:
    """What a user does next with a finished run directory."""
    where = shlex.quote(str(run_dir))
    report = shlex.quote(str(run_dir / "report.html"))
    commands = [
        f"clineval report {where} -o {report}",
        f"clineval compare {where} OTHER_RUN_DIR ...",
    ]
    if command == "run":
        commands.append(f"clineval score {where}")
    return commands
