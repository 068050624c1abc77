"""A run directory as an export reads it: its manifest, results.json and samples.jsonl.

Exports read the files a run publishes (never its store), so they work on a copied run
directory too; each file is written atomically by the runner, and an export only reads (no
lock, like `report`).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clineval.errors import InputError
from clineval.run_record import iter_samples, read_manifest, read_results
from clineval.rundir import RESULTS, SAMPLES


@dataclass(frozen=True)
class ExportSettings:
    name: str | None = None  # --name: the model name a format puts in its file name
    cases: Path | None = None  # --cases: the cases file, when the run's has moved


@dataclass(frozen=True)
class RunFiles:
    path: Path
    manifest: dict[str, Any]
    results: dict[str, Any]  # {task: metrics}
    samples: dict[str, list[dict[str, Any]]]  # {task: rows, without the "task" field}

    def task_metrics(self, task: str) -> dict[str, Any]:
        metrics = self.results.get(task)
        if not isinstance(metrics, dict):
            done = ", ".join(sorted(self.results)) or "none"
            raise InputError(
                f"the run has no {task} results (tasks with results: {done})",
                path=self.path / RESULTS,
            )
        return metrics


def read_run(run_dir: Path) -> RunFiles:
    """The run's files, read and validated as every reader of a run reads them
    (clineval.run_record)."""
    record = read_manifest(run_dir)  # refuses a directory that is not a run
    if not (run_dir / RESULTS).is_file():
        raise InputError("no results.json: the run has not finished a task yet", path=run_dir)
    results = read_results(run_dir, record)
    samples: dict[str, list[dict[str, Any]]] = defaultdict(list)
    if (run_dir / SAMPLES).is_file():
        for row in iter_samples(run_dir, record):
            task = row.pop("task", None)
            samples[str(task)].append(row)
    return RunFiles(run_dir, record.as_written(), results, dict(samples))
