"""The commands that read a run directory: score, report, compare, merge, export,
judge-agreement, config."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from clineval.cli.app import app
from clineval.cli.results import _json_stdout, _on_failure, _results_payload
from clineval.cli_groups import (
    decimal_number,
    path_text,
    path_value,
    whole_number,
)
from clineval.cli_output import print_results, stdout
from clineval.errors import InputError

# The one positional argument of score, report, export, judge-agreement and config.
RunDir = Annotated[
    Path, typer.Argument(metavar="RUN_DIR", help="A run directory.", parser=path_value)
]


def output_file(help_text: str) -> Any:
    """`--output/-o FILE`, the file a command writes (each command says what goes in it)."""
    return typer.Option("--output", "-o", metavar="FILE", help=help_text, parser=path_value)


@app.command(
    epilog="Examples:\n  clineval score runs/cc --judge-errors-as-unmet\n"
    "  clineval score runs/cc --option clinconsensus.k=10 --json"
)
def score(
    run_dir: RunDir,
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
    from clineval.rescore import score as score_run

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
    run_dir: RunDir,
    output: Annotated[
        Path | None,
        output_file("HTML file to write (default: RUN_DIR/report.html)."),
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
        output_file("Write to FILE instead of stdout (html: default compare.html)."),
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
    from clineval.report.compare.command import compare_runs

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
    run_dir: RunDir,
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
    run_dir: RunDir,
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
    from clineval.judge_agreement import (
        OUTPUT,
        judge_agreement as agreement,
        judge_agreement_report,
    )

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
    run_dir: RunDir,
    output: Annotated[
        Path | None,
        output_file("Write to FILE instead of stdout."),
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
