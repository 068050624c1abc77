"""Every task's samples as a CSV file, `DIR/<task>.samples.csv`, for a spreadsheet or pandas.

One row per samples.jsonl row of the task; the columns are the rows' fields in the order they
first appear. A field that is a list or an object (ClinConsensus verdicts, NER entities) is
written as its JSON text, so nothing is lost and a cell stays one cell. A text a spreadsheet
would run as a formula (`=HYPERLINK(...)`) gets a leading apostrophe (clineval.csv_text).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from clineval.csv_text import csv_text
from clineval.errors import InputError
from clineval.export.run_files import ExportSettings, RunFiles
from clineval.rundir import SAMPLES, atomic_write_text

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def _cell(value: Any) -> Any:
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    return "" if value is None else value


def to_csv(rows: list[dict[str, Any]]) -> str:
    """The rows as CSV (clineval.csv_text: a cell a spreadsheet would read as a formula is
    written as text)."""
    columns: dict[str, None] = {}
    for row in rows:
        columns.update(dict.fromkeys(row))
    return csv_text(list(columns), ([_cell(row.get(key)) for key in columns] for row in rows))


def export(run: RunFiles, out_dir: Path, settings: ExportSettings) -> list[Path]:
    if settings.name is not None or settings.cases is not None:
        # they belong to formats a benchmark declares, which read them
        raise InputError("--name and --cases are not options of --format samples-csv")
    tasks = [task for task, rows in run.samples.items() if rows]
    if not tasks:
        raise InputError("the run has no sample rows", path=run.path / SAMPLES)
    written = []
    for task in tasks:
        target = out_dir / f"{_UNSAFE.sub('_', task)}.samples.csv"
        # the file is the task's: its rows without the run's task column
        rows = [{k: v for k, v in row.items() if k != "task"} for row in run.samples[task]]
        atomic_write_text(target, to_csv(rows))
        written.append(target)
    return written
