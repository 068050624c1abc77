"""`clineval run`: its flags, the --config file and the benchmarks' declared flags."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from clineval.cli.app import _BATCH, _CONTROL, _DATA, _JUDGE, _MODEL, _OUTPUT, app
from clineval.cli.declared_flags import _DECLARED_FLAGS, _FILE_FLAGS, _with_declared_flags
from clineval.cli.results import _json_stdout, _on_failure, _results_payload
from clineval.cli_groups import (
    decimal_number,
    path_text,
    path_value,
    whole_number,
)
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
    from clineval.planner import plan as plan_tasks
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
