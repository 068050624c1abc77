"""The garbage collector's thresholds while a run or a re-score does its bulk work.

A run decodes and builds hundreds of thousands of small containers (stored calls, verdicts,
sample rows) that form no reference cycles, and keeps a coroutine per item alive while it
calls models. Under CPython's default thresholds (700, 10, 10) the collector started a
young-generation pass every 700 allocations and a full pass over every live object dozens of
times a run, finding almost nothing: the largest single cost after the HTTP client in a judged
run, and more of it the more items a run holds (`perf/bench_gc.py`, BENCHMARKS.md).

The thresholds are raised only while `bulk_work` is entered, never lowered (a process that
raised them itself keeps its own), and put back after, so a Python API user's process keeps
its settings. Cycles are still collected, less often: the memory they hold between passes is
bounded by the first threshold's count of objects.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

# the generation thresholds chosen by perf/bench_gc.py (it compares others in one run)
THRESHOLDS = (50_000, 10, 10)


@contextmanager
def bulk_work() -> Iterator[None]:
    """Collector thresholds at least `THRESHOLDS` inside, the previous ones after."""
    previous = gc.get_threshold()
    gc.set_threshold(
        *(max(mine, theirs) for mine, theirs in zip(THRESHOLDS, previous, strict=True))
    )
    try:
        yield
    finally:
        gc.set_threshold(*previous)
