"""`clineval export RUN_DIR --format FORMAT -o DIR`: a finished run's outputs in another tool's
format. Benchmarks declare formats of their own (`Benchmark.exporters`; e.g. ClinConsensus's
judgements file, which the authors' eval_cacs.py scores). Each format is one function
`export(run, out_dir, settings) -> [paths]`; every format reads the run directory the
same way (clineval.reportkit.run_files) and writes its files atomically, so a failed export
leaves DIR as it was.

  samples-csv               DIR/<task>.samples.csv, one row per sample of each task, for a
                            spreadsheet (clineval.export.samples_csv)

Internal: not part of clineval's public API (`clineval`, `clineval.benchmarks`;
docs/architecture.md, "Public API"). A benchmark package imports what it needs from
`clineval.benchmarks`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from clineval.errors import InputError
from clineval.messages import did_you_mean
from clineval.reportkit.run_files import ExportSettings, RunFiles, read_run

Exporter = Callable[[RunFiles, Path, ExportSettings], list[Path]]


def _samples_csv(run: RunFiles, out_dir: Path, settings: ExportSettings) -> list[Path]:
    from clineval.export.samples_csv import export

    return export(run, out_dir, settings)


# Formats of every run; a benchmark adds its own (`Benchmark.exporters`).
FORMATS: dict[str, Exporter] = {"samples-csv": _samples_csv}


def formats() -> dict[str, Exporter]:
    from clineval.benchmarks.registry import exporters

    return {**exporters(), **FORMATS}


def export_run(
    run_dir: str | Path,
    fmt: str,
    out_dir: str | Path,
    *,
    name: str | None = None,
    cases: str | Path | None = None,
) -> list[Path]:
    """Write run `run_dir` in format `fmt` into `out_dir`; the paths written."""
    known = formats()
    exporter = known.get(fmt)
    if exporter is None:
        raise InputError(
            f"--format {fmt!r} is not a known format{did_you_mean(fmt, known)} "
            f"(known: {', '.join(known)})"
        )
    out = Path(out_dir).expanduser()
    # os.path: never raises (Path.exists does, on a name too long). Any other place that
    # cannot be written is found where the file is written (rundir.atomic_write_text).
    if os.path.isfile(out):
        raise InputError("the output directory is a file (-o)", path=out)
    settings = ExportSettings(name=name, cases=Path(cases).expanduser() if cases else None)
    return exporter(read_run(Path(run_dir).expanduser()), out, settings)
