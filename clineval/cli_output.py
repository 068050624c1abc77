"""What the command line prints: the results table of a run and the --dry-run plan."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from clineval.console import make_console

stdout = make_console()


def _headline(metrics: dict[str, Any]) -> list[tuple[str, str]]:
    """Top-level scalar metrics of a task, formatted for the terminal."""
    out = []
    for key, value in metrics.items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        out.append((key, f"{value:.4f}" if isinstance(value, float) else str(value)))
    return out


def print_results(results: dict[str, Any]) -> None:
    for task, metrics in results.items():
        table = Table(title=task, show_header=True)
        table.add_column("metric")
        table.add_column("value", justify="right")
        for key, value in _headline(metrics):
            table.add_row(key, value)
        stdout.print(table)
        if metrics.get("fixture") is True:
            # Fixture/synthetic data must be named as such wherever its numbers appear.
            note = str(metrics.get("data_note") or "fixture data: not a benchmark result")
            stdout.print(f"{task}: {note}", style="bold yellow", markup=False)


def _money(value: float | None) -> str:
    return "-" if value is None else f"${value:,.2f}"


def _duration(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def print_plan(summary: dict[str, Any]) -> None:
    """The table of `clineval run --dry-run`."""
    from clineval.plan import UNBOUNDED_REPLY_TOKENS

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
            f"{row['stored']:,}",
            f"{row['prompt_tokens']:,}"
            + (f"\n{shared:,} shared" if (shared := row["shared_prefix_tokens"]) else ""),
            ceiling + (f"\n+{unbounded:,} unbounded" if unbounded else ""),
            f"{_money(row['cost_low'])} ..\n{_money(row['cost_high'])}"
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
        f"{_money(summary['cost_low'])} .. {_money(summary['cost_high'])}"
        if summary["cost_low"] is not None
        else "unknown (give --price-table for every model)"
    )
    stdout.print(
        f"total: {summary['to_send']:,} calls to send, {summary['stored']:,} already stored; "
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
    stdout.print(
        "prompt tokens are estimated (1 per CJK character, 1 per 4 other characters)"
        + (
            f"; {bounded:,} judge prompts hold answers not made yet, counted at the candidate's"
            f" max_tokens ({UNBOUNDED_REPLY_TOKENS:,} without --max-tokens)"
            if bounded
            else ""
        )
        + "; retries are not counted",
        style="dim",
    )
