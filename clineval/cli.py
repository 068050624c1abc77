"""The `clineval` command. Exit codes: 0 success, 2 bad input, 1 internal error.

One thin typer function per command (its flags, then one call into the layer that does the
work), and the one place that turns errors into exit codes. The `data` and `skills` groups are
in clineval.cli_groups, what is printed in clineval.cli_output.

Long module: `run` alone declares every run flag as a typer parameter (~120 lines of
declarations, one per RunConfig field: tests/test_api.py holds them together).
"""

from __future__ import annotations

import contextlib
import logging
import signal
import sys
import threading
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from clineval.cli_groups import data_app, path_text, path_value, skills_app
from clineval.cli_output import print_plan, print_results, stdout
from clineval.errors import BatchFilesWritten, InputError
from clineval.secrets import MaskedStream, redact, register_environment

if TYPE_CHECKING:
    from clineval.benchmarks.base import DataFileStatus

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Evaluate models on Clinical NER (NCER), TCM-SD and ClinConsensus.",
)
app.add_typer(data_app, name="data")
app.add_typer(skills_app, name="skills")

_state = {"debug": False}


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


@app.command()
def run(
    tasks: Annotated[list[str], typer.Argument(help="Task names, see `clineval tasks`.")],
    output_dir: Annotated[Path, typer.Option("--output-dir", "-o", parser=path_value)],
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            "-m",
            help="backend:name[@base_url] (not needed with --verdicts: the file is the model)",
        ),
    ] = None,
    data_dir: Annotated[str | None, typer.Option("--data-dir", parser=path_text)] = None,
    limit: Annotated[int | None, typer.Option("--limit", help="First N samples only.")] = None,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    base_url: Annotated[list[str] | None, typer.Option("--base-url")] = None,
    judge: Annotated[list[str] | None, typer.Option("--judge")] = None,
    judge_base_url: Annotated[
        list[str] | None,
        typer.Option(
            "--judge-base-url",
            help="A judge's own replica: URL (one judge) or JUDGE=URL; repeat for a fleet.",
        ),
    ] = None,
    concurrency: Annotated[int, typer.Option("--concurrency")] = 16,
    cases: Annotated[str | None, typer.Option("--cases", parser=path_text)] = None,
    verdicts: Annotated[str | None, typer.Option("--verdicts", parser=path_text)] = None,
    judge_prompt: Annotated[str | None, typer.Option("--judge-prompt", parser=path_text)] = None,
    judge_errors_as_unmet: Annotated[bool, typer.Option("--judge-errors-as-unmet")] = False,
    max_judge_error_rate: Annotated[float, typer.Option("--max-judge-error-rate")] = 0.02,
    shard: Annotated[
        str | None,
        typer.Option(
            "--shard",
            help="I/N, or auto (auto/N) from a Slurm array or Kubernetes Indexed Job.",
        ),
    ] = None,
    dedupe: Annotated[bool, typer.Option("--dedupe")] = False,
    temperature: Annotated[float, typer.Option("--temperature")] = 0.0,
    max_tokens: Annotated[int | None, typer.Option("--max-tokens")] = None,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds per call.")] = 120.0,
    max_retries: Annotated[int, typer.Option("--max-retries")] = 5,
    price_table: Annotated[str | None, typer.Option("--price-table", parser=path_text)] = None,
    option: Annotated[
        list[str] | None, typer.Option("--option", help="Task option KEY=VALUE.")
    ] = None,
    batch: Annotated[
        bool,
        typer.Option("--batch", help="Send openai: models' calls through the Batch API."),
    ] = False,
    batch_model: Annotated[
        list[str] | None,
        typer.Option("--batch-model", help="Only this model's calls in batches (repeatable)."),
    ] = None,
    batch_file_out: Annotated[
        str | None,
        typer.Option(
            "--batch-file-out", help="Write batch request files here and stop.", parser=path_text
        ),
    ] = None,
    batch_file_in: Annotated[
        list[str] | None,
        typer.Option(
            "--batch-file-in",
            help="Batch output file (vllm run-batch) to import.",
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
        ),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run", help="Count and price the model calls the run would make; call none."
        ),
    ] = False,
    wait: Annotated[
        bool,
        typer.Option(
            "--wait", help="If another clineval process uses --output-dir, wait for it to end."
        ),
    ] = False,
) -> None:
    """Run TASK... with a model; rerun with the same --output-dir to resume."""
    from clineval.config import RunConfig
    from clineval.options import split_option_items
    from clineval.runner import plan as plan_tasks
    from clineval.runner import run as run_tasks

    if model is None:
        if verdicts is None:
            raise InputError(
                "clineval run: missing option '--model' / '-m' (or --verdicts FILE to score a "
                "verdicts file) (see 'clineval run --help')"
            )
        model = f"predictions:{verdicts}"  # the verdicts file stands in for the model
    config = RunConfig.checked(
        tasks=tasks,
        model=model,
        data_dir=data_dir,
        limit=limit,
        seed=seed,
        base_urls=base_url or [],
        judges=judge or [],
        judge_base_urls=judge_base_url or [],
        concurrency=concurrency,
        cases=cases,
        verdicts=verdicts,
        judge_prompt=judge_prompt,
        judge_errors_as_unmet=judge_errors_as_unmet,
        max_judge_error_rate=max_judge_error_rate,
        shard=shard,
        dedupe=dedupe,
        temperature=temperature,
        max_tokens=max_tokens,
        timeout_s=timeout,
        max_retries=max_retries,
        price_table=price_table,
        batch=batch,
        batch_models=batch_model or [],
        batch_file_out=batch_file_out,
        batch_file_in=batch_file_in or [],
        reuse=reuse or [],
        options=split_option_items(option or []),
    )
    if dry_run:
        print_plan(plan_tasks(config, output_dir))
        return
    with _results_shown_on_failure(output_dir, "run"):
        results = run_tasks(config, output_dir, wait=wait)
    print_results(results, output_dir)


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


@app.command()
def score(
    run_dir: Annotated[Path, typer.Argument(parser=path_value)],
    data_dir: Annotated[str | None, typer.Option("--data-dir", parser=path_text)] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Replace results even when the store holds fewer outputs than they came from.",
        ),
    ] = False,
    judge_errors_as_unmet: Annotated[
        bool | None,
        typer.Option(
            "--judge-errors-as-unmet/--judge-errors-left-out",
            help="ClinConsensus: count criteria without a verdict as not met (or leave them out).",
        ),
    ] = None,
    max_judge_error_rate: Annotated[
        float | None, typer.Option("--max-judge-error-rate", help="ClinConsensus bound.")
    ] = None,
    option: Annotated[
        list[str] | None,
        typer.Option("--option", help="KEY=VALUE of a scoring-only option (clinconsensus.k, ...)."),
    ] = None,
) -> None:
    """Recompute results.json from a run's store, without calling any model; scoring-only
    settings (--judge-errors-as-unmet, --max-judge-error-rate, --option KEY=VALUE of a scoring
    option) may be changed."""
    from clineval.options import split_option_items
    from clineval.runner import score as score_run

    settings: dict[str, Any] = {}
    if judge_errors_as_unmet is not None:
        settings["judge_errors_as_unmet"] = judge_errors_as_unmet
    if max_judge_error_rate is not None:
        settings["max_judge_error_rate"] = max_judge_error_rate
    options = split_option_items(option or [])
    with _results_shown_on_failure(run_dir, "score"):
        results = score_run(
            run_dir, data_dir=data_dir, force=force, settings=settings, options=options
        )
    print_results(results, run_dir, command="score")


@app.command()
def report(
    run_dir: Annotated[Path, typer.Argument(parser=path_value)],
    output: Annotated[Path | None, typer.Option("-o", "--output", parser=path_value)] = None,
    reference: Annotated[
        list[Path] | None,
        typer.Option(
            "--reference",
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


@app.command()
def compare(
    run_dirs: Annotated[list[Path], typer.Argument(parser=path_value)],
    fmt: Annotated[str, typer.Option("--format", help="table|markdown|csv|html")] = "table",
    output: Annotated[Path | None, typer.Option("-o", "--output", parser=path_value)] = None,
    seed: Annotated[int, typer.Option("--seed")] = 0,
) -> None:
    """A leaderboard across runs, with paired bootstrap tests on shared samples."""
    from clineval.report.compare import compare_runs

    compare_runs(run_dirs, fmt=fmt, output=output, seed=seed, console=stdout)


@app.command()
def merge(
    run_dirs: Annotated[list[Path], typer.Argument(parser=path_value)],
    output_dir: Annotated[Path, typer.Option("--output-dir", "-o", parser=path_value)],
) -> None:
    """Join the run directories of --shard I/N runs into one result."""
    from clineval.merge import merge_runs

    print_results(merge_runs(run_dirs, output_dir), output_dir, command="merge")


@app.command("export")
def export(
    run_dir: Annotated[Path, typer.Argument(parser=path_value)],
    fmt: Annotated[str, typer.Option("--format", help="clinconsensus-judgements | samples-csv")],
    output: Annotated[
        Path, typer.Option("-o", "--output-dir", help="Directory to write into.", parser=path_value)
    ],
    name: Annotated[
        str | None,
        typer.Option("--name", help="Model name of <name>_judge.json (default: the candidate)."),
    ] = None,
    cases: Annotated[
        str | None,
        typer.Option("--cases", help="The run's cases file, if it has moved.", parser=path_text),
    ] = None,
) -> None:
    """Write a run's outputs in another tool's format (e.g. the official ClinConsensus
    judgements file that the authors' eval_cacs.py scores)."""
    from clineval.export import export_run

    for path in export_run(run_dir, fmt, output, name=name, cases=cases):
        stdout.print(f"wrote {path}")


@app.command("judge-agreement")
def judge_agreement(
    run_dir: Annotated[Path, typer.Argument(parser=path_value)],
    labels: Annotated[
        Path, typer.Option("--labels", help="JSONL of human verdicts.", parser=path_value)
    ],
    task: Annotated[
        str | None,
        typer.Option("--task", help="The judged task, when the run holds several."),
    ] = None,
) -> None:
    """Compare a run's stored judge verdicts with human labels (any judged task)."""
    from clineval.judge_agreement import judge_agreement_report

    judge_agreement_report(run_dir, labels, console=stdout, task=task)


@app.command("tasks")
def list_tasks(
    data_dir: Annotated[str | None, typer.Option("--data-dir", parser=path_text)] = None,
    show_options: Annotated[
        bool, typer.Option("--options", help="List every --option KEY with its default.")
    ] = False,
) -> None:
    """List tasks, their data status and metrics (or, with --options, every option key)."""
    from clineval.benchmarks.registry import (
        PluginError,
        benchmark_of,
        get_task,
        option_groups,
        task_names,
    )
    from clineval.datapaths import default_cache_dir, resolve_data_root

    if show_options:
        for group in option_groups():
            options = Table(show_header=True, title=f"--option KEY=VALUE of {group.applies_to}")
            # a key is copied as a whole into --option: never folded over two lines
            options.add_column("key", no_wrap=True)
            for col in ("default", "models", "what it sets"):
                options.add_column(col, overflow="fold")
            for option in group.options:
                default = "-" if option.default is None else option.default
                models = group.models_text(option)
                options.add_row(group.key(option), default, models, option.help)
            stdout.print(options)
        return

    root = resolve_data_root(data_dir)
    table = Table(show_header=True)
    for col in ("task", "description", "data", "metrics"):
        table.add_column(col)
    for name in task_names():
        try:  # a plugin whose task cannot be made costs its row, not the listing
            task = get_task(name)
            statuses = task.data_status(root)
        except PluginError as exc:
            print(f"warning: {redact(exc.one_line())}; skipped", file=sys.stderr)
            continue
        data = _data_cell(statuses)
        bench = benchmark_of(name)
        metrics = ", ".join(bench.metrics.ranked_keys) if bench is not None else ""
        table.add_row(name, task.description, data, metrics)
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


def _usage_error_line(exc: Exception) -> str:
    """One line for a command-line usage error: what is wrong and where to find the usage."""
    ctx = getattr(exc, "ctx", None)
    command = getattr(ctx, "command_path", None) or "clineval"
    format_message = getattr(exc, "format_message", None)
    message = format_message() if callable(format_message) else str(exc)
    message = " ".join(str(message).split())
    return f"error: {command}: {message} (see '{command} --help')"


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
    sys.stdout, sys.stderr = MaskedStream(saved[0]), MaskedStream(saved[1])  # type: ignore[assignment]
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


def _main(args: list[str]) -> int:
    click = _click_module()
    try:
        # Without standalone mode click returns a `typer.Exit(code)` as the call's value.
        result = app(args=args, standalone_mode=False, prog_name="clineval")
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
