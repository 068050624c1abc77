"""The Python surface of clineval (`import clineval`): run, score, report and compare from a
notebook or a script, through the same code the command line uses.

Every function here builds what the matching `clineval` command builds and calls the same
function after it (`RunConfig.checked` then `clineval.runner.run` for `clineval run`, ...), so
a run made here and one made on the command line write the same run directory: store, resume,
manifest, results.json, samples.jsonl. Bad input is raised as `clineval.InputError` (the
message the command line prints after `error:`); nothing here exits the interpreter.

This module is imported on first use of one of its names (see clineval/__init__.py), and it
imports the heavy parts of clineval (pydantic, numpy, rich, ...) only inside its functions.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypedDict, Unpack, get_origin

from clineval.api_arguments import PathLike, checked_arguments
from clineval.errors import InputError
from clineval.messages import clip
from clineval.report.compare.api import compare
from clineval.report.compare.model import Comparison, LeaderboardCell, PairedTest
from clineval.run_result import RunResult, TaskMetrics

__all__ = [
    "Comparison",
    "LeaderboardCell",
    "PairedTest",
    "RunFailed",
    "RunResult",
    "RunSettings",
    "TaskMetrics",
    "compare",
    "dry_run",
    "run",
    "score",
    "write_report",
]


class RunSettings(TypedDict, total=False):
    """The settings of `run` and `dry_run` beside tasks, model and output_dir, as a type
    checker and an editor see them: one for each RunConfig field (the declaration of the run
    settings, clineval.settings), with the types a Python caller may give, by one rule: a
    path setting also takes an os.PathLike, a list setting also one value. At run time the
    keywords are RunConfig's, checked as the command line's are, so a bad one is an
    InputError naming its flag. This list is the one the declaration cannot give (a type
    checker reads no TypedDict off a model's fields; docs/architecture.md, "Run settings and
    the API's keywords"): tests/test_api.py fails when a key or its type strays from the
    field's by the rule."""

    data_dir: PathLike | None
    limit: int | None
    seed: int
    base_urls: str | Sequence[str]
    judges: str | Sequence[str]
    judge_base_urls: str | Sequence[str]
    concurrency: int
    judge_prompt: PathLike | None
    judge_errors_as_unmet: bool
    max_judge_error_rate: float
    shard: str | None
    temperature: float
    max_tokens: int | None
    timeout_s: float
    max_retries: int
    price_table: PathLike | None
    batch: bool
    batch_models: str | Sequence[str]
    batch_file_out: PathLike | None
    batch_file_in: PathLike | Sequence[PathLike]
    reuse: PathLike | Sequence[PathLike]
    # {"KEY": "VALUE"} (numbers as the command line would take them) or ["KEY=VALUE"]; a
    # benchmark's option with a flag of its own may be given by the flag's name as well, as a
    # keyword beside these (cases=PATH for clinconsensus.cases, dedupe=True): one of the two
    options: Mapping[str, str | int | float] | Sequence[str] | str


class RunFailed(Exception):
    """A run wrote its results, but a task failed a bound (judge-error rate, missing
    predictions, failed candidate calls): what `clineval run` reports with exit code 1.
    `result` is the run as written; `reasons` says what failed."""

    def __init__(self, message: str, result: RunResult) -> None:
        super().__init__(message)
        self.result = result
        self.reasons = message


def _option_items(options: Mapping[str, Any] | Iterable[str] | None) -> dict[str, str]:
    """`options` as {KEY: VALUE}: a mapping (numbers are written as the command line would
    take them) or `KEY=VALUE` strings as after --option."""
    from clineval.options import split_option_items

    if options is None:
        return {}
    if isinstance(options, str):
        return split_option_items([options])
    if isinstance(options, Mapping):
        out = {}
        for key, value in options.items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                value = str(value)
            if not isinstance(value, str):
                raise InputError(f"--option {key}: the value must be a string or a number")
            out[str(key)] = value
        return out
    if not isinstance(options, Iterable) or not all(isinstance(i, str) for i in options):
        raise InputError(
            f"clineval.run: options={clip(options)} is not a mapping or KEY=VALUE strings"
        )
    return split_option_items(options)


def _as_list(value: Any) -> Any:
    """One string as a list of one; any other iterable as a list; anything else as it is,
    for RunConfig to refuse naming its setting."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return list(value) if isinstance(value, Iterable) and not isinstance(value, Mapping) else value


def _config(tasks: str | Sequence[str], model: str | None, settings: dict[str, Any]) -> Any:
    """The RunConfig `clineval run` would build from the same settings (RunConfig field
    names: data_dir, limit, seed, base_urls, judges, timeout_s, options, ...)."""
    from clineval.config import RunConfig, declared_settings
    from clineval.option_flags import (
        declared_flags,
        model_from_options,
        stand_in_spelling,
        stand_ins,
        with_flags,
    )

    for name, setting in declared_settings().items():
        if name not in settings:
            continue
        value = settings[name]
        if get_origin(RunConfig.model_fields[name].annotation) is list:  # one or several
            single = setting.path and isinstance(value, os.PathLike)
            value = _as_list(os.fspath(value) if single else value)
            if setting.path and isinstance(value, list):
                value = [os.fspath(v) if isinstance(v, os.PathLike) else v for v in value]
        elif setting.path and isinstance(value, os.PathLike):
            value = os.fspath(value)
        settings[name] = value
    if "options" in settings:
        settings["options"] = _option_items(settings["options"])
    flags = declared_flags()
    given = {name: settings.pop(name) for name in list(settings) if name in flags}
    if given:  # cases=PATH: the option whose flag is --cases (empty: refused naming the flag)
        settings["options"] = with_flags(settings.get("options") or {}, given)
    if model is None:  # as on the command line: a file standing in for the model is it
        model = model_from_options(settings.get("options") or {})
    if model is None:
        spellings = [stand_in_spelling(g, o, api=True) for g, o in stand_ins()]
        alternative = f" (or {' / '.join(spellings)}, which stands in for it)" if spellings else ""
        raise InputError(f"clineval.run: model= is missing{alternative}")
    # strict: a Python caller's True is not a limit of 1, nor "3" a seed
    return RunConfig.checked(strict=True, tasks=_as_list(tasks), model=model, **settings)


@checked_arguments
def run(
    tasks: str | Sequence[str],
    *,
    output_dir: PathLike,
    model: str | None = None,
    wait: bool = False,
    **settings: Unpack[RunSettings],
) -> RunResult:
    """Run (or resume) `tasks` with `model` into `output_dir`, as `clineval run` does, and
    return the run. The settings are `RunSettings` (one per `clineval run` flag: limit=,
    seed=, judges=, options={"KEY": "VALUE"}, ...). `wait=True` waits for another process
    using output_dir (--wait).

    Raises InputError for bad input, and RunFailed when results were written but a task
    failed a bound (exit code 1 on the command line).
    """
    from clineval.runner import TaskFailures, run as run_tasks

    config = _config(tasks, model, dict(settings))
    path = Path(output_dir)
    try:
        # runner.run checks the output directory and the whole config before it takes the
        # lock, exactly as for `clineval run`
        run_tasks(config, path, wait=wait)
    except TaskFailures as exc:
        raise RunFailed(str(exc), RunResult.load(path)) from None
    return RunResult.load(path)


@checked_arguments
def dry_run(
    tasks: str | Sequence[str],
    *,
    output_dir: PathLike,
    model: str | None = None,
    **settings: Unpack[RunSettings],
) -> dict[str, Any]:
    """What `clineval run --dry-run` prints, as data: per task, role and model the calls
    still to send, the ones stored, estimated prompt tokens, the completion-token ceiling and
    a cost range (with price_table=). Calls no model and writes nothing."""
    from clineval.planner import plan

    return plan(_config(tasks, model, dict(settings)), Path(output_dir))


@checked_arguments
def score(
    run_dir: PathLike,
    *,
    data_dir: PathLike | None = None,
    force: bool = False,
    judge_errors_as_unmet: bool | None = None,
    max_judge_error_rate: float | None = None,
    options: Mapping[str, str | int | float] | Sequence[str] | str | None = None,
) -> RunResult:
    """Recompute results.json from the run store, calling no model (`clineval score`). The
    scoring-only settings may be changed as on the command line: `judge_errors_as_unmet`,
    `max_judge_error_rate`, and `options` of scoring-only keys (clinconsensus.k, ...); the
    manifest then records them."""
    from clineval.rescore import score as score_run
    from clineval.runner import TaskFailures

    path = Path(run_dir)
    settings: dict[str, Any] = {}
    if judge_errors_as_unmet is not None:
        settings["judge_errors_as_unmet"] = judge_errors_as_unmet
    if max_judge_error_rate is not None:
        settings["max_judge_error_rate"] = max_judge_error_rate
    try:
        score_run(
            path,
            data_dir=None if data_dir is None else os.fspath(data_dir),
            force=force,
            settings=settings,
            options=_option_items(options),
        )
    except TaskFailures as exc:
        raise RunFailed(str(exc), RunResult.load(path)) from None
    return RunResult.load(path)


@checked_arguments
def write_report(
    run_dir: PathLike, output: PathLike | None = None, references: list[PathLike] | None = None
) -> Path:
    """Write the run's self-contained HTML report (`clineval report`); default
    RUN_DIR/report.html, with the published figures of each `references` file (`--reference`)
    beside the run's own. Returns its path. (Not called `report`: that name is the
    clineval.report package.)"""
    from clineval.report.html import write_report as write_html

    path = Path(run_dir)
    out = Path(output) if output is not None else path / "report.html"
    return write_html(path, out, reference_files=[Path(p) for p in references or []])
