"""The `clineval` typer app: its global options (--debug, --quiet, --version, completion)
and the names every command module shares. The commands register on `app` from their own
modules (clineval.cli imports them all)."""

from __future__ import annotations

import logging
from typing import Annotated, Any, Literal

import typer

from clineval.cli_groups import (
    data_app,
    skills_app,
)
from clineval.errors import InputError

app = typer.Typer(
    # completion options of our own (below): typer's guess the shell from the parent process
    # and fail ("Shell  not supported") where there is none to guess from, as in CI or an agent
    add_completion=False,
    no_args_is_help=True,
    help="Evaluate models on Clinical NER (NCER), TCM-SD and ClinConsensus.",
    epilog="Every command's options: clineval COMMAND --help. Task option keys: clineval tasks "
    "--options.",
)
app.add_typer(data_app, name="data")
app.add_typer(skills_app, name="skills")

_state: dict[str, Any] = {"debug": False}

# Option groups of `clineval run --help` (typer's rich_help_panel).
_MODEL, _JUDGE, _DATA, _OUTPUT, _CONTROL, _BATCH, _BENCHMARK = (
    "Model",
    "Judge",
    "Data",
    "Output",
    "Run control",
    "Batch",
    "Benchmark flags (each one --option KEY of a benchmark)",
)


def _print_version(value: bool) -> None:
    if value:
        from clineval.version import version_line

        print(version_line())
        raise typer.Exit()


Shell = Literal["bash", "zsh", "fish", "powershell", "pwsh"]


def _show_completion(ctx: typer.Context, param: typer.CallbackParam, value: str | None) -> None:
    if value is not None and not ctx.resilient_parsing:
        import typer.completion

        typer.completion.show_callback(ctx, param, value)  # exits


def _install_completion(ctx: typer.Context, param: typer.CallbackParam, value: str | None) -> None:
    if value is not None and not ctx.resilient_parsing:
        import typer.completion

        try:
            typer.completion.install_callback(ctx, param, value)  # exits
        except OSError as exc:  # $HOME a file, a read-only home: the script has nowhere to go
            where = f"{exc.filename}: " if exc.filename else ""
            raise InputError(
                f"--install-completion {value}: cannot write {where}{exc.strerror or exc} "
                f"(print the script with --show-completion {value} and install it by hand)"
            ) from None


@app.callback()
def _global(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks.")] = False,
    quiet: Annotated[
        bool,
        typer.Option(
            "--quiet",
            help="No progress (bars, progress lines, status lines): only warnings, errors and"
            " the results. (Without it, stderr in a file gets a progress line every"
            " $CLINEVAL_PROGRESS_INTERVAL seconds, default 20.)",
        ),
    ] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            "-V",
            is_eager=True,
            callback=_print_version,
            help="Print the version and exit.",
        ),
    ] = False,
    install_completion: Annotated[
        Shell | None,
        typer.Option(
            "--install-completion",
            metavar="SHELL",
            is_eager=True,
            callback=_install_completion,
            help="Install tab completion for SHELL (bash, zsh, fish, powershell, pwsh).",
        ),
    ] = None,
    show_completion: Annotated[
        Shell | None,
        typer.Option(
            "--show-completion",
            metavar="SHELL",
            is_eager=True,
            callback=_show_completion,
            help="Print the completion script for SHELL, to install it by hand.",
        ),
    ] = None,
) -> None:
    from clineval.progress import current_stderr, interval_seconds, set_quiet

    _state["debug"] = debug
    set_quiet(quiet)
    interval_seconds()  # a bad $CLINEVAL_PROGRESS_INTERVAL: one error line before any work
    # INFO: status lines of long waits (a batch's) are progress too, so --quiet drops them.
    # Written to stderr as it is at each line: a terminal's bars then keep them above.
    logging.basicConfig(
        level=logging.WARNING if quiet else logging.INFO,
        format="%(message)s",
        stream=current_stderr,
    )
