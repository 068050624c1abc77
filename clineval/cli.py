"""The `clineval` command. Exit codes: 0 success, 2 bad input, 1 internal error.

One thin typer function per command (its flags, then one call into the layer that does the
work), and the one place that turns errors into exit codes. The `data` and `skills` groups are
in clineval.cli_groups, what is printed in clineval.cli_output.

Long module: `run` alone declares every run flag as a typer parameter with its help, metavar
and group (one per RunConfig field, plus the flags that are actions: tests/test_api.py holds
them together, and together with the keys of a --config file).
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer
from rich.table import Table

from clineval.cli_groups import (
    data_app,
    decimal_number,
    path_text,
    path_value,
    skills_app,
    whole_number,
)
from clineval.cli_output import print_plan, print_results, stdout
from clineval.errors import BatchFilesWritten, InputError
from clineval.jsonio import json_document as json_text
from clineval.secrets import MaskedStream, redact, register_environment

if TYPE_CHECKING:
    from clineval.benchmarks.base import DataFileStatus

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

_state = {"debug": False}

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

        typer.completion.install_callback(ctx, param, value)  # exits


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


def _complete_tasks(incomplete: str) -> list[str]:
    # imported only when the shell asks: the registry loads every benchmark
    from clineval.benchmarks.registry import task_names

    return [name for name in task_names() if name.startswith(incomplete)]


@app.command(epilog=_run_epilog())
def run(
    ctx: typer.Context,
    tasks: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="TASK",
            help="Task names (see clineval tasks); or tasks in --config.",
            show_default=False,
            autocompletion=_complete_tasks,
        ),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            "-m",
            metavar="BACKEND:NAME",
            help="backend:name[@base_url], backends below (not needed with a benchmark flag "
            "whose file stands in for the model).",
            rich_help_panel=_MODEL,
        ),
    ] = None,
    data_dir: Annotated[
        str | None,
        typer.Option(
            "--data-dir",
            metavar="DIR",
            help="Data root (default: $CLINEVAL_DATA_DIR, ../shared/data, the fetch cache).",
            rich_help_panel=_DATA,
            parser=path_text,
        ),
    ] = None,
    limit: Annotated[
        int | None,
        typer.Option(
            "--limit",
            parser=whole_number,
            metavar="N",
            help="First N samples only.",
            rich_help_panel=_DATA,
        ),
    ] = None,
    seed: Annotated[
        int,
        typer.Option(
            "--seed",
            parser=whole_number,
            metavar="N",
            help="Seed of sampling, bootstrap intervals and baselines.",
            rich_help_panel=_CONTROL,
        ),
    ] = 0,
    base_url: Annotated[
        list[str] | None,
        typer.Option(
            "--base-url",
            metavar="URL",
            help="A replica of the openai: model (repeat for a fleet).",
            rich_help_panel=_MODEL,
        ),
    ] = None,
    judge: Annotated[
        list[str] | None,
        typer.Option(
            "--judge",
            metavar="BACKEND:NAME",
            help="Judge model of LLM-judged tasks (repeat for a panel; default: the candidate).",
            rich_help_panel=_JUDGE,
        ),
    ] = None,
    judge_base_url: Annotated[
        list[str] | None,
        typer.Option(
            "--judge-base-url",
            metavar="[JUDGE=]URL",
            help="A judge's own replica: URL (one judge) or JUDGE=URL; repeat for a fleet.",
            rich_help_panel=_JUDGE,
        ),
    ] = None,
    concurrency: Annotated[
        int,
        typer.Option(
            "--concurrency",
            parser=whole_number,
            metavar="N",
            help="Most model calls in flight at once (candidate and judges together).",
            rich_help_panel=_MODEL,
        ),
    ] = 16,
    judge_prompt: Annotated[
        str | None,
        typer.Option(
            "--judge-prompt",
            metavar="FILE",
            help="Judge prompt template file, or official (the authors' prompt).",
            rich_help_panel=_JUDGE,
            parser=path_text,
        ),
    ] = None,
    judge_errors_as_unmet: Annotated[
        bool,
        typer.Option(
            "--judge-errors-as-unmet",
            help="Count criteria without a verdict as not met (default: left out).",
            rich_help_panel=_JUDGE,
        ),
    ] = False,
    max_judge_error_rate: Annotated[
        float,
        typer.Option(
            "--max-judge-error-rate",
            parser=decimal_number,
            metavar="RATE",
            help="Above this share of judge errors the run exits 1 (results are written).",
            rich_help_panel=_JUDGE,
        ),
    ] = 0.02,
    shard: Annotated[
        str | None,
        typer.Option(
            "--shard",
            metavar="I/N",
            help="I/N, or auto (auto/N) from a Slurm array or Kubernetes Indexed Job.",
            rich_help_panel=_DATA,
        ),
    ] = None,
    temperature: Annotated[
        float,
        typer.Option(
            "--temperature",
            parser=decimal_number,
            metavar="T",
            help="Sampling temperature of chat models (0: greedy).",
            rich_help_panel=_MODEL,
        ),
    ] = 0.0,
    max_tokens: Annotated[
        int | None,
        typer.Option(
            "--max-tokens",
            parser=whole_number,
            metavar="N",
            help="Most tokens of a chat model's reply (default: the server's).",
            rich_help_panel=_MODEL,
        ),
    ] = None,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout",
            parser=decimal_number,
            metavar="SECONDS",
            help="Seconds per call.",
            rich_help_panel=_MODEL,
        ),
    ] = 120.0,
    max_retries: Annotated[
        int,
        typer.Option(
            "--max-retries",
            parser=whole_number,
            metavar="N",
            help="Retries of a failed model call, with backoff.",
            rich_help_panel=_MODEL,
        ),
    ] = 5,
    price_table: Annotated[
        str | None,
        typer.Option(
            "--price-table",
            metavar="FILE",
            help="JSON of per-model prices: the run and --dry-run say what it costs.",
            rich_help_panel=_CONTROL,
            parser=path_text,
        ),
    ] = None,
    option: Annotated[
        list[str] | None,
        typer.Option(
            "--option",
            metavar="KEY=VALUE",
            help="A task or model option (repeatable); keys: clineval tasks --options.",
            rich_help_panel=_DATA,
        ),
    ] = None,
    output_dir: Annotated[
        Path | None,
        typer.Option(
            "--output-dir",
            "-o",
            metavar="DIR",
            help="Run directory to write (the same DIR again resumes); or output_dir in --config.",
            rich_help_panel=_OUTPUT,
            parser=path_value,
        ),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            metavar="FILE.toml",
            help="Settings from a TOML file, keys as the flags (model = ..., tasks = [...], "
            "option = {KEY = VALUE}); flags given here override it.",
            rich_help_panel=_CONTROL,
            parser=path_value,
        ),
    ] = None,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print the results (or the --dry-run plan) as JSON on stdout, nothing else.",
            rich_help_panel=_OUTPUT,
        ),
    ] = False,
    batch: Annotated[
        bool,
        typer.Option(
            "--batch",
            help="Send openai: models' calls through the Batch API.",
            rich_help_panel=_BATCH,
        ),
    ] = False,
    batch_model: Annotated[
        list[str] | None,
        typer.Option(
            "--batch-model",
            metavar="NAME",
            help="Only this model's calls in batches (repeatable).",
            rich_help_panel=_BATCH,
        ),
    ] = None,
    batch_file_out: Annotated[
        str | None,
        typer.Option(
            "--batch-file-out",
            metavar="DIR",
            help="Write batch request files here and stop.",
            rich_help_panel=_BATCH,
            parser=path_text,
        ),
    ] = None,
    batch_file_in: Annotated[
        list[str] | None,
        typer.Option(
            "--batch-file-in",
            metavar="FILE",
            help="Batch output file (vllm run-batch) to import (repeatable).",
            rich_help_panel=_BATCH,
            parser=path_text,
        ),
    ] = None,
    reuse: Annotated[
        list[str] | None,
        typer.Option(
            "--reuse",
            metavar="DIR",
            help="Answer identical model calls from this earlier run directory's store "
            "(read only; repeatable): a new judge pays only for the judge calls.",
            rich_help_panel=_MODEL,
            parser=path_text,
        ),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Count and price the model calls the run would make; call none.",
            rich_help_panel=_CONTROL,
        ),
    ] = False,
    wait: Annotated[
        bool,
        typer.Option(
            "--wait",
            help="If another clineval process uses --output-dir, wait for it to end.",
            rich_help_panel=_CONTROL,
        ),
    ] = False,
) -> None:
    """Run TASK... with a model; rerun with the same --output-dir to resume."""
    from clineval.config import RunConfig
    from clineval.runner import plan as plan_tasks
    from clineval.runner import run as run_tasks

    values = _with_config_file(ctx, config)
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
    options = _with_declared_flags(ctx, values)
    model = values["model"]
    if model is None:  # a file given in its place is the model (`--model ""` stays refused)
        model = _model_from_options(options)
    run_config = RunConfig.checked(
        tasks=values["tasks"],
        model=model,
        data_dir=values["data_dir"],
        limit=values["limit"],
        seed=values["seed"],
        base_urls=values["base_url"] or [],
        judges=values["judge"] or [],
        judge_base_urls=values["judge_base_url"] or [],
        concurrency=values["concurrency"],
        judge_prompt=values["judge_prompt"],
        judge_errors_as_unmet=values["judge_errors_as_unmet"],
        max_judge_error_rate=values["max_judge_error_rate"],
        shard=values["shard"],
        temperature=values["temperature"],
        max_tokens=values["max_tokens"],
        timeout_s=values["timeout"],
        max_retries=values["max_retries"],
        price_table=values["price_table"],
        batch=values["batch"],
        batch_models=values["batch_model"] or [],
        batch_file_out=values["batch_file_out"],
        batch_file_in=values["batch_file_in"] or [],
        reuse=values["reuse"] or [],
        options=options,
    )
    with _json_stdout(as_json) as emit:
        if dry_run:
            summary = plan_tasks(run_config, out_dir)
            if emit is not None:
                emit({"run_dir": str(out_dir), "dry_run": True, **summary})
            else:
                print_plan(summary)
            return
        with _on_failure(emit, out_dir, "run"):
            results = run_tasks(run_config, out_dir, wait=wait)
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


def _with_config_file(ctx: typer.Context, config: Path | None) -> dict[str, Any]:
    """The run's flag values: those given on the command line, else the --config file's, else
    the flags' defaults (keys: the parameter names, which are the file's keys). A declared
    option flag (`cases`) given by the file only is kept in ctx.meta as if given here, marked
    as the file's."""
    values = dict(ctx.params)
    if config is None:
        return values
    from clineval.config_file import read_run_file
    from clineval.option_flags import declared_flags

    given = {
        name
        for name in values
        if getattr(ctx.get_parameter_source(name), "name", "") == "COMMANDLINE"
    }
    flags = {name: flag.value is None for name, (_, _, flag) in declared_flags().items()}
    from_line = ctx.meta.setdefault(_DECLARED_FLAGS, {})
    from_file = ctx.meta.setdefault(_FILE_FLAGS, {})
    for key, value in read_run_file(config, flags).items():
        if key in flags and key not in values:
            if key not in from_line:
                from_file[key] = value
        elif key not in given:
            values[key] = value
    return values


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


@contextlib.contextmanager
def _json_stdout(enabled: bool) -> Iterator[Callable[[Any], None] | None]:
    """With --json, stdout carries one JSON document and nothing else: whatever the command
    prints meanwhile (tables, notes) goes to stderr. Yields the writer of that document."""
    if not enabled:
        yield None
        return
    out = sys.stdout

    def emit(payload: Any) -> None:
        out.write(json_text(payload))
        out.flush()

    with contextlib.redirect_stdout(sys.stderr):
        yield emit


@contextlib.contextmanager
def _results_shown_on_failure(run_dir: Path, command: str) -> Iterator[None]:
    """A task failed a bound after its results were written (exit 1): the end of the run is
    printed as on success, then the error line says what failed."""
    from clineval.run_record import read_run_files
    from clineval.runner import TaskFailures

    try:
        yield
    except TaskFailures:
        with contextlib.suppress(InputError, OSError):
            results = read_run_files(run_dir, with_samples=False).results
            print_results(results, run_dir, command=command)
        raise


def _results_payload(run_dir: Path, results: dict[str, Any], error: str | None) -> dict[str, Any]:
    """The --json document of run and score: the run directory, its status and its results."""
    return {
        "run_dir": str(run_dir),
        "status": "done" if error is None else "failed",
        "error": error,
        "results": results,
    }


@contextlib.contextmanager
def _on_failure(emit: Callable[[Any], None] | None, run_dir: Path, command: str) -> Iterator[None]:
    """A run or score whose results were written but that failed a bound (exit 1) still shows
    those results: under --json as the document on stdout, with status "failed" and the
    reason; else as the end of a run is shown."""
    if emit is None:
        with _results_shown_on_failure(run_dir, command):
            yield
        return
    from clineval.runner import TaskFailures

    try:
        yield
    except TaskFailures as exc:
        from clineval.run_record import read_manifest, read_results

        results = read_results(run_dir, read_manifest(run_dir))
        emit(_results_payload(run_dir, results, redact(str(exc))))
        raise


@app.command(
    epilog="Examples:\n  clineval score runs/cc --judge-errors-as-unmet\n"
    "  clineval score runs/cc --option clinconsensus.k=10 --json"
)
def score(
    run_dir: Annotated[
        Path, typer.Argument(metavar="RUN_DIR", help="A run directory.", parser=path_value)
    ],
    data_dir: Annotated[
        str | None,
        typer.Option(
            "--data-dir",
            metavar="DIR",
            help="Data root, if it has moved since the run.",
            parser=path_text,
        ),
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Replace results even when the store holds fewer outputs than they came "
            "from, or when the new results would lose their primary figure.",
        ),
    ] = False,
    judge_errors_as_unmet: Annotated[
        bool | None,
        typer.Option(
            "--judge-errors-as-unmet/--judge-errors-left-out",
            help="Count criteria without a verdict as not met (or leave them out).",
        ),
    ] = None,
    max_judge_error_rate: Annotated[
        float | None,
        typer.Option(
            "--max-judge-error-rate",
            parser=decimal_number,
            metavar="RATE",
            help="Above this share of judge errors the command exits 1 (results are written).",
        ),
    ] = None,
    option: Annotated[
        list[str] | None,
        typer.Option(
            "--option",
            metavar="KEY=VALUE",
            help="A scoring-only option of a task's benchmark (clineval tasks --options).",
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the results as JSON on stdout, nothing else.")
    ] = False,
) -> None:
    """Recompute results.json from a run's store, without calling any model.

    Scoring-only settings (--judge-errors-as-unmet, --max-judge-error-rate, --option KEY=VALUE
    of a scoring option) may be changed."""
    from clineval.options import split_option_items
    from clineval.runner import score as score_run

    settings: dict[str, Any] = {}
    if judge_errors_as_unmet is not None:
        settings["judge_errors_as_unmet"] = judge_errors_as_unmet
    if max_judge_error_rate is not None:
        settings["max_judge_error_rate"] = max_judge_error_rate
    options = split_option_items(option or [])
    with _json_stdout(as_json) as emit:
        with _on_failure(emit, run_dir, "score"):
            results = score_run(
                run_dir, data_dir=data_dir, force=force, settings=settings, options=options
            )
        if emit is not None:
            emit(_results_payload(run_dir, results, None))
            return
    print_results(results, run_dir, command="score")


@app.command(epilog="Example:\n  clineval report runs/tfidf -o tfidf.html")
def report(
    run_dir: Annotated[
        Path, typer.Argument(metavar="RUN_DIR", help="A run directory.", parser=path_value)
    ],
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            metavar="FILE",
            help="HTML file to write (default: RUN_DIR/report.html).",
            parser=path_value,
        ),
    ] = None,
    reference: Annotated[
        list[Path] | None,
        typer.Option(
            "--reference",
            metavar="FILE",
            help="JSON file of published figures to show beside the run's own (repeatable); "
            "format in docs/command-line.md",
            parser=path_value,
        ),
    ] = None,
) -> None:
    """Write a self-contained HTML report of a run."""
    from clineval.report.html import write_report

    path = write_report(run_dir, output or run_dir / "report.html", reference_files=reference)
    stdout.print(f"report: {path}")


CompareFormat = Literal["table", "markdown", "csv", "html", "json"]


@app.command(
    epilog="Examples:\n  clineval compare runs/a runs/b\n"
    "  clineval compare runs/* --format markdown -o leaderboard.md\n"
    "  clineval compare runs/a runs/b --json | jq '.leaderboard'"
)
def compare(
    run_dirs: Annotated[
        list[Path],
        typer.Argument(metavar="RUN_DIR", help="Run directories to compare.", parser=path_value),
    ],
    fmt: Annotated[
        CompareFormat,
        typer.Option("--format", help="How to print or write the comparison."),
    ] = "table",
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            metavar="FILE",
            help="Write to FILE instead of stdout (html: default compare.html).",
            parser=path_value,
        ),
    ] = None,
    seed: Annotated[
        int,
        typer.Option(
            "--seed", parser=whole_number, metavar="N", help="Seed of the paired bootstrap."
        ),
    ] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="The same as --format json.")] = False,
    resamples: Annotated[
        int | None,
        typer.Option(
            "--resamples",
            parser=whole_number,
            metavar="N",
            help="Bootstrap resamples of each paired test (default: as many as the number "
            "of pairs and the p-values' closeness to 0.05 need).",
        ),
    ] = None,
) -> None:
    """A leaderboard across runs, with paired bootstrap tests on shared samples."""
    from clineval.report.compare import compare_runs

    if as_json and fmt not in ("table", "json"):
        raise InputError(f"--json: --format {fmt} asks for another format")
    # the json document is all compare prints on stdout (its progress is on stderr)
    compare_runs(
        run_dirs,
        fmt="json" if as_json else fmt,
        output=output,
        seed=seed,
        console=stdout,
        resamples=resamples,
    )


@app.command()
def merge(
    run_dirs: Annotated[
        list[Path],
        typer.Argument(metavar="RUN_DIR", help="The shards' run directories.", parser=path_value),
    ],
    output_dir: Annotated[
        Path,
        typer.Option(
            "--output-dir",
            "-o",
            metavar="DIR",
            help="Run directory of the merged run.",
            parser=path_value,
        ),
    ],
) -> None:
    """Join the run directories of --shard I/N runs into one result."""
    from clineval.merge import merge_runs

    print_results(merge_runs(run_dirs, output_dir), output_dir, command="merge")


def _complete_export_formats(incomplete: str) -> list[str]:
    from clineval.export import formats

    return [name for name in formats() if name.startswith(incomplete)]


@app.command("export")
def export(
    run_dir: Annotated[
        Path, typer.Argument(metavar="RUN_DIR", help="A run directory.", parser=path_value)
    ],
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            metavar="FORMAT",
            help="samples-csv, or a format a benchmark declares (a wrong name lists them).",
            autocompletion=_complete_export_formats,
        ),
    ],
    output: Annotated[
        Path,
        typer.Option(
            "--output-dir", "-o", metavar="DIR", help="Directory to write into.", parser=path_value
        ),
    ],
    name: Annotated[
        str | None,
        typer.Option(
            "--name",
            metavar="NAME",
            help="Model name of <name>_judge.json (default: the candidate).",
        ),
    ] = None,
    cases: Annotated[
        str | None,
        typer.Option(
            "--cases",
            metavar="FILE",
            help="The run's cases file, if it has moved.",
            parser=path_text,
        ),
    ] = None,
) -> None:
    """Write a run's outputs in another tool's format.

    For example the official ClinConsensus judgements file that the authors' eval_cacs.py
    scores."""
    from clineval.export import export_run

    for path in export_run(run_dir, fmt, output, name=name, cases=cases):
        stdout.print(f"wrote {path}")


@app.command("judge-agreement")
def judge_agreement(
    run_dir: Annotated[
        Path, typer.Argument(metavar="RUN_DIR", help="A run directory.", parser=path_value)
    ],
    labels: Annotated[
        Path,
        typer.Option(
            "--labels", metavar="FILE", help="JSONL of human verdicts.", parser=path_value
        ),
    ],
    task: Annotated[
        str | None,
        typer.Option("--task", metavar="TASK", help="The judged task, when the run holds several."),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the figures as JSON on stdout, nothing else.")
    ] = False,
) -> None:
    """Compare a run's stored judge verdicts with human labels (any judged task).

    Per judge: Cohen's kappa against the raters' strict majority, Krippendorff's alpha with
    the judge as one more rater, HealthBench's pooled balanced F1 (true/false labels), ICC(2,1)
    (scores); per rater the same figures against the other raters. Labels: JSON Lines
    {"id", "criterion", "rater", "label": true/false or a number}."""
    from clineval.judge_agreement import OUTPUT, judge_agreement_report
    from clineval.judge_agreement import judge_agreement as agreement

    if not as_json:
        judge_agreement_report(run_dir, labels, console=stdout, task=task)
        return
    with _json_stdout(as_json) as emit:
        result = agreement(run_dir, labels, task)
        if "not_written" in result:
            print(f"note: {OUTPUT} not written: {result['not_written']}", file=sys.stderr)
        if emit is not None:
            emit(result)


@app.command(
    "config",
    epilog="Example:\n  clineval config runs/tfidf > run.toml\n"
    "  clineval run --config run.toml -o runs/tfidf-again",
)
def config_command(
    run_dir: Annotated[
        Path, typer.Argument(metavar="RUN_DIR", help="A run directory.", parser=path_value)
    ],
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            metavar="FILE",
            help="Write to FILE instead of stdout.",
            parser=path_value,
        ),
    ] = None,
) -> None:
    """Print a run's settings as a TOML file for clineval run --config (secrets left out).

    clineval run --config FILE reproduces the run; flags given with it override the file (e.g.
    -o NEW_DIR to run it again elsewhere)."""
    from clineval.config_file import run_file_text
    from clineval.option_flags import config_from_manifest
    from clineval.run_record import read_manifest
    from clineval.rundir import MANIFEST, atomic_write_text

    manifest = read_manifest(run_dir)
    config = config_from_manifest(manifest.config, str(run_dir / MANIFEST))
    text = run_file_text(manifest, config, run_dir)
    if output is None:
        sys.stdout.write(text)
    else:
        atomic_write_text(output, text)
        print(f"wrote {output}", file=sys.stderr)


@app.command(
    "head-to-head",
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    epilog="Example:\n  clineval head-to-head runs/a runs/b --judge openai:judge -o runs/a-vs-b",
)
def head_to_head(
    args: Annotated[list[str] | None, typer.Argument(metavar="RUN_DIR... [RUN FLAGS]")] = None,
) -> int:
    """Judge finished runs of one task against each other, as a run of its own.

    RUN_DIR RUN_DIR [RUN_DIR...] --judge SPEC -o OUT_DIR [--task TASK] [--judge-prompt FILE]
    [--option ...] [--json], and any other `run` flag: each pair of runs judged in both
    orders, with no candidate call (docs/judging.md)."""
    from clineval.cli_head_to_head import head_to_head_argv

    argv, scratch = head_to_head_argv(args or [])
    with scratch:
        return _main(argv)


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


INTERRUPTED = 130  # the shell's code for a process stopped by SIGINT
TERMINATED = 143  # ... and by SIGTERM (128 + 15)
# What a stopped command leaves behind and what to do, by command: only a run has model
# calls in a run store to resume from.
_AFTER_STOP = {
    ("run",): "every model call that finished is in the run store; "
    "run the same command again to resume",
    ("merge",): "the shards are unchanged; run the same command again to finish the merge",
    ("score",): "the results already written are unchanged; run the same command again",
    ("data", "fetch"): "every file in the cache passed its check (partial downloads are "
    "removed); run the same command again to fetch the rest",
}
_DEFAULT_AFTER_STOP = "files are written whole or not at all; run the same command again"


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C would be, so that it stops a run the same way: the runner
    writes "stopped" into the manifest, asyncio cancels calls in flight, stored calls stay."""


def _raise_terminated(signum: int, frame: object) -> None:
    # Remembered apart from the exception: typer turns a KeyboardInterrupt into Exit(130) and
    # asyncio may re-raise a plain one, so the type alone does not survive to main().
    _state["terminated"] = True
    raise Terminated()


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM raises Terminated while the command runs (restored after: tests call main)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


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

        completion_init()


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
    for sub in getattr(command, "commands", {}).values():
        _help_as_written(sub)


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


def _stopped(terminated: bool, args: list[str]) -> int:
    # plain print: a rich Console wraps at 80 columns when stderr is not a terminal
    why = "terminated by SIGTERM" if terminated else "interrupted"
    words = _command_words(args)
    after = next(
        (text for command, text in _AFTER_STOP.items() if words[: len(command)] == command),
        _DEFAULT_AFTER_STOP,
    )
    print(f"aborted ({why}): {after}", file=sys.stderr)
    return TERMINATED if terminated else INTERRUPTED


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    _state["terminated"] = False
    with _masked_console():
        try:
            with _sigterm_as_interrupt():
                return _main(args)
        except KeyboardInterrupt:  # Ctrl-C, or SIGTERM (Terminated)
            return _stopped(terminated=_state["terminated"], args=args)


@contextlib.contextmanager
def _masked_console() -> Iterator[None]:
    """stdout and stderr through secrets.MaskedStream while the command runs: whatever prints
    a line (rich, logging, print) prints no credential the run knows."""
    register_environment()  # the environment's keys, known before anything is printed
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = MaskedStream(saved[0]), MaskedStream(saved[1])
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


def _run_needs_plugins(args: list[str]) -> bool:
    """Whether `clineval run` with `args` may need a plugin's benchmark: unless its tasks are
    all built-in and every flag is one of clineval's or a built-in benchmark's (read as click
    reads them, on a copy of the command), or when it asks for help or reads a --config
    file (whose tasks and keys are not read yet)."""
    from clineval.benchmarks.registry import builtin_task_names, defer_plugins

    words = args[args.index("run") + 1 :]
    if any(w in ("--help", "-h") or w.split("=", 1)[0] == "--config" for w in words):
        return True
    defer_plugins(True)
    probe = getattr(typer.main.get_command(app), "commands", {})["run"]
    add_declared_flags(probe)  # the built-in benchmarks' flags
    try:
        parsed = probe.make_context(
            "run", words, resilient_parsing=True, ignore_unknown_options=True,
            allow_extra_args=True,
        )  # fmt: skip
    except Exception:  # whatever the parse says, the real one says it again
        return True
    tasks = parsed.params.get("tasks") or []
    return bool(parsed.args) or not tasks or not set(tasks) <= set(builtin_task_names())


def _main(args: list[str]) -> int:
    click = _click_module()
    try:
        # Without standalone mode click returns a `typer.Exit(code)` as the call's value.
        command = typer.main.get_command(app)
        from clineval.benchmarks.registry import defer_plugins

        is_run = _command_words(args or _completed_words())[:1] == ("run",)
        defer_plugins(is_run and bool(args) and not _run_needs_plugins(args))
        if is_run:  # the registry: `run` only
            add_declared_flags(getattr(command, "commands", {})["run"])
        _help_as_written(command)
        _enable_completion()
        result = command.main(args=args, standalone_mode=False, prog_name="clineval")
        if result == INTERRUPTED:  # typer's answer to Ctrl-C (KeyboardInterrupt) or SIGTERM
            raise KeyboardInterrupt
        if isinstance(result, int) and not isinstance(result, bool):
            return result
    except typer.Exit as exc:  # typer's public names: the right classes in every version
        return int(exc.exit_code)
    except typer.Abort:
        raise KeyboardInterrupt from None
    except click.ClickException as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":
            # `clineval` or `clineval data` alone: the help, as asked for, and success
            print(exc.format_message())
            return 0
        print(redact(_usage_error_line(exc)), file=sys.stderr)
        return 2
    except BatchFilesWritten as exc:
        # Not an error: the request files are the output the user asked for.
        print(f"stopped: {redact(str(exc))}", file=sys.stderr)
        return 0
    except InputError as exc:
        if _state["debug"]:
            print(redact(traceback.format_exc()), file=sys.stderr, end="")
        print(f"error: {redact(exc.one_line())}", file=sys.stderr)
        return 2
    except Exception as exc:
        from clineval.runner import TaskFailures

        if isinstance(exc, TaskFailures):
            print(f"error: {redact(str(exc))}", file=sys.stderr)
            return 1
        if _state["debug"]:
            print(redact(traceback.format_exc()), file=sys.stderr, end="")
        print(f"internal error: {type(exc).__name__}: {redact(str(exc))}", file=sys.stderr)
        return 1
    finally:
        from clineval.benchmarks.registry import defer_plugins

        defer_plugins(False)  # the next command or the Python API in this process: all plugins
    return 0


if __name__ == "__main__":
    sys.exit(main())
