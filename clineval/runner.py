"""Run: dataset -> model outputs (stored) -> metrics -> run directory files.

`execute` is the one pass that `run` and `score` (clineval.rescore) share; the checks, the
context and the resume identity made here are read by `plan` (clineval.dry_run) too.
"""

from __future__ import annotations

import logging
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from clineval.benchmarks.base import RunContext, Task, TaskResult
from clineval.benchmarks.missing import apply_missing_rule
from clineval.benchmarks.registry import (
    benchmark_of,
    get_task,
    naming_fetch_commands,
    option_groups,
)
from clineval.collector import bulk_work
from clineval.config import RunConfig, declared_settings, with_spec_labels
from clineval.datapaths import resolve_data_root
from clineval.errors import InputError
from clineval.option_flags import manifest_config
from clineval.run_checks import (
    check_output_dir,
    check_reuse_dirs,
    check_run_config,
)
from clineval.run_record import (
    Manifest,
    iter_samples,
    new_manifest,
    read_manifest,
    read_results,
    write_manifest,
    write_outputs,
)
from clineval.rundir import MANIFEST, RESULTS, SAMPLES
from clineval.rundir_lock import missing_dirs, remove_made, run_dir_lock
from clineval.secrets import redact
from clineval.store import STORE_FILENAME, RunStore, check_intact

log = logging.getLogger("clineval")


class TaskFailures(Exception):
    """Results were written, but a task asked for a non-zero exit (e.g. judge-error bound)."""


def check_resume_compatible(output_dir: Path, config: RunConfig) -> Manifest | None:
    """The manifest of the run this one resumes, or None for a new run. A run directory whose
    store holds no output (its run was refused or stopped before storing anything) has
    nothing to mix with, so any settings may start afresh there."""
    if not (output_dir / MANIFEST).exists():
        return None
    previous = read_manifest(output_dir)
    if not _store_holds_outputs(output_dir):
        return None
    old = manifest_config(previous.config)  # a run recorded by an older clineval too
    new = public_config(config)
    # Model and judge specs compare without their server URL: the same model reached at
    # another address answers the same cached calls, whose keys never contain a URL either.
    old_asked, new_asked = with_spec_labels(old), with_spec_labels(new)
    # the settings that change what the model is asked (Setting.identity): other values would
    # mix runs
    for name in (n for n, setting in declared_settings().items() if setting.identity):
        if name in old and old_asked[name] != new_asked[name]:
            raise InputError(
                f"this run directory holds a run with {name}={old[name]!r}; "
                f"refusing to resume it with {name}={new[name]!r} "
                "(use another --output-dir)",
                path=output_dir / MANIFEST,
            )
    old_options, new_options = old.get("options") or {}, new.get("options") or {}
    # declared `changes_requests` (e.g. llm.extra_body): stored answers are reused by key
    for key in (k for group in option_groups() for k in group.request_keys()):
        if old_options.get(key) != new_options.get(key):
            raise InputError(
                f"this run directory holds a run with --option {key}={old_options.get(key)!r}; "
                f"refusing to resume it with {new_options.get(key)!r} (use another --output-dir)",
                path=output_dir / MANIFEST,
            )
    return previous


def _store_holds_outputs(output_dir: Path) -> bool:
    path = output_dir / STORE_FILENAME
    if not path.is_file():
        return False
    check_intact(path)  # a torn page: refused before anything is written
    with RunStore(path) as store:
        return store.holds_outputs()


def public_config(config: RunConfig) -> dict[str, Any]:
    """The config as manifest.json keeps it: credentials in model / judge / server URLs
    (http://user:KEY@host, ?api-key=...) masked, as the file is meant to be shared."""
    data = config.model_dump()
    for name in (n for n, setting in declared_settings().items() if setting.secret):
        value = data[name]
        data[name] = [redact(v) for v in value] if isinstance(value, list) else redact(value)
    return data


def make_context(config: RunConfig, output_dir: Path, store: RunStore) -> RunContext:
    return RunContext(
        config=config,
        store=store,
        output_dir=output_dir,
        data_root=resolve_data_root(config.data_dir),
        model=config.models.candidate,
    )


def _write_outputs(
    store: RunStore, output_dir: Path, manifest: Manifest
) -> dict[str, dict[str, Any]]:
    """results.json and samples.jsonl of every task this run directory evaluated so far, from
    its store (the manifest, written next, notes their schema versions); returns what it read
    (decoding a large run's stored samples again costs seconds)."""
    stored = store.task_results()
    write_outputs(
        output_dir,
        manifest,
        {task: value["metrics"] for task, value in stored.items()},
        {task: value["samples"] for task, value in stored.items()},
    )
    return stored


def _adopt_result_files(store: RunStore, output_dir: Path, manifest: Manifest) -> None:
    """A directory written before results were kept in the store has them only in its files:
    those are read once (as the manifest's file versions say) and moved into the store, so
    nothing computed is lost."""
    if store.has_task_results() or not (output_dir / RESULTS).exists():
        return
    results = read_results(output_dir, manifest)
    rows: dict[str, list[dict[str, Any]]] = {}
    if (output_dir / SAMPLES).exists():
        for row in iter_samples(output_dir, manifest):
            rows.setdefault(str(row.pop("task", "?")), []).append(row)
    for task, metrics in results.items():
        store.put_task_result(task, metrics, rows.get(task, []))


def _note_llm_calls(manifest: Manifest, ctx: RunContext) -> None:
    """Model-call counters of this invocation and token usage / cost of all stored calls."""
    from clineval.models.usage import run_usage
    from clineval.store_reuse import reused_summary

    if ctx.store.count_calls():
        calls = ctx.store.call_usage()  # read once for both
        manifest.llm_usage = run_usage(ctx.store, ctx.config.price_table, calls)
        reused = reused_summary(calls)
        if reused:
            manifest.reused = reused
    if ctx.runtime.calls.stats:
        manifest.llm_calls = {
            "totals": ctx.runtime.calls.totals(),
            "by_model": {k: v.as_dict() for k, v in ctx.runtime.calls.stats.items()},
        }


@contextmanager
def existing_store(output_dir: Path) -> Iterator[RunStore]:
    """The run directory's store if it has one, else an empty one in a temporary directory:
    enough to load tasks and plan calls without creating a store in the run directory."""
    existing = output_dir / STORE_FILENAME
    if existing.is_file():
        with RunStore(existing) as store:
            yield store
        return
    with (
        tempfile.TemporaryDirectory(prefix="clineval-") as empty,
        RunStore(Path(empty) / STORE_FILENAME) as store,
    ):
        yield store


@contextmanager
def reused_stores(directories: list[str], output_dir: Path, store: RunStore) -> Iterator[None]:
    """The --reuse directories' stores, read-only, answering `store`'s misses while open."""
    if not directories:
        yield
        return
    from clineval.store_reuse import ReusedCalls

    with ReusedCalls(directories, output_dir) as reused:
        store.reuse = reused
        try:
            yield
        finally:
            store.reuse = None


def _load_tasks(ctx: RunContext) -> list[tuple[str, Task[Any], Any, float]]:
    """(name, task, data, seconds) of every task: all inputs are read and validated here,
    before a run writes anything, so bad input leaves the run directory as it was."""
    loaded = []
    for name in ctx.config.tasks:
        started = time.time()
        task = get_task(name)
        loaded.append((name, task, task.load(ctx), time.time() - started))
    return loaded


@bulk_work()  # the collector's thresholds raised while it decodes and builds (collector.py)
def execute(
    config: RunConfig,
    output_dir: Path,
    manifest: Manifest,
    *,
    predict: bool,
    keep_primaries: bool = False,
) -> dict[str, Any]:
    """Load every task, then (run) predict, evaluate and write each in turn. The caller holds
    the run directory's lock. `keep_primaries` (a re-score without --force): a task whose
    results have a primary figure is not replaced by results without one."""
    with existing_store(output_dir) as existing:
        ctx = make_context(config, output_dir, existing)
        loaded = _load_tasks(ctx)
    written = _written_results(output_dir, manifest) if keep_primaries else {}
    # Everything is validated: from here on the run directory is written.
    failures: list[str] = []
    # Said once every file is written: a write that fails ends the command with its error
    # alone, not after advice about results that were never written.
    warnings: list[str] = []
    # the --reuse directories answer model calls: a re-score makes none, and must work
    # after they are gone (the calls it reused are in this store)
    reuse = config.reuse if predict else []
    with RunStore.in_dir(output_dir) as store, reused_stores(reuse, output_dir, store):
        ctx.use_store(store)
        _adopt_result_files(store, output_dir, manifest)
        # A run records at once that it is running; a re-score leaves the manifest alone
        # until it has rewritten a task's results (a refused re-score changes nothing).
        manifest_written = predict
        if predict:
            write_manifest(output_dir, manifest)
        results: dict[str, dict[str, Any]] | None = None  # as the last outputs written
        try:
            for name, task, data, load_seconds in loaded:
                started = time.time()
                phases: dict[str, float] = {}
                if predict:
                    _note_predictions_file(ctx, name)
                    task.predict(ctx, data)
                    phases["predict"] = time.time()
                result: TaskResult = task.evaluate(ctx, data)
                missing = apply_missing_rule(store, name, result)  # every benchmark alike
                phases["evaluate"] = time.time()
                _refuse_losing_primary(name, written.get(name), result, output_dir)
                store.put_task_result(name, result.metrics, result.samples)
                manifest.note_task(
                    name,
                    ctx.manifest_notes.get(name, {}),
                    # what these results were computed from: `score` never replaces them by
                    # results computed from fewer stored outputs (unless --force)
                    stored_records=store.record_counts().get(name, 0),
                    seconds=round(time.time() - started + load_seconds, 3),
                    phase_seconds={
                        "load": round(load_seconds, 3),
                        **_phase_seconds(started, phases),
                    },
                    declared=_declared(name),
                )
                failures.extend(f"{name}: {msg}" for msg in result.errors)
                if missing is not None:
                    failures.append(f"{name}: {missing[0]}")
                    warnings.append(f"{name}: {missing[1]}")
                results = _write_outputs(store, output_dir, manifest)
                _note_llm_calls(manifest, ctx)
                write_manifest(output_dir, manifest)
                manifest_written = True
                warnings.extend(f"{name}: {text}" for text in result.warnings)
                warnings.extend(f"{name}: {text}" for text in _undelivered(name, result))
        except BaseException as exc:
            # Results of finished tasks are already on disk; say in the manifest why it stopped.
            if manifest_written:
                manifest.mark_stopped(exc)
                try:
                    write_manifest(output_dir, manifest, last_word=True)
                except InputError as write_error:  # the disk that stopped the run, say
                    log.warning("%s", write_error)  # what stopped the run is the error to show
            raise
        if results is None:
            results = store.task_results()
    manifest.mark_done(failed=bool(failures))
    write_manifest(output_dir, manifest, last_word=True)
    for text in warnings:
        log.warning("warning: %s", text)
    if failures:
        raise TaskFailures("; ".join(failures))
    return {task: value["metrics"] for task, value in results.items()}


def _note_predictions_file(ctx: RunContext, task: str) -> None:
    """Provenance of a `predictions:` run: the path and sha256 of the file the task reads,
    noted here for every task (and a verdicts file named by --verdicts, too), so the manifest
    says which bytes were scored. Only when predicting: a re-score reads the store, not the
    file, whose bytes may have changed since."""
    from clineval.models.predictions_files import predictions_file, predictions_note
    from clineval.models.registry import backend_info

    # (a task that reads a file named by a flag of its own, such as ClinConsensus's
    # --verdicts, notes that file itself)
    if backend_info(ctx.model).replays_predictions:
        ctx.note(task, "predictions_file", predictions_note(predictions_file(ctx.model, task)))


def _phase_seconds(started: float, ends: dict[str, float]) -> dict[str, float]:
    """Wall seconds of each phase, from the time each one ended (in order)."""
    out, previous = {}, started
    for phase, end in ends.items():
        out[phase] = round(end - previous, 3)
        previous = end
    return out


_WAIT_HINT = "pass --wait to wait for it, "


@naming_fetch_commands()  # a missing corpus: say which fetch gets it
def run(config: RunConfig, output_dir: Path, *, wait: bool = False) -> dict[str, Any]:
    """Run (or resume) every task of the config into output_dir, holding its lock: another
    process using it is an InputError at once, or, with `wait`, is waited for."""
    check_output_dir(output_dir)
    check_run_config(config)  # before the lock: a refused command creates nothing
    check_reuse_dirs(config, output_dir)
    for line in batch_price_warnings(config):
        log.warning("%s", line)
    made = missing_dirs(output_dir)  # removed again if the run is refused with nothing kept
    with run_dir_lock(output_dir, create=True, wait=wait, wait_hint=_WAIT_HINT):
        previous = check_resume_compatible(output_dir, config)
        manifest = new_manifest(public_config(config))
        if previous is not None:
            manifest.resume(previous)
        fresh = not any((output_dir / name).exists() for name in _RUN_FILES)
        # Lone surrogates replaced in the files and replies read by this command are
        # counted into the manifest (clineval.jsonio).
        with manifest.counting_replacements():
            try:
                return execute(config, output_dir, manifest, predict=True)
            except InputError:
                if fresh and _forget_if_nothing_stored(output_dir):
                    remove_made(made)
                raise


# The files a run writes into its directory.
_RUN_FILES = (MANIFEST, STORE_FILENAME, RESULTS, SAMPLES)


def _forget_if_nothing_stored(output_dir: Path) -> bool:
    """Some input is only found bad when a task loads or predicts, after the run took its lock,
    wrote its manifest and created its store (a missing --cases file or corpus, a checkpoint
    that does not load, a verdicts file naming an unknown case, a --batch-file-out that cannot
    be written): a new run directory refused so is left as it was found, as long as nothing
    was stored. True when nothing was (the run files are then removed)."""
    path = output_dir / STORE_FILENAME
    if path.is_file():
        try:
            with RunStore(path) as store:
                if not store.is_empty():
                    return False  # something was computed: keep it, and the manifest saying why
        except InputError:  # a store that cannot be read is left for the user to see
            return False
    for name in (*_RUN_FILES, f"{STORE_FILENAME}-wal", f"{STORE_FILENAME}-shm"):
        (output_dir / name).unlink(missing_ok=True)
    return True


def batch_price_warnings(config: RunConfig) -> list[str]:
    """The price table's batched models without a batch rate (usage.batch_price_warnings)."""
    from clineval.models.usage import batch_price_warnings, load_price_table

    if config.price_table is None or not config.batch_mode:
        return []
    labels = [spec.label for spec in config.models.all if config.batched(spec)]
    return batch_price_warnings(load_price_table(config.price_table), labels, config.price_table)


def _written_results(output_dir: Path, manifest: Manifest) -> dict[str, Any]:
    """results.json as it is before a re-score ({} when there is none)."""
    if not (output_dir / RESULTS).is_file():
        return {}
    return dict(read_results(output_dir, manifest))


def _refuse_losing_primary(task: str, before: Any, result: TaskResult, output_dir: Path) -> None:
    """InputError when re-scoring would replace results that have the task's primary figure
    with results that have none: the stored outputs no longer fit the data or the benchmark
    (items renamed, another data file), and the figures the run made would be lost."""
    bench = benchmark_of(task)
    if bench is None or not isinstance(before, dict):
        return
    key = bench.metrics.metrics[0].key
    old, new = before.get(key), result.metrics.get(key)
    if isinstance(old, int | float) and not isinstance(old, bool) and new is None:
        raise InputError(
            f"re-scoring leaves {task} without its primary metric {key!r} (its results say "
            f"{old:g}); they are left as they were: did the data or the benchmark change since "
            "the run? (pass --force to replace them)",
            path=output_dir / RESULTS,
        )


def _undelivered(task: str, result: TaskResult) -> list[str]:
    """A warning for each metric or table the task's benchmark declares that its results do
    not hold (a misspelt key, a figure its evaluate forgot): report, compare and the API
    would leave it out without a word."""
    bench = benchmark_of(task)
    if bench is None:
        return []
    keys = [*(m.key for m in bench.metrics.metrics), *bench.metrics.tables]
    return [
        f"declares the metric {key!r}, which its results do not hold (is the key spelt as "
        "declared?)"
        for key in keys
        if key not in result.metrics
    ]


def _declared(task: str) -> dict[str, Any]:
    """The task's family and primary metric with its direction, for the run record."""
    bench = benchmark_of(task)
    return {} if bench is None else bench.record()
