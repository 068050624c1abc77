"""A run directory as an export reads it: its manifest, results.json and samples.jsonl.

Exports read the files a run publishes (never its store), so they work on a copied run
directory too; each file is written atomically by the runner, and an export only reads (no
lock, like `report`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clineval.errors import InputError
from clineval.run_record import RunFiles as RunFiles, read_manifest, read_run_files
from clineval.rundir import RESULTS


@dataclass(frozen=True)
class ExportSettings:
    name: str | None = None  # --name: the model name a format puts in its file name
    cases: Path | None = None  # --cases: the cases file, when the run's has moved


def read_run(run_dir: Path) -> RunFiles:
    """The run's files, read as every reader of a run reads them (run_record.read_run_files);
    an export needs a manifest."""
    read_manifest(run_dir)  # refuses a directory that is not a run (no manifest)
    if not (run_dir / RESULTS).is_file():
        raise InputError("no results.json: the run has not finished a task yet", path=run_dir)
    return read_run_files(run_dir)


def task_metrics(run: RunFiles, task: str) -> dict[str, Any]:
    """The results of `task`, or an InputError naming the tasks the run has results for."""
    metrics = run.results.get(task)
    if not isinstance(metrics, dict):
        done = ", ".join(sorted(run.results)) or "none"
        raise InputError(
            f"the run has no {task} results (tasks with results: {done})", path=run.path / RESULTS
        )
    return metrics
