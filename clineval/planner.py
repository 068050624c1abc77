"""`clineval run --dry-run`: the model calls a run would make, counted, estimated and priced,
without calling any model or writing anything."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from clineval.benchmarks.registry import get_task, naming_fetch_commands
from clineval.config import RunConfig
from clineval.run_checks import (
    check_output_dir,
    check_reuse_dirs,
    check_run_config,
)
from clineval.runner import (
    batch_price_warnings,
    check_resume_compatible,
    existing_store,
    make_context,
    reused_stores,
)

log = logging.getLogger("clineval")


@naming_fetch_commands()  # a missing corpus: say which fetch gets it
def plan(config: RunConfig, output_dir: Path) -> dict[str, Any]:
    """The model calls `run` would make (clineval run --dry-run): counted, estimated, priced.

    Reads an existing run store to leave out what is stored, and changes nothing in it (a run
    directory without a store gets none: an empty one in a temporary directory stands in).
    Takes no lock: it writes nothing, and may run beside the run it plans for.
    """
    from clineval.models.usage import load_price_table
    from clineval.plan import CallPlan, plan_summary

    check_output_dir(output_dir)
    check_run_config(config)
    check_reuse_dirs(config, output_dir)
    prices = load_price_table(config.price_table)
    check_resume_compatible(output_dir, config)
    with existing_store(output_dir) as store, reused_stores(config.reuse, output_dir, store):
        ctx = make_context(config, output_dir, store)
        calls = CallPlan(store, config.options)
        for name in config.tasks:
            task = get_task(name)
            task.plan(ctx, task.load(ctx), calls)
        calls.estimate_time(_parallel_calls(config))
    by_label = _batched_by_label(config)
    batched = {label: by_label.get(label, False) for label in {row.model for row in calls.rows()}}
    summary = plan_summary(calls.rows(), prices, batched)
    summary["warnings"] = batch_price_warnings(config)
    for line in summary["warnings"]:
        log.warning("%s", line)
    if config.batch_mode:
        from clineval.models.options import LLM_OPTIONS
        from clineval.plan import batch_rounds

        max_lines = LLM_OPTIONS.value(config.options, "batch_max_lines")
        summary["batch_rounds"] = batch_rounds(calls.rows(), batched, max_lines)
    return summary


def _batched_by_label(config: RunConfig) -> dict[str, bool]:
    """Model label -> whether its calls go through batches (the plan's rows name labels; of
    two specs with one label, the first given decides)."""
    out: dict[str, bool] = {}
    for spec in config.models.all:
        out.setdefault(spec.label, config.batched(spec))
    return out


def _parallel_calls(config: RunConfig) -> dict[str, int]:
    """Model label -> calls served at once: --concurrency, and for the in-process llama.cpp
    server no more than its slots (clineval waits for a free one)."""
    from clineval.models.llamacpp_server import LlamaCppSettings
    from clineval.models.registry import backend_info

    slots = LlamaCppSettings.from_options(config.options).n_parallel
    out = {}
    for spec in config.models.all:
        local = backend_info(spec).local_slots
        out[spec.label] = min(config.concurrency, slots) if local else config.concurrency
    return out
