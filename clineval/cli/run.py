"""`clineval run`: parse (the flags, the --config file, the benchmarks' flags), check
(RunConfig), hand over (clineval.runner, or clineval.planner for --dry-run).

Its options are made from the declarations of the run settings (clineval.cli.run_flags):
nothing here names a setting but the command's own flags.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, get_origin

import typer

from clineval.cli.app import app
from clineval.cli.results import _json_stdout, _on_failure, _results_payload
from clineval.cli.run_flags import RunCommand, values_of
from clineval.cli_output import print_plan, print_results
from clineval.errors import InputError


def _run_epilog() -> str:
    from clineval.models.registry import BACKEND_TABLE

    backends = "\n".join(f"  {info.name}:{info.form}" for info in BACKEND_TABLE)
    return (
        "Examples:\n"
        "  clineval run tcm-sd -m baseline:tfidf -o runs/tfidf\n"
        "  clineval run ner:ncbi -m baseline:crf --limit 5 -o runs/crf\n"
        "  clineval run clinconsensus -m openai:qwen@http://127.0.0.1:8000/v1 -o runs/cc "
        "--dry-run\n"
        "  clineval run --config run.toml -o runs/again   (flags override the file)\n"
        "  clineval config runs/tfidf > run.toml          (a finished run's settings)\n\n"
        f"Model backends (--model BACKEND:...):\n{backends}\n\n"
        "Task option keys (--option KEY=VALUE) and their defaults: clineval tasks --options"
    )


@app.command(cls=RunCommand, epilog=_run_epilog())
def run(ctx: typer.Context) -> None:
    """Run TASK... with a model; rerun with the same --output-dir to resume."""
    from clineval.config import RunConfig
    from clineval.options import given_in
    from clineval.planner import plan as plan_tasks
    from clineval.runner import run as run_tasks

    values = _with_config_file(ctx, values_of(ctx))
    if not values["tasks"]:
        raise InputError(
            "clineval run: missing argument 'TASK...' (or tasks in --config FILE) "
            "(see 'clineval run --help')"
        )
    if values["output_dir"] is None:
        raise InputError(
            "clineval run: missing option '--output-dir' / '-o' (or output_dir in --config "
            "FILE) (see 'clineval run --help')"
        )
    out_dir = Path(values["output_dir"])
    settings = _config_settings(ctx, values)
    if settings["model"] is None:  # a file given in its place is the model (`""` is refused)
        settings["model"] = _model_from_options(settings["options"])
    # the run's checks of its options (here and as it starts) name a --config file's keys
    with given_in(values.get(_FILE_OPTIONS, {})):
        run_config = RunConfig.checked(**settings)
        with _json_stdout(values["as_json"]) as emit:
            if values["dry_run"]:
                summary = plan_tasks(run_config, out_dir)
                if emit is not None:
                    emit({"run_dir": str(out_dir), "dry_run": True, **summary})
                else:
                    print_plan(summary)
                return
            with _on_failure(emit, out_dir, "run"):
                results = run_tasks(run_config, out_dir, wait=values["wait"])
            if emit is not None:
                emit(_results_payload(out_dir, results, None))
                return
    print_results(results, out_dir)


def _model_from_options(options: dict[str, str]) -> str:
    """The model of a run given no --model: the file of a benchmark's option that stands in
    for it (clineval.option_flags.model_from_options), else the error that --model is missing,
    naming those options."""
    from clineval.option_flags import model_from_options, stand_in_spelling, stand_ins

    model = model_from_options(options)
    if model is not None:
        return model
    spellings = [stand_in_spelling(group, option) for group, option in stand_ins()]
    alternative = f" (or {' / '.join(spellings)}, which stands in for it)" if spellings else ""
    raise InputError(
        f"clineval run: missing option '--model' / '-m'{alternative} (see 'clineval run --help')"
    )


def _with_config_file(ctx: typer.Context, values: dict[str, Any]) -> dict[str, Any]:
    """The run's values by setting name: those given on the command line, else the --config
    file's, else the flags' defaults. A benchmark's flag the file gives is marked as the
    file's (`_config_settings` lets the command line's --option of its key win)."""
    if values["config"] is None:
        return values
    from clineval.config_file import file_keys, read_run_file
    from clineval.option_flags import declared_flags

    flags = {name: flag.value is None for name, (_, _, flag) in declared_flags().items()}
    fields = file_keys()
    out = dict(values)
    for key, value in read_run_file(values["config"], flags).items():
        name = fields.get(key, key)
        if not _on_command_line(ctx, name):
            out[name] = value
            if key in flags:
                out.setdefault(_FILE_FLAGS, set()).add(name)
            if name == "options":
                _check_file_options(values["config"], value)
                keys = [item.partition("=")[0].strip() for item in value]
                out[_FILE_OPTIONS] = dict.fromkeys(keys, str(values["config"]))
    return out


def _check_file_options(path: Path, items: list[str]) -> None:
    """The --config file's `option` keys and values, checked where they enter: an error names
    the file and its key, not a --option the user never typed. (What depends on the run, such
    as a key of a benchmark the run does not use, is checked with the run's other settings.)"""
    from clineval.benchmarks.registry import option_groups
    from clineval.options import parse_items, split_option_items

    try:
        parse_items(split_option_items(items, "option"), option_groups(), "option")
    except InputError as exc:
        raise InputError(exc.message, path=path) from None


_FILE_FLAGS = "benchmark flags of the --config file"
_FILE_OPTIONS = "option keys of the --config file"


def _on_command_line(ctx: typer.Context, name: str) -> bool:
    return getattr(ctx.get_parameter_source(name), "name", "") == "COMMANDLINE"


def _config_settings(ctx: typer.Context, values: dict[str, Any]) -> dict[str, Any]:
    """RunConfig's settings of the run's values: each field's value (a repeatable flag not
    given: an empty list), the --option items with the benchmarks' flags (`--cases FILE`) as
    their options. What the command line gives overrides the --config file, flag or option:
    a key set on the command line drops the file's value of it."""
    from clineval.config import RunConfig
    from clineval.option_flags import declared_flags, with_flags
    from clineval.options import split_option_items

    settings = {name: values[name] for name in RunConfig.model_fields}
    for name, info in RunConfig.model_fields.items():
        if get_origin(info.annotation) is list and settings[name] is None:
            settings[name] = []  # a repeatable flag not given
    options = split_option_items(values["options"] or [])
    flags = declared_flags()
    given = {n: values[n] for n in flags if values.get(n) not in (None, False)}
    from_file: set[str] = values.get(_FILE_FLAGS, set())
    file_flags = {n: v for n, v in given.items() if n in from_file}
    line_flags = {n: v for n, v in given.items() if n not in from_file}
    if file_flags or line_flags:
        line_keys = {flags[name][0].key(flags[name][1]) for name in line_flags}
        if not _on_command_line(ctx, "options"):  # the file's items: the line's flags win
            options = {key: value for key, value in options.items() if key not in line_keys}
        else:  # the command line's --option items: the file's flags of their keys give way
            file_flags = {
                n: v for n, v in file_flags.items() if flags[n][0].key(flags[n][1]) not in options
            }
        options = with_flags(with_flags(options, file_flags), line_flags)
    settings["options"] = options
    return settings
