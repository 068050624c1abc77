"""Checks of a whole run's input that need more than one setting: run before anything is
loaded, started or written (so a refused command leaves no trace in its run directory)."""

from __future__ import annotations

import errno
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from clineval.config import RunConfig
from clineval.errors import InputError
from clineval.options import RunFacts, check_options

if TYPE_CHECKING:
    from clineval.benchmarks.declaration import Benchmark


def check_run_config(config: RunConfig) -> None:
    """Known tasks, declared `--option` keys with valid values, a readable price table, and
    the files that the model, judges, --verdicts and --judge-prompt name (clineval.run_inputs:
    a task opens some of them only when it predicts, long after the run directory exists)."""
    from clineval.benchmarks.registry import (
        active_namespaces,
        check_declared_parts,
        get_task,
        option_groups,
    )
    from clineval.models.usage import load_price_table
    from clineval.run_inputs import check_run_inputs

    for name in config.tasks:
        get_task(name)
    check_declared_parts(config.tasks)
    check_options(
        config.options, option_groups(), active_namespaces(config.tasks), run_facts(config)
    )
    # a default cannot be told from a value given, except where the default is off
    check_scoring_settings(config.tasks, ["judge_errors_as_unmet"] * config.judge_errors_as_unmet)
    check_run_settings(config)
    _check_openai_settings(config)
    _check_model_fits_tasks(config)
    if config.price_table is not None:
        load_price_table(config.price_table)
    check_run_inputs(config)
    if config.batch_file_out is not None:  # a directory the run writes request files into
        check_output_dir(Path(config.batch_file_out), "--batch-file-out")
        check_writable(Path(config.batch_file_out), "--batch-file-out")


def check_reuse_dirs(config: RunConfig, output_dir: Path | None = None) -> None:
    """Each --reuse directory holds a run store that reads (opened read-only, then closed)
    and is not `output_dir` itself."""
    from clineval.store_reuse import ReusedCalls

    if config.reuse:
        ReusedCalls(config.reuse, output_dir).close()


def check_scoring_settings(tasks: list[str], given: list[str]) -> None:
    """Each of the scoring settings `given` (RunConfig fields) is read by a task of the run
    (its benchmark's `scoring_settings`), else InputError naming the flag and the tasks."""
    _check_read_by_tasks(tasks, given, lambda bench: bench.scoring_settings)


def check_run_settings(config: RunConfig) -> None:
    """The settings a benchmark may own (OWNABLE_RUN_SETTINGS: --judge, --cases, ...) that
    `config` sets are declared by a task of the run (`Benchmark.run_settings`), else
    InputError naming the flag, as for an unknown option: given to a run of NER, --judge
    would be ignored."""
    from clineval.benchmarks.declaration import OWNABLE_RUN_SETTINGS

    given = [name for name in OWNABLE_RUN_SETTINGS if getattr(config, name)]
    _check_read_by_tasks(config.tasks, given, lambda bench: bench.run_settings)


def _check_read_by_tasks(
    tasks: list[str], given: list[str], declared: Callable[[Benchmark], tuple[str, ...]]
) -> None:
    from clineval.benchmarks.registry import benchmark_of
    from clineval.config import flag_of

    benches = [b for task in tasks if (b := benchmark_of(task)) is not None]
    if len(benches) < len(tasks):
        return  # a task no installed benchmark knows (a plugin's run read elsewhere): unknown
    for name in given:
        if not any(name in declared(b) for b in benches):
            raise InputError(
                f"{flag_of(name)} applies to none of this run's tasks ({', '.join(tasks)}): "
                "it would be ignored"
            )


def _check_openai_settings(config: RunConfig) -> None:
    """--base-url and --batch are for openai: models: given for a run without one, they would
    be ignored silently (a llamacpp: model serves itself, in process). A check of a new
    command, not of RunConfig: a manifest recorded before it still scores and merges."""
    from clineval.models.registry import backend_info
    from clineval.secrets import env_credential, masked_url_credentials, redact

    for spec in config.models.all:
        variable = spec.key_variable
        if variable and env_credential(variable) is None:  # read: masked from now on
            raise InputError(
                f"{spec.label}: the environment variable {variable} that its spec names for "
                f"its API key (#key={variable}) is not set"
            )
        for url in spec.base_urls:
            if masked_url_credentials(url):  # a settings file or manifest, written back
                raise InputError(
                    f"{spec.label}: the base URL {redact(url)[:120]!r} holds *** where its "
                    "credentials were masked when clineval wrote it; give the URL with its "
                    "user:password again (the masked text would be sent as the password)"
                )
    model = config.models.candidate
    if config.base_urls and not backend_info(model).takes_base_url:
        raise InputError(
            f"--base-url applies to openai: models only, and --model {model.label} is a "
            f"{model.backend}: model"
        )
    specs = config.models.all
    if config.batch_mode and not any(backend_info(spec).has_batch for spec in specs):
        given = {
            "--batch": config.batch,
            "--batch-file-out": config.batch_file_out is not None,
            "--batch-file-in": bool(config.batch_file_in),
        }
        flag = next((name for name, set_ in given.items() if set_), "--batch")
        labels = ", ".join(spec.label for spec in specs)
        raise InputError(f"{flag} applies to openai: models only, and this run has none ({labels})")


def run_facts(config: RunConfig) -> RunFacts:
    """What the run is, for the `--option` rules that depend on it: its models (the candidate
    and each judge) by label with what each is (clineval.options.Option.models: keys declared
    for other models are refused), the candidate's, and the run settings and options given
    (Option.unusable)."""
    from clineval.models.backends import model_traits

    # set and not empty: a value given (0 is one, though 0 == False)
    given = frozenset(
        name
        for name, value in config
        if name in config.model_fields_set
        and value is not None
        and value is not False
        and (not isinstance(value, list | dict) or value)
    )
    return RunFacts(
        candidate=_candidate_traits(config),
        models={spec.label: model_traits(spec) for spec in config.models.all},
        given=given,
        options=frozenset(config.options),
    )


def _candidate_traits(config: RunConfig) -> frozenset[str]:
    """What the candidate is. A model whose kind a file decides (`hf:PATH`, by its
    config.json) counts as its one kind when that file is there to read: a value that needs a
    checkpoint is then refused for a causal LM before anything runs, not after it predicted."""
    from clineval.models.backends import model_traits, resolve_backend, static_kind
    from clineval.models.registry import backend_info

    spec = config.models.candidate
    traits = model_traits(spec)
    if (
        static_kind(spec) is not None
        or not (Path(spec.name).expanduser() / "config.json").is_file()
    ):
        return traits
    kinds = {kind.value for kind in backend_info(spec).kinds}
    return (traits - kinds) | {resolve_backend(spec).kind.value}


def _check_model_fits_tasks(config: RunConfig) -> None:
    """Each task's benchmark declares the model capabilities it can use: a run of a task with
    a model it cannot use would fail only once that task predicts, after its run directory
    was written. (`hf:PATH` is chat or checkpoint by its config.json: checked when loaded.)"""
    from clineval.benchmarks.registry import benchmark_of
    from clineval.models.backends import static_kind
    from clineval.option_flags import stand_ins_given

    for judge in config.models.judges:
        kind = static_kind(judge)
        if kind is not None and kind != "chat":
            raise InputError(f"--judge {judge.text}: a {kind} model cannot judge; use a chat model")
    spec = config.models.candidate
    kind = static_kind(spec)
    if kind is None:
        return
    # a task given a file that stands in for the model (--verdicts) asks the model nothing
    stood_in = {group.namespace for group, _, _ in stand_ins_given(config.options)}
    refused = []
    for name in config.tasks:
        bench = benchmark_of(name)
        if bench is None or any(g.namespace in stood_in for g in bench.options):
            continue
        if kind not in bench.capabilities:
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


def check_writable(path: Path, flag: str) -> None:
    """A directory can be made in `path` (or in its nearest existing ancestor, where `path`
    will be made): tried with a temporary directory, removed at once. A read-only or full
    file system, or one that takes no new entries (/proc), is refused here, before the run
    directory exists, rather than when the run first writes there."""
    where = next(p for p in (path.absolute(), *path.absolute().parents) if os.path.isdir(p))
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".clineval-write-check-", dir=where))
    except OSError as exc:
        raise InputError(f"{flag}: cannot write: {exc.strerror}", path=path) from None
