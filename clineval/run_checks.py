"""Checks of a whole run's input that need more than one setting: run before anything is
loaded, started or written (so a refused command leaves no trace in its run directory)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

from clineval.config import RunConfig
from clineval.errors import InputError
from clineval.options import check_options


def check_run_config(config: RunConfig) -> None:
    """Known tasks, declared `--option` keys with valid values, a readable price table, and
    the files that the model, judges, --verdicts and --judge-prompt name (clineval.run_inputs:
    a task opens some of them only when it predicts, long after the run directory exists)."""
    from clineval.benchmarks.registry import active_namespaces, get_task, option_groups
    from clineval.models.usage import load_price_table
    from clineval.run_inputs import check_run_inputs

    for name in config.tasks:
        get_task(name)
    check_options(config.options, option_groups(), active_namespaces(config.tasks))
    _check_model_fits_tasks(config)
    if config.price_table is not None:
        load_price_table(config.price_table)
    check_run_inputs(config)
    if config.batch_file_out is not None:  # a directory the run writes request files into
        check_output_dir(Path(config.batch_file_out), "--batch-file-out")


def _check_model_fits_tasks(config: RunConfig) -> None:
    """Each task's benchmark declares the model capabilities it can use: a run of a task with
    a model it cannot use would fail only once that task predicts, after its run directory
    was written. (`hf:PATH` is chat or checkpoint by its config.json: checked when loaded.)"""
    from clineval.benchmarks.registry import benchmark_of
    from clineval.models.backends import static_kind
    from clineval.models.spec import ModelSpec

    for judge in config.judges:
        kind = static_kind(ModelSpec.parse(judge))
        if kind is not None and kind != "chat":
            raise InputError(f"--judge {judge}: a {kind} model cannot judge; use a chat model")
    if config.verdicts is not None:
        return  # the verdicts file stands in for the model's answers and the judge
    spec = ModelSpec.parse(config.model)
    kind = static_kind(spec)
    if kind is None:
        return
    refused = []
    for name in config.tasks:
        bench = benchmark_of(name)
        if bench is not None and kind not in bench.capabilities:
            refused.append(name)
    if refused:
        raise InputError(
            f"--model {spec.label} is a {kind} model, which {', '.join(refused)} cannot use"
        )


def check_output_dir(path: Path, flag: str = "--output-dir") -> None:
    """`path` is a directory, or can become one: not a file, not a symlink loop, and its
    nearest existing ancestor is a directory."""
    try:
        os.stat(path)
    except FileNotFoundError:
        if path.is_symlink():
            raise InputError(f"{flag} is a symlink to nothing", path=path) from None
        _check_creatable(path, flag)
        return
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InputError(f"{flag} is a symlink loop", path=path) from None
        if exc.errno == errno.ENOTDIR:
            raise InputError(f"{flag} lies under a file, not a directory", path=path) from None
        raise InputError(f"{flag} cannot be used: {exc.strerror}", path=path) from None
    if not path.is_dir():
        raise InputError(f"{flag} is a file, not a directory", path=path)


def _check_creatable(path: Path, flag: str) -> None:
    for parent in path.absolute().parents:
        try:
            os.stat(parent)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise InputError(
                f"{flag}: {parent} cannot be used: {exc.strerror}", path=path
            ) from None
        if not parent.is_dir():
            raise InputError(f"{flag}: {parent} is a file, not a directory", path=path)
        return
