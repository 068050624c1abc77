"""`clineval tasks`: the tasks, their data and metrics, or every option key."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from clineval.cli.app import app
from clineval.cli_groups import (
    path_text,
)
from clineval.cli_output import stdout
from clineval.jsonio import json_document as json_text
from clineval.secrets import redact

if TYPE_CHECKING:
    from clineval.benchmarks.base import DataFileStatus


@app.command(
    "tasks",
    epilog="Examples:\n  clineval tasks --data-dir data\n  clineval tasks --options\n"
    "  clineval tasks --json | jq '.tasks[].task'",
)
def list_tasks(
    data_dir: Annotated[
        str | None,
        typer.Option("--data-dir", metavar="DIR", help="Data root to check.", parser=path_text),
    ] = None,
    show_options: Annotated[
        bool, typer.Option("--options", help="List every --option KEY with its default.")
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the list as JSON on stdout, nothing else.")
    ] = False,
) -> None:
    """List tasks, their data status and metrics (or, with --options, every option key)."""
    from clineval.benchmarks.registry import (
        PluginError,
        benchmark_of,
        fetch_command,
        get_task,
        option_groups,
        task_names,
    )
    from clineval.datapaths import default_cache_dir, resolve_data_root

    if show_options:
        groups = option_groups()
        if as_json:
            sys.stdout.write(
                json_text(
                    {
                        "options": [
                            {
                                "key": group.key(option),
                                "applies_to": group.applies_to,
                                "default": option.default,
                                "models": group.models_text(option),
                                "help": option.help,
                                "flag": option.flag.name if option.flag else None,
                            }
                            for group in groups
                            for option in group.options
                        ]
                    }
                )
            )
            return
        for group in groups:
            options = Table(show_header=True, title=f"--option KEY=VALUE of {group.applies_to}")
            # a key is copied as a whole into --option: never folded over two lines
            options.add_column("key", no_wrap=True)
            for col in ("default", "models", "what it sets"):
                options.add_column(col, overflow="fold")
            for option in group.options:
                default = "-" if option.default is None else option.default
                models = group.models_text(option)
                # a flag the benchmark keeps for the key: the same setting (one of the two)
                flag = f"(also {option.flag.name}) " if option.flag else ""
                options.add_row(group.key(option), default, models, flag + option.help)
            stdout.print(options)
        return

    root = resolve_data_root(data_dir)
    rows: list[dict[str, Any]] = []
    cells: list[str] = []  # the table's data column
    for name in task_names():
        try:  # a plugin whose task cannot be made costs its row, not the listing
            task = get_task(name)
            statuses = task.data_status(root)
        except PluginError as exc:
            print(f"warning: {redact(exc.one_line())}; skipped", file=sys.stderr)
            continue
        bench = benchmark_of(name)
        rows.append(
            {
                "task": name,
                "description": task.description,
                "data": [
                    {
                        "path": str(s.relative_path),
                        "status": s.status,
                        "fetch": fetch_command(s.relative_path) if s.status == "missing" else None,
                    }
                    for s in statuses
                ],
                "metrics": list(bench.metrics.ranked_keys) if bench is not None else [],
            }
        )
        cells.append(_data_cell(statuses))
    if as_json:
        shown_root = None if root is None else str(root)
        document = {"data_root": shown_root, "fetch_cache": str(default_cache_dir()), "tasks": rows}
        sys.stdout.write(json_text(document))
        return
    table = Table(show_header=True)
    for col in ("task", "description", "data", "metrics"):
        table.add_column(col)
    for row, cell in zip(rows, cells, strict=True):
        table.add_row(row["task"], row["description"], cell, ", ".join(row["metrics"]))
    stdout.print(table)
    # where the files are looked for: the data root, then the fetch cache (clineval.datapaths)
    where = "none (--data-dir, $CLINEVAL_DATA_DIR)" if root is None else str(root)
    stdout.print(f"data root: {where}", soft_wrap=True)
    stdout.print(f"fetch cache: {default_cache_dir()}", soft_wrap=True)


def _data_cell(statuses: list[DataFileStatus]) -> str:
    """A task's data in one cell: "ok", the files that are not, and for missing files the
    command that fetches them (where a corpus has one)."""
    from clineval.benchmarks.registry import fetch_command

    bad = [s for s in statuses if s.status != "ok"]
    if not bad:
        return "ok"
    parts: list[str] = []
    missing: dict[str, int] = {}
    for status in bad:
        command = fetch_command(status.relative_path) if status.status == "missing" else None
        if command is None:
            parts.append(f"{status.relative_path}: {status.status}")
        else:
            missing[command] = missing.get(command, 0) + 1
    for command, count in missing.items():
        files = "1 file" if count == 1 else f"{count} files"
        parts.append(f"{files} missing: run '{command}'")
    return "; ".join(parts)
