"""Read a run directory for the report and compare commands, tolerant of missing pieces.

The report shows whatever a run holds: a task section appears only when its data exists, so a
run interrupted after one task, or written by an older clineval, still gets a report.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clineval.errors import InputError
from clineval.run_record import iter_samples, read_manifest, read_results
from clineval.rundir import MANIFEST, RESULTS, SAMPLES

# Words that mark generated, non-benchmark data (a fixture's score is never presented as a
# benchmark result: docs/data-sources.md, "Fixtures are never benchmark results").
_FIXTURE_WORDS = ("fixture", "synthetic")


@dataclass
class RunData:
    path: Path
    manifest: dict[str, Any]
    results: dict[str, dict[str, Any]]
    samples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


def load_run(run_dir: Path, *, with_samples: bool = True) -> RunData:
    """The run's manifest, results and samples; InputError when it is not a run directory."""
    if not run_dir.is_dir():
        raise InputError("not a run directory", path=run_dir)
    if not (run_dir / RESULTS).exists():
        raise InputError(f"no {RESULTS}: not a finished run directory", path=run_dir)
    # Without a manifest (a directory put together by hand or by an older tool) the files
    # are read under the loosest rules (clineval.run_record, version 0).
    record = read_manifest(run_dir) if (run_dir / MANIFEST).exists() else None
    clean = read_results(run_dir, record)
    manifest = record.as_written() if record is not None else {}
    samples: dict[str, list[dict[str, Any]]] = {}
    if with_samples and (run_dir / SAMPLES).exists():
        orphan_home = _orphan_home(clean)
        for row in iter_samples(run_dir, record):
            task = str(row.get("task", "?"))
            if task not in clean and orphan_home is not None:
                # A ClinConsensus row's own `task` field (the case's task category) can
                # overwrite the run's task name in samples.jsonl; keep it as case_task.
                row["case_task"] = row.get("task")
                task = orphan_home
            samples.setdefault(task, []).append(row)
    return RunData(path=run_dir, manifest=manifest, results=clean, samples=samples)


def _orphan_home(results: dict[str, Any]) -> str | None:
    """Where rows naming a task the run does not have belong: older clinevals wrote a row's
    own `task` field (a ClinConsensus case's task category) over the run's task name, so
    with one task in the run they belong to it."""
    return next(iter(results)) if len(results) == 1 else None


def _mentions_fixture(value: Any) -> bool:
    if isinstance(value, str):
        low = value.lower()
        return any(word in low for word in _FIXTURE_WORDS)
    if isinstance(value, dict):
        return any(_mentions_fixture(v) for v in value.values())
    if isinstance(value, list):
        return any(_mentions_fixture(v) for v in value)
    return False


def is_fixture_task(run: RunData, task: str) -> bool:
    """True when the task's metrics, manifest notes or data paths say fixture/synthetic."""
    metrics = run.results.get(task, {})
    for key in ("fixture", "synthetic"):
        if metrics.get(key):
            return True
    notes = run.manifest.get("tasks", {}).get(task, {})
    if isinstance(notes, dict):
        if notes.get("fixture") or notes.get("synthetic"):
            return True
        if _mentions_fixture(notes):
            return True
    config = run.manifest.get("config", {})
    paths = [config.get("data_dir"), config.get("cases"), config.get("verdicts")]
    return any(_mentions_fixture(p) for p in paths if p)


def finite_number(value: Any) -> float | None:
    """A float when value is a real finite number (bools excluded), else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def interval_of(metrics: dict[str, Any], key: str) -> tuple[float, float] | None:
    """The 95% interval stored for metric `key`, whichever spelling the task used."""
    candidates: list[Any] = [metrics.get(f"{key}_ci"), metrics.get(f"{key}_ci95")]
    for container in ("ci", "ci95", "cis", "intervals"):
        holder = metrics.get(container)
        if isinstance(holder, dict):
            candidates.append(holder.get(key))
    for cand in candidates:
        if isinstance(cand, dict):
            cand = [cand.get("low", cand.get("lo")), cand.get("high", cand.get("hi"))]
        if isinstance(cand, list | tuple) and len(cand) == 2:
            low, high = finite_number(cand[0]), finite_number(cand[1])
            if low is not None and high is not None:
                return (low, high)
    return None
