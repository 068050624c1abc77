"""The options of `clineval run`, made from declarations: every run setting's (RunConfig's
fields and their clineval.settings.Setting), the command's own (`COMMAND_FLAGS`), and the
flags benchmarks declare for their options (clineval.options.Flag, a plugin's too).

Each becomes a typer option the way typer makes one from a parameter (typer's own
conversion, so help, metavars, parsers and completion behave as for any other command), named
as the setting is (`timeout_s` for `--timeout`): the command reads the parsed values from
`ctx.params` by those names. The benchmarks' flags are added when `run` is parsed or its help
shown, not before: finding them imports every benchmark, which no other command needs.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args, get_origin

import typer
import typer.core
import typer.main
from typer.models import ParamMeta

from clineval.cli.help import param_as_written
from clineval.cli_groups import decimal_number, path_text, path_value, whole_number
from clineval.settings import BENCHMARK, CONTROL, GROUPS, OUTPUT, Completion, Setting

# The flags of the command itself, which are no run setting (RunConfig has no field of them);
# `output_dir` is a key of a --config file too.
COMMAND_FLAGS: dict[str, tuple[Any, Setting]] = {
    "output_dir": (
        Path | None,
        Setting(
            "Run directory to write (the same DIR again resumes); or output_dir in --config.",
            OUTPUT,
            "DIR",
            short="-o",
            path=True,
        ),
    ),
    "config": (
        Path | None,
        Setting(
            "Settings from a TOML file, keys as the flags (model = ..., tasks = [...], "
            "option = {KEY = VALUE}); flags given here override it.",
            CONTROL,
            "FILE.toml",
            path=True,
        ),
    ),
    "as_json": (
        bool,
        Setting(
            "Print the results (or the --dry-run plan) as JSON on stdout, nothing else.",
            OUTPUT,
            flag="--json",
        ),
    ),
    "dry_run": (
        bool,
        Setting("Count and price the model calls the run would make; call none.", CONTROL),
    ),
    "wait": (
        bool,
        Setting("If another clineval process uses --output-dir, wait for it to end.", CONTROL),
    ),
}


def complete(kind: Completion) -> Callable[[str], list[str]]:
    """What a shell completes for a setting's value."""

    def tasks(incomplete: str) -> list[str]:
        # imported only when the shell asks: the registry loads every benchmark
        from clineval.benchmarks.registry import task_names

        return [name for name in task_names() if name.startswith(incomplete)]

    def backends(incomplete: str) -> list[str]:
        from clineval.models.registry import BACKEND_TABLE

        names = [f"{info.name}:" for info in BACKEND_TABLE]
        return [name for name in names if name.startswith(incomplete)]

    return {"tasks": tasks, "backends": backends}[kind]


def setting_params() -> list[Any]:
    """The typer options of every run setting and of the command's own flags, in the order
    of their sections (clineval.settings.GROUPS), then as declared."""
    from clineval.config import RunConfig, declared_settings

    made: list[tuple[int, Any]] = []
    for name, setting in declared_settings().items():
        info = RunConfig.model_fields[name]
        default = None if info.is_required() or info.default_factory else info.default
        made.append(_with_rank(setting, _param(name, info.annotation, setting, default)))
    for name, (kind, setting) in COMMAND_FLAGS.items():
        made.append(
            _with_rank(setting, _param(name, kind, setting, False if kind is bool else None))
        )
    # the help lists sections in the order their first option comes
    return [param for _, param in sorted(made, key=lambda pair: pair[0])]


def _with_rank(setting: Setting, param: Any) -> tuple[int, Any]:
    return (-1 if setting.group is None else GROUPS.index(setting.group)), param


def _param(name: str, annotation: Any, setting: Setting, default: Any) -> Any:
    """The typer option (or argument) of one declared setting."""
    base = _bare(annotation)
    flag = base is bool
    parser: Callable[[str], Any] | None = None
    if base is int:
        parser = whole_number
    elif base is float:
        parser = decimal_number
    elif setting.path:
        parser = path_value if base is Path else path_text
    many = base in (list, dict)
    kind: Any = list[str] | None if many else (bool if flag else _optional(annotation, default))
    completion = complete(setting.complete) if setting.complete else None
    if setting.argument:
        info: Any = typer.Argument(
            None,
            metavar=setting.metavar,
            help=setting.help,
            show_default=False,
            autocompletion=completion,
        )
    else:
        spellings = [setting.flag_of(name), *([setting.short] if setting.short else [])]
        info = typer.Option(
            False if flag else (None if many else default),
            *spellings,
            metavar=setting.metavar,
            help=setting.help,
            rich_help_panel=setting.group,
            parser=parser,
            autocompletion=completion,
        )
    return typer_param(name, kind, info)


def _bare(annotation: Any) -> Any:
    """int of `int | None`, list of `list[str]`, Path of `Path | None`."""
    args = [arg for arg in get_args(annotation) if arg is not type(None)]
    if get_origin(annotation) in (list, dict):
        return get_origin(annotation)
    if args and get_origin(annotation) is not None and len(args) == 1:
        return _bare(args[0])
    return annotation


def _optional(annotation: Any, default: Any) -> Any:
    """The option's type: the setting's, or None-able when its flag has no default."""
    return annotation if default is not None else _bare(annotation) | None


def typer_param(name: str, kind: Any, info: Any) -> Any:
    """The click parameter typer makes of a function parameter `name: kind = info`: its own
    conversion, called on the declaration (typer 0.29 names it `_get_param`; older releases
    `get_click_param`, which returns it with a value converter)."""
    meta = ParamMeta(name=name, default=info, annotation=kind)
    make = getattr(typer.main, "_get_param", None)
    if make is not None:
        return make(meta)
    return typer.main.get_click_param(meta)[0]  # type: ignore[attr-defined]


def benchmark_flag_params(taken: set[str]) -> list[Any]:
    """The benchmarks' declared option flags (clineval.options.Flag) as options of `run`,
    named by their setting (`cases`). Known only from the declarations, so a plugin's flag is
    one too; one that would shadow a flag in `taken` is left out, with a warning."""
    from clineval.option_flags import declared_flags, flag_left_out

    params = []
    for setting, (group, option, flag) in declared_flags().items():
        if flag.name in taken or not flag.name.startswith("--"):
            why = "clineval run has a flag of that name" if flag.name in taken else "not --NAME"
            flag_left_out(flag.name, group.key(option), why)
            continue
        taken.add(flag.name)
        switch = flag.value is not None
        info = typer.Option(
            False if switch else None,
            flag.name,
            metavar=None if switch else flag.metavar,
            help=f"{option.help} (--option {group.key(option)}; {group.applies_to}"
            + ("; stands in for --model" if option.replaces_model else "")
            + ").",
            rich_help_panel=BENCHMARK,
            show_default=False,
        )
        params.append(typer_param(setting, bool if switch else str | None, info))
    return params


class RunCommand(typer.core.TyperCommand):
    """`clineval run`, its options made from the declarations (`setting_params`, and the
    benchmarks' flags once it is parsed). Its function reads the values from `ctx.params`."""

    def __init__(self, name: str | None, **kwargs: Any) -> None:
        function = kwargs.pop("callback", None)
        kwargs["params"] = [*kwargs.get("params", []), *setting_params()]
        # typer's wrapper of the function takes the parameters the function declares (the
        # context alone): the values stay in ctx.params
        super().__init__(name, callback=(lambda **_: function()) if function else None, **kwargs)
        self._benchmark_flags = False

    def get_params(self, ctx: Any) -> list[Any]:
        self.add_benchmark_flags()
        return list(super().get_params(ctx))

    def add_benchmark_flags(self) -> None:
        """The benchmarks' flags as options (once): click asks for the options when it parses
        the command, completes it or shows its help."""
        if self._benchmark_flags:
            return
        self._benchmark_flags = True
        taken = {opt for param in self.params for opt in getattr(param, "opts", ())}
        for param in benchmark_flag_params(taken):
            param_as_written(param)
            self.params.append(param)


def values_of(ctx: Any) -> dict[str, Any]:
    """The parsed values of `run` by setting name, each repeatable flag's as a list."""
    return {
        name: list(value) if isinstance(value, tuple) else value
        for name, value in ctx.params.items()
    }


def settings_table() -> str:
    """The run settings as the Markdown table of docs/command-line.md (tests check that the
    page holds this very table): each setting's flag, --config key, API keyword, default, what
    it sets and what it takes part in."""
    from clineval.config import RunConfig, declared_settings

    rows = [
        "| flag | config key | API keyword | default | what it sets |",
        "|---|---|---|---|---|",
    ]
    for name, setting in declared_settings().items():
        info = RunConfig.model_fields[name]
        fixed = None if info.is_required() or info.default_factory else info.default
        default = "-" if fixed is None else f"`{str(fixed).lower()}`"
        flag = setting.flag_of(name) + (f" / {setting.short}" if setting.short else "")
        value = f" {setting.metavar}" if setting.metavar and not setting.argument else ""
        roles = [
            text
            for wanted, text in (
                (setting.identity, "a resume must keep it"),
                (setting.per_shard, "shards may differ in it"),
                (setting.scoring, "`score` may change it"),
                (setting.secret, "credentials masked"),
            )
            if wanted
        ]
        notes = f" ({'; '.join(roles)})" if roles else ""
        what = setting.help.replace("|", "\\|")
        rows.append(
            f"| `{flag}{value}` | `{setting.file_key(name)}` | `{name}` | {default} | "
            f"{what}{notes} |"
        )
    return "\n".join(rows) + "\n"
