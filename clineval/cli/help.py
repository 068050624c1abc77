"""Help as written, usage errors in one line, and the words of the command line."""

from __future__ import annotations

import inspect
import os
from typing import Any


def _click_module() -> Any:
    """The click that typer parses with: its own vendored copy since typer 0.29
    (`typer._click`), the click package before. Its usage errors are the ones raised."""
    import typer.core

    vendored = getattr(typer.core, "_click", None)
    return vendored if vendored is not None else getattr(typer.core, "click")  # noqa: B009


def _enable_completion() -> None:
    """Register typer's completion of each shell: with add_completion=False typer does not,
    and the shell's call (`_CLINEVAL_COMPLETE=complete_bash clineval`) needs it."""
    if any(name.startswith("_CLINEVAL_COMPLETE") for name in os.environ):
        from typer._completion_classes import completion_init

        from clineval.cli.completion import register_bash_completion

        completion_init()
        register_bash_completion()  # names with a colon (clineval.cli.completion)


# Metavars of options that declare none, by the value's type (typer would print `<int>`).
_TYPE_METAVARS = {"int": "N", "float": "NUMBER", "str": "TEXT", "Path": "PATH"}


def _help_as_written(command: Any) -> None:
    """Every help text of `command` and its subcommands as written, in typer's rich help.

    Rich markup would swallow a `[@base_url]`, so text is escaped; a docstring's wrapped lines
    are joined (typer keeps them in the command list and in later paragraphs); a flag shows no
    `<bool>` and a value no `<list[str]>` type: each value shows its metavar."""
    from rich.markup import escape

    if command.help:
        paragraphs = inspect.cleandoc(command.help).split("\n\n")
        joined = [" ".join(p.split()) if not p.startswith("\b") else p for p in paragraphs]
        command.help = escape("\n\n".join(joined))
        if not command.short_help:
            command.short_help = joined[0]  # escaped on its own: typer renders it apart
        command.short_help = escape(command.short_help)
    if command.epilog:
        # typer dedents from the second line on: a first line of its own keeps the indented
        # example lines indented
        command.epilog = "\n" + escape(command.epilog)
    help_option = command.get_help_option(command.context_class(command))
    params = [*command.params, *([help_option] if help_option is not None else [])]
    for param in params:
        param_as_written(param)
    for sub in getattr(command, "commands", {}).values():
        _help_as_written(sub)


def param_as_written(param: Any) -> None:
    """One option's or argument's help as written, and a metavar naming its value (see
    `_help_as_written`)."""
    from rich.markup import escape

    if getattr(param, "clineval_as_written", False):
        return  # once only: escaped twice, a `[` would show its backslash
    param.clineval_as_written = True
    if getattr(param, "help", None):
        param.help = escape(param.help)
    if param.param_type_name == "argument":
        if param.metavar is None:
            param.metavar = param.name.upper()
        # the name column already says TASK...: no type column beside it
        param.display_type_rich = lambda ctx: None
    elif getattr(param, "is_flag", False) or getattr(param, "count", False):
        param.metavar = ""
    elif param.metavar is None and not _is_choice(param):
        bare = param.bare_type() if hasattr(param, "bare_type") else "str"
        bare = bare.removeprefix("list[").removesuffix("]")
        param.metavar = _TYPE_METAVARS.get(bare, bare.upper())


def _is_choice(param: Any) -> bool:
    descriptor = getattr(param, "type_descriptor", None)
    return bool(getattr(descriptor, "is_choice", False))


def _usage_error_line(exc: Exception) -> str:
    """One line for a command-line usage error: what is wrong and where to find the usage."""
    ctx = getattr(exc, "ctx", None)
    command = getattr(ctx, "command_path", None) or "clineval"
    format_message = getattr(exc, "format_message", None)
    message = format_message() if callable(format_message) else str(exc)
    # typer's choice check words it as a pydantic error: "Value error, 'x' is not one of ..."
    message = " ".join(str(message).split()).replace(": Value error, ", ": ")
    misplaced = _global_option(ctx, getattr(exc, "option_name", None))
    if misplaced is not None:
        # `clineval run ... --quiet`: click would offer the subcommand's nearest option
        return (
            f"error: {command}: {misplaced} is an option of clineval itself: give it before "
            f"the command ('clineval {misplaced} {command.removeprefix('clineval ')} ...')"
        )
    return f"error: {command}: {message} (see '{command} --help')"


def _global_option(ctx: Any, name: Any) -> str | None:
    """The root command's option that an unknown option of a subcommand names (`--quiet`,
    `--debug`), or None."""
    if ctx is None or ctx.parent is None or not isinstance(name, str):
        return None
    for param in ctx.find_root().command.params:
        if name in (*param.opts, *param.secondary_opts) and not param.is_eager:
            return str(param.opts[0])
    return None


def _completed_words() -> list[str]:
    """The words of the command line a shell asks completions of (typer's variables: bash's
    COMP_WORDS, the others' _TYPER_COMPLETE_ARGS), without the program's name."""
    if not any(name.startswith("_CLINEVAL_COMPLETE") for name in os.environ):
        return []
    line = os.environ.get("COMP_WORDS") or os.environ.get("_TYPER_COMPLETE_ARGS") or ""
    return line.split()[1:]


def _command_words(args: list[str]) -> tuple[str, ...]:
    """The command of a command line: its leading words that are not options (the global
    options --debug and --quiet take no value)."""
    words: list[str] = []
    for arg in args:
        if arg.startswith("-"):
            if words:
                break
            continue
        words.append(arg)
    return tuple(words)
