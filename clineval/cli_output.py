"""What the command line prints: the results table of a run and the --dry-run plan."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich import box
from rich.measure import Measurement
from rich.table import Table

from clineval.console import make_console

if TYPE_CHECKING:
    from clineval.run_summary import Summary, Table as SummaryTable

stdout = make_console()

_UNBOUNDED = 100_000  # columns: room enough to measure a table's natural width


def _fits(table: Table) -> bool:
    natural = Measurement.get(stdout, stdout.options.update_width(_UNBOUNDED), table)
    return natural.maximum <= stdout.options.max_width


def _text(cell: Any, stacked: bool) -> str:
    if cell is None:
        return "-"
    if cell.interval is None:
        return str(cell.value)
    return f"{cell.value}{chr(10) if stacked else ' '}{cell.interval}"


def _task_label(row: Any) -> str:
    return f"{row.task} (fixture)" if row.fixture else row.task


def _new_table() -> Table:
    return Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="bold")


def _by_task(table: SummaryTable, stacked: bool) -> Table:
    """A row per task, a column per headline metric."""
    out = _new_table()
    out.add_column("task", no_wrap=True)
    for key in table.columns:
        out.add_column(key, justify="right", no_wrap=True)
    for row in table.rows:
        out.add_row(
            _task_label(row), *(_text(row.cells.get(key), stacked) for key in table.columns)
        )
    return out


def _by_metric(table: SummaryTable) -> Table:
    """A row per headline metric, a column per task: for many metrics on a narrow console."""
    out = _new_table()
    out.add_column("metric", no_wrap=True)
    for row in table.rows:
        out.add_column(_task_label(row), justify="right", no_wrap=True)
    for key in table.columns:
        out.add_row(key, *(_text(row.cells.get(key), True) for row in table.rows))
    return out


def _fitted(table: SummaryTable) -> Table:
    """The first layout that fits the console: value and interval side by side, then the
    interval under its value, then the metrics as rows."""
    for layout in (_by_task(table, False), _by_task(table, True)):
        if _fits(layout):
            return layout
    return _by_metric(table)


def print_summary(summary: Summary) -> None:
    """The end of a run: its tables, the notes beside them, the run directory, what next."""
    for table in summary.tables:
        stdout.print(_fitted(table))
    if summary.tables:
        stdout.print(
            "[95% interval]: the task's own, or a bootstrap over its samples (as the report)",
            style="dim",
            markup=False,
        )
    for note in summary.notes:
        stdout.print(note, style="bold yellow", markup=False, soft_wrap=True)
    for line in summary.judges:
        stdout.print(line, markup=False, soft_wrap=True, highlight=False)
    if summary.cost is not None:
        stdout.print(summary.cost, markup=False, soft_wrap=True, highlight=False)
    if summary.run_dir is not None:
        stdout.print(f"run directory: {summary.run_dir}", markup=False, soft_wrap=True)
    if summary.next_commands:
        stdout.print("next:", markup=False)
        for command in summary.next_commands:
            stdout.print(f"  {command}", markup=False, soft_wrap=True, highlight=False)


def print_results(
    results: dict[str, Any], run_dir: Path | None = None, *, command: str = "run"
) -> None:
    """The results of a run (`run`, `score`, `merge`): one compact table per benchmark family
    with the headline metrics and their intervals; with `run_dir`, the intervals the tasks did
    not store (from its samples), the run directory and the next commands."""
    from clineval.run_summary import summarize

    print_summary(summarize(results, run_dir, command=command))


def _money(value: float | None) -> str:
    return "-" if value is None else f"${value:,.2f}"


def _duration(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def _most(cost: float | None) -> str:
    """The high end of a cost range: none when a call has no max_tokens."""
    return "unbounded" if cost is None else _money(cost)


def print_plan(summary: dict[str, Any]) -> None:
    """The table of `clineval run --dry-run`."""
    from clineval import plan

    table = Table(title="model calls this run would make (dry run: none made)")
    table.add_column("task / role / model", overflow="fold")
    for column in ("send", "stored", "~prompt tok", "max out tok", "cost"):
        table.add_column(column, justify="right")
    for row in summary["rows"]:
        unbounded = row["unbounded_replies"]
        ceiling = f"{row['max_completion_tokens']:,}"
        table.add_row(
            f"{row['task']} {row['role']}\n{row['model']}",
            f"{row['to_send']:,}",
            f"{row['stored']:,}" + (f"\n+{row['reused']:,} reused" if row.get("reused") else ""),
            f"{row['prompt_tokens']:,}"
            + (f"\n{shared:,} shared" if (shared := row["shared_prefix_tokens"]) else ""),
            ceiling + (f"\n+{unbounded:,} unbounded" if unbounded else ""),
            f"{_money(row['cost_low'])} ..\n{_most(row['cost_high'])}"
            if row["cost_low"] is not None
            else "-",
        )
    stdout.print(table)
    if not summary["rows"]:
        stdout.print(
            "no chat-model calls: the run uses a baseline, a classifier checkpoint, or a "
            "predictions / verdicts file"
        )
        return
    total_cost = (
        f"{_money(summary['cost_low'])} .. {_most(summary['cost_high'])}"
        if summary["cost_low"] is not None
        else "unknown (give --price-table for every model)"
    )
    stdout.print(
        f"total: {summary['to_send']:,} calls to send, {summary['stored']:,} already stored"
        + (f", {reused:,} answered by --reuse directories" if (reused := summary["reused"]) else "")
        + "; "
        f"~{summary['prompt_tokens']:,} prompt tokens"
        + (
            f" (~{summary['shared_prefix_tokens']:,} of them in shared prefixes, which a "
            "server's prompt cache can skip)"
            if summary["shared_prefix_tokens"]
            else ""
        )
        + ", at most "
        f"{summary['max_completion_tokens']:,} completion tokens; cost {total_cost}"
    )
    for item in summary.get("batch_rounds", []):
        stdout.print(
            f"batch round: {item['task']} {item['role']} {item['model']}: {item['lines']:,} "
            f"request lines in {item['batches']:,} batch(es)"
        )
    if "batch_rounds" in summary and not summary["batch_rounds"]:
        stdout.print("batch: no request to submit")
    seconds = summary.get("est_seconds")
    if seconds is not None:
        timed = sum(r["timed_from"] for r in summary["rows"])
        stdout.print(
            f"time: ~{_duration(seconds)} at the speed of {timed:,} stored call(s) of the same "
            "models and prompts (their server times, over the calls served at once)"
        )
    else:
        stdout.print(
            "time: unknown until calls of each model and prompt are stored (a llama.cpp server "
            "times every reply): run with --limit 1 into the same -o first, then --dry-run "
            "again estimates the rest from them"
        )
    bounded = sum(r["bounded_prompts"] for r in summary["rows"])
    # the cap the answers were counted at, as the plan used it (a local model's own reply
    # cap without --max-tokens), not a fixed figure
    bound = max((r.get("bound_tokens", 0) for r in summary["rows"]), default=0)
    assumed = any(r.get("bound_assumed") for r in summary["rows"])
    stdout.print(
        "prompt tokens are estimated (1 per CJK character, 1 per 4 other characters)"
        + (
            f"; {bounded:,} judge prompts hold answers not made yet, counted at {bound:,} "
            + (
                "tokens each (assumed: the candidate has no max_tokens; give --max-tokens)"
                if assumed
                else "tokens each (the candidate's max_tokens: --max-tokens, else a local "
                "model's reply cap)"
            )
            if bounded
            else ""
        )
        + "; retries are not counted",
        style="dim",
    )
    if summary["cost_low"] is not None:
        stdout.print(
            "cost range: low = the fewest tokens a prompt can take (1 per "
            f"{plan.LOW_ASCII_CHARS_PER_TOKEN} ASCII characters, "
            f"{plan.LOW_OTHER_TOKENS_PER_5_CHARS} per 5 others), answers not made yet empty, "
            "shared prompt starts at the cached price, 1 output token a call; high = the most "
            f"(1 per {plan.HIGH_ASCII_CHARS_PER_TOKEN} ASCII characters, 1 per byte of others, "
            f"{plan.HIGH_FRAMING_TOKENS} a message), no prompt cache, every call's max_tokens "
            "(unbounded without one); batched models at batch rates",
            style="dim",
        )
