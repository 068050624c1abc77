"""`clineval tasks`: the tasks, their data and metrics, or every option key."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from clineval.cli.app import app
from clineval.cli.run_flags import complete
from clineval.cli_groups import (
    path_text,
)
from clineval.cli_output import stdout
from clineval.jsonio import json_document as json_text
from clineval.secrets import redact

if TYPE_CHECKING:
    from clineval.benchmarks.base import DataFileStatus
    from clineval.options import OptionGroup


@app.command(
    "tasks",
    epilog="Examples:\n  clineval tasks --data-dir data\n  clineval tasks --options\n"
    "  clineval tasks ner:ncbi --options\n  clineval tasks --json | jq '.tasks[].task'",
)
def list_tasks(
    data_dir: Annotated[
        str | None,
        typer.Option("--data-dir", metavar="DIR", help="Data root to check.", parser=path_text),
    ] = None,
    task: Annotated[
        str | None,
        typer.Argument(
            metavar="[TASK]",
            help="Only this task (with --options: the option keys a run of it reads).",
            show_default=False,
            autocompletion=complete("tasks"),
        ),
    ] = None,
    show_options: Annotated[
        bool,
        typer.Option("--options", help="List every --option KEY (of TASK's run) with its default."),
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the list as JSON on stdout, nothing else.")
    ] = False,
) -> None:
    """List tasks, their data status and metrics (or, with --options, their option keys)."""
    from clineval.benchmarks.registry import (
        PluginError,
        active_namespaces,
        benchmark_of,
        fetch_command,
        get_task,
        option_groups,
        task_names,
    )
    from clineval.datapaths import default_cache_dir, resolve_data_root

    if task is not None:
        get_task(task)  # an unknown name: one error line, with the name meant
    if show_options:
        groups = option_groups()
        if task is not None:  # the groups a run of the task reads
            active = active_namespaces([task])
            groups = [group for group in groups if group.namespace in active]
        if as_json:
            sys.stdout.write(json_text({"options": _options_json(groups)}))
            return
        _print_options(groups)
        return

    root = resolve_data_root(data_dir)
    rows: list[dict[str, Any]] = []
    cells: list[str] = []  # the table's data column
    for name in [task] if task is not None else task_names():
        try:  # a plugin whose task cannot be made costs its row, not the listing
            made = get_task(name)
            statuses = made.data_status(root)
        except PluginError as exc:
            print(f"warning: {redact(exc.one_line())}; skipped", file=sys.stderr)
            continue
        bench = benchmark_of(name)
        rows.append(
            {
                "task": name,
                "description": made.description,
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


def _options_json(groups: list[OptionGroup]) -> list[dict[str, Any]]:
    return [
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


def _print_options(groups: list[OptionGroup]) -> None:
    """The option keys as a definition list: each key with its default (and flag, and the
    models it applies to) on one line, its help indented below, wrapped to the terminal. A
    table of four columns folds every cell at 80 columns, many times longer than this."""
    import textwrap

    width = max(stdout.width, 40)
    lines: list[str] = []
    for group in groups:
        lines.append(f"--option KEY=VALUE of {group.applies_to}:")
        for option in group.options:
            default = "-" if option.default is None else option.default
            extras = [f"default {default}"]
            if option.flag:  # a flag the benchmark keeps for the key: the same setting
                extras.append(f"also {option.flag.name}")
            if group.models_of(option):  # said only where not every model reads it
                extras.append(f"models: {group.models_text(option)}")
            # the key is copied whole into --option: it starts its line, never folded
            lines.append(f"  {group.key(option)}  ({'; '.join(extras)})")
            lines.extend(
                textwrap.wrap(
                    option.help, width - 1, initial_indent=" " * 6, subsequent_indent=" " * 6
                )
            )
        lines.append("")
    stdout.print("\n".join(lines).rstrip("\n"), markup=False, highlight=False, soft_wrap=True)
