"""Read a run directory for the report and compare commands, tolerant of missing pieces.

The report shows whatever a run holds: a task section appears only when its data exists, so a
run interrupted after one task, or written by an older clineval, still gets a report.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from clineval.errors import InputError
from clineval.run_record import RunFiles, read_run_files
from clineval.rundir import RESULTS

# Words that mark generated, non-benchmark data (a fixture's score is never presented as a
# benchmark result: docs/data-sources.md, "Fixtures are never benchmark results").
_FIXTURE_WORDS = ("fixture", "synthetic")


# The report reads a run as every reader does (clineval.run_record.read_run_files).
RunData = RunFiles


def load_run(run_dir: Path, *, with_samples: bool = True) -> RunData:
    """The run's manifest, results and samples; InputError when it is not a run directory."""
    if not run_dir.is_dir():
        raise InputError("not a run directory", path=run_dir)
    if not (run_dir / RESULTS).exists():
        raise InputError(f"no {RESULTS}: not a finished run directory", path=run_dir)
    return read_run_files(run_dir, with_samples=with_samples)


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
    # the data paths, and every option (a benchmark's own data file is one: its cases file, a
    # verdicts file); "cases" and "verdicts" are the fields a run recorded before those
    # settings became options
    options = config.get("options")
    paths = [config.get("data_dir"), config.get("cases"), config.get("verdicts")]
    paths += list(options.values()) if isinstance(options, dict) else []
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
