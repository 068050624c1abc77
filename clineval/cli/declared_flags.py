"""The benchmarks' declared option flags (clineval.options.Flag) as flags of `clineval run`."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from typing import Annotated, Any

import typer

from clineval.cli.app import _BENCHMARK

# ctx.meta keys: the declared option flags given on the command line, and in --config FILE
_DECLARED_FLAGS, _FILE_FLAGS = "clineval:declared-flags", "clineval:file-flags"


def _with_declared_flags(ctx: typer.Context, values: dict[str, Any]) -> dict[str, str]:
    """The run's --option items with the benchmarks' declared flags (`--cases FILE`) as their
    options. What the command line gives overrides the --config file, flag or option: a key
    set on the command line drops the file's value of it."""
    from clineval.option_flags import declared_flags, with_flags
    from clineval.options import split_option_items

    line_flags: dict[str, Any] = ctx.meta.get(_DECLARED_FLAGS, {})
    file_flags: dict[str, Any] = ctx.meta.get(_FILE_FLAGS, {})
    options = split_option_items(values["option"] or [])
    if not line_flags and not file_flags:
        return options
    flags = declared_flags()
    option_from_line = getattr(ctx.get_parameter_source("option"), "name", "") == "COMMANDLINE"
    line_keys = {flags[name][0].key(flags[name][1]) for name in line_flags}
    if not option_from_line:  # the file's --option items: the command line's flags win
        options = {key: value for key, value in options.items() if key not in line_keys}
    else:  # the command line's --option items: the file's flags of their keys give way
        file_flags = {
            name: value
            for name, value in file_flags.items()
            if flags[name][0].key(flags[name][1]) not in options
        }
    return with_flags(with_flags(options, file_flags), line_flags)


def add_declared_flags(command: Any) -> None:
    """The benchmarks' declared option flags (clineval.options.Flag) as options of `clineval
    run` (`command`), listed in its help: each keeps its value in ctx.meta for
    `_with_declared_flags`. Known only from the declarations, so a plugin's flag is one too;
    one that would shadow a flag of clineval's own is left out, with a warning. typer makes
    the options, from a signature built here (its public way to declare one)."""
    from clineval.option_flags import declared_flags

    taken = {opt for param in command.params for opt in getattr(param, "opts", ())}
    parameters: list[inspect.Parameter] = []
    for setting, (group, option, flag) in declared_flags().items():
        if flag.name in taken or not flag.name.startswith("--"):
            logging.getLogger(__name__).warning(
                "the flag %s of option %s is left out: clineval run has a flag of that name",
                flag.name,
                group.key(option),
            )
            continue
        taken.add(flag.name)
        info = typer.Option(
            flag.name,
            metavar=None if flag.value is not None else flag.metavar,
            help=f"{option.help} (--option {group.key(option)}; {group.applies_to}"
            + ("; stands in for --model" if option.replaces_model else "")
            + ").",
            rich_help_panel=_BENCHMARK,
            expose_value=False,
            callback=_keep_declared_flag(setting),
            show_default=False,
        )
        kind: Any = bool if flag.value is not None else str | None
        parameters.append(
            inspect.Parameter(
                f"flag_{len(parameters)}",
                inspect.Parameter.KEYWORD_ONLY,
                default=False if flag.value is not None else None,
                annotation=Annotated[kind, info],
            )
        )
    if not parameters:
        return

    def holder(**_: Any) -> None:  # never called: only its signature is read
        return None

    holder.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    holder.__annotations__ = {p.name: p.annotation for p in parameters}
    app_of_flags = typer.Typer(add_completion=False)
    app_of_flags.command()(holder)
    command.params.extend(typer.main.get_command(app_of_flags).params)


def _keep_declared_flag(setting: str) -> Callable[..., Any]:
    def keep(ctx: typer.Context, value: Any) -> Any:
        if value is not None and value is not False:
            ctx.meta.setdefault(_DECLARED_FLAGS, {})[setting] = value
        return value

    return keep
