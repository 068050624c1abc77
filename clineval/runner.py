"""Run and re-score: dataset -> model outputs (stored) -> metrics -> run directory files."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from clineval.config import RunConfig
from clineval.datapaths import resolve_data_root
from clineval.errors import InputError
from clineval.models.spec import ModelSpec
from clineval.rundir import (
    MANIFEST,
    RESULTS,
    SAMPLES,
    base_manifest,
    read_json,
    write_json,
    write_jsonl,
)
from clineval.secrets import redact
from clineval.store import RunStore
from clineval.tasks import get_task
from clineval.tasks.base import RunContext, TaskResult

# Settings that change what the model is asked; a resume with other values would mix runs.
_IDENTITY_FIELDS = ("model", "judges", "seed", "temperature", "max_tokens", "judge_prompt")


class TaskFailures(Exception):
    """Results were written, but a task asked for a non-zero exit (e.g. judge-error bound)."""


def _identity(name: str, value: Any) -> Any:
    """What must match on resume. Model and judge specs compare without their server URL: the
    same model reached at another address (a moved server, other replicas) answers the same
    cached calls, whose keys never contain a URL either."""
    if name == "model" and isinstance(value, str):
        return ModelSpec.parse(value).label
    if name == "judges" and isinstance(value, list):
        return [ModelSpec.parse(v).label for v in value]
    return value


def _check_resume_compatible(output_dir: Path, config: RunConfig) -> dict[str, Any] | None:
    path = output_dir / MANIFEST
    if not path.exists():
        return None
    previous = read_json(path)
    old = previous.get("config", {})
    new = public_config(config)
    for name in _IDENTITY_FIELDS:
        if name in old and _identity(name, old[name]) != _identity(name, new[name]):
            raise InputError(
                f"this run directory holds a run with {name}={old[name]!r}; "
                f"refusing to resume it with {name}={new[name]!r} "
                "(use another --output-dir)",
                path=path,
            )
    return previous


def public_config(config: RunConfig) -> dict[str, Any]:
    """The config as manifest.json keeps it: credentials in model / judge / server URLs
    (http://user:KEY@host, ?api-key=...) masked, as the file is meant to be shared."""
    data = config.model_dump()
    data["model"] = redact(data["model"])
    data["judges"] = [redact(j) for j in data["judges"]]
    data["base_urls"] = [redact(u) for u in data["base_urls"]]
    return data


def _make_context(config: RunConfig, output_dir: Path, store: RunStore) -> RunContext:
    return RunContext(
        config=config,
        store=store,
        output_dir=output_dir,
        data_root=resolve_data_root(config.data_dir),
        model=ModelSpec.parse(config.model, tuple(config.base_urls)),
    )


def _write_outputs(
    output_dir: Path, results: dict[str, Any], samples: dict[str, list[dict[str, Any]]]
) -> None:
    write_json(output_dir / RESULTS, results)
    write_jsonl(
        output_dir / SAMPLES,
        ({"task": task, **row} for task, rows in samples.items() for row in rows),
    )


def _existing_outputs(output_dir: Path) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    """What earlier tasks of this run directory wrote, so a rewrite keeps it."""
    results: dict[str, Any] = {}
    samples: dict[str, list[dict[str, Any]]] = {}
    if (output_dir / RESULTS).exists():
        results = read_json(output_dir / RESULTS)
    if (output_dir / SAMPLES).exists():
        from clineval.rundir import read_jsonl

        for row in read_jsonl(output_dir / SAMPLES):
            task = row.pop("task", "?")
            samples.setdefault(task, []).append(row)
    return results, samples


def _note_llm_calls(manifest: dict[str, Any], ctx: RunContext) -> None:
    """Model-call counters of this invocation and token usage / cost of all stored calls."""
    from clineval.concurrency import run_call_state
    from clineval.models.usage import run_usage

    if ctx.store.count_calls():
        manifest["llm_usage"] = run_usage(ctx.store, ctx.config.price_table)
    if ctx.shared:
        manifest["llm_calls"] = {
            "totals": run_call_state(ctx).totals(),
            "by_model": {k: v.as_dict() for k, v in run_call_state(ctx).stats.items()},
        }


def _execute(config: RunConfig, output_dir: Path, *, predict: bool) -> dict[str, Any]:
    output_dir.mkdir(parents=True, exist_ok=True)
    if predict:
        previous = _check_resume_compatible(output_dir, config)
        manifest = base_manifest(public_config(config))
        if previous is not None:
            manifest["resumed_from"] = previous.get("started")
            manifest["tasks"] = previous.get("tasks", {})
    else:
        # Re-scoring keeps the run's own record and notes when it was re-scored.
        manifest = read_json(output_dir / MANIFEST)
        manifest["rescored"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    results, samples = _existing_outputs(output_dir)
    failures: list[str] = []
    with RunStore.in_dir(output_dir) as store:
        ctx = _make_context(config, output_dir, store)
        write_json(output_dir / MANIFEST, manifest)
        try:
            for name in config.tasks:
                task = get_task(name)
                started = time.time()
                phases: dict[str, float] = {}
                data = task.load(ctx)
                phases["load"] = time.time()
                if predict:
                    task.predict(ctx, data)
                    phases["predict"] = time.time()
                result: TaskResult = task.evaluate(ctx, data)
                phases["evaluate"] = time.time()
                results[name] = result.metrics
                samples[name] = result.samples
                manifest["tasks"][name] = {
                    **ctx.manifest_notes.get(name, {}),
                    "seconds": round(time.time() - started, 3),
                    "phase_seconds": _phase_seconds(started, phases),
                }
                failures.extend(f"{name}: {msg}" for msg in result.errors)
                _write_outputs(output_dir, results, samples)
                _note_llm_calls(manifest, ctx)
                write_json(output_dir / MANIFEST, manifest)
        except BaseException as exc:
            # Results of finished tasks are already on disk; say in the manifest why it stopped.
            manifest["status"] = f"stopped: {type(exc).__name__}: {redact(str(exc))}"[:500]
            write_json(output_dir / MANIFEST, manifest)
            raise
    manifest["status"] = "failed" if failures else "finished"
    manifest["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    write_json(output_dir / MANIFEST, manifest)
    if failures:
        raise TaskFailures("; ".join(failures))
    return results


def _phase_seconds(started: float, ends: dict[str, float]) -> dict[str, float]:
    """Wall seconds of each phase, from the time each one ended (in order)."""
    out, previous = {}, started
    for phase, end in ends.items():
        out[phase] = round(end - previous, 3)
        previous = end
    return out


def run(config: RunConfig, output_dir: Path) -> dict[str, Any]:
    """Run (or resume) every task of the config into output_dir."""
    return _execute(config, output_dir, predict=True)


def plan(config: RunConfig, output_dir: Path) -> dict[str, Any]:
    """The model calls `run` would make (clineval run --dry-run): counted, estimated, priced.

    Reads an existing run store to leave out what is stored, and changes nothing in it (a run
    directory without a store gets none: an empty one in a temporary directory stands in).
    """
    from clineval.models.usage import load_price_table
    from clineval.plan import CallPlan, plan_summary
    from clineval.store import STORE_FILENAME

    prices = load_price_table(config.price_table)
    _check_resume_compatible(output_dir, config)
    with tempfile.TemporaryDirectory(prefix="clineval-plan-") as empty:
        existing = output_dir / STORE_FILENAME
        with RunStore(existing if existing.is_file() else Path(empty) / STORE_FILENAME) as store:
            ctx = _make_context(config, output_dir, store)
            calls = CallPlan(store)
            for name in config.tasks:
                task = get_task(name)
                task.plan(ctx, task.load(ctx), calls)
    return plan_summary(calls.rows(), prices)


def score(output_dir: Path, data_dir: str | None = None) -> dict[str, Any]:
    """Recompute results from the run store of a finished (or interrupted) run; no model calls."""
    manifest = read_json(output_dir / MANIFEST)
    config = RunConfig.model_validate(manifest["config"])
    if data_dir is not None:
        config.data_dir = data_dir
    return _execute(config, output_dir, predict=False)
