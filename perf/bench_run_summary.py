"""Benchmark: what the end of a run and the progress display add to a run's time.

    .venv/bin/python -m perf.bench_run_summary [--repeats 5]

1. The end-of-run summary (`clineval.run_summary.summarize`, what `run`, `score` and `merge`
   print): reading the run's samples and the bootstrap intervals of the headline metrics a
   task stored none for, on the synthetic full-size run directories of perf.bench_report
   (named synthetic-*, flagged fixture): NER 500 documents (no stored intervals: three
   bootstraps), TCM-SD 5,486 samples and ClinConsensus 900 x 30 (intervals stored).
2. `Step.advance` per item (what every task calls once per finished item) of a step of model
   calls, on a terminal (bars), in a log file (lines) and with --quiet, over 200,000 items.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import sys
import tempfile
import time
from pathlib import Path
from unittest.mock import patch

from rich.console import Console

from clineval import progress
from clineval.concurrency import RunCallState
from clineval.run_record import read_run_files
from clineval.run_summary import summarize
from tests import report_synthetic as synthetic

ITEMS = 200_000


def _summary_seconds(run_dir: Path, repeats: int) -> list[float]:
    results = read_run_files(run_dir, with_samples=False).results
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        summarize(results, run_dir)
        times.append(time.perf_counter() - start)
    return times


def _advance_ns(display: str) -> float:
    """ns per Step.advance of a step of model calls, shown as `display`: bars (a terminal),
    lines (stderr a file) or quiet."""
    progress.set_quiet(display == "quiet")
    sink = io.StringIO()
    terminal = Console(file=sink, force_terminal=True, width=120)
    calls = RunCallState(limit=1)
    try:
        with (
            contextlib.redirect_stderr(sink),
            patch.object(progress, "console", terminal if display == "bars" else progress.console),
            progress.task_progress("bench", ITEMS, calls) as step,
        ):
            start = time.perf_counter_ns()
            for _ in range(ITEMS):
                step.advance()
            elapsed = time.perf_counter_ns() - start
    finally:
        progress.set_quiet(False)
    return elapsed / ITEMS


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="clineval-bench-summary-") as tmp:
        base = Path(tmp)
        runs = {
            "NER, 500 documents": synthetic.ner_run(base / "synthetic-ner-full", n_docs=500),
            "TCM-SD, 5,486 samples": synthetic.tcm_run(base / "synthetic-tcm-sd-full", n=5486),
            "ClinConsensus, 900 x 30": synthetic.cc_run(
                base / "synthetic-clinconsensus-full", n_cases=900
            ),
        }
        print("| run (synthetic) | summary, median s | min s | max s |")
        print("|---|---:|---:|---:|")
        for name, run_dir in runs.items():
            times = _summary_seconds(run_dir, args.repeats)
            print(
                f"| {name} | {statistics.median(times):.3f} | {min(times):.3f} | {max(times):.3f} |"
            )
    print()
    print(f"| display | ns per advance ({ITEMS:,} items) |")
    print("|---|---:|")
    for display in ("bars", "lines", "quiet"):
        print(f"| {display} | {_advance_ns(display):,.0f} |")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
