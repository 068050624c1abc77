"""The garbage collector's thresholds while a run or a re-score does its bulk work.

A run decodes and builds hundreds of thousands of small containers (stored calls, verdicts,
sample rows) that form no reference cycles, and keeps a coroutine per item alive while it
calls models. Under CPython's default thresholds (700, 10, 10) the collector started a
young-generation pass every 700 allocations and a full pass over every live object dozens of
times a run, finding almost nothing: a large share of a judged run's CPU, and more of it the
more items a run holds (`perf/bench_gc.py` measures it, BENCHMARKS.md).

The thresholds are raised only while `bulk_work` is entered, never lowered (a process that
raised them itself keeps its own), and put back after, so a Python API user's process keeps
its settings. Cycles are still collected, less often: the memory they hold between passes is
bounded by the first threshold's count of objects.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

# the generation thresholds chosen by perf/bench_gc.py (it compares others in one run)
THRESHOLDS = (50_000, 10, 10)


_lock = threading.Lock()
_entered = 0  # bulk_work blocks open now (runs in threads of one process may overlap)
_saved: tuple[int, int, int] | None = None  # the thresholds from before the first of them


@contextmanager
def bulk_work() -> Iterator[None]:
    """Collector thresholds at least `THRESHOLDS` inside, the previous ones after the last
    of the blocks open at once (not after each: two runs in threads may end in any order)."""
    global _entered, _saved
    with _lock:
        if not _entered:
            _saved = gc.get_threshold()
            raised = (max(mine, theirs) for mine, theirs in zip(THRESHOLDS, _saved, strict=True))
            gc.set_threshold(*raised)
        _entered += 1
    try:
        yield
    finally:
        with _lock:
            _entered -= 1
            if not _entered and _saved is not None:
                gc.set_threshold(*_saved)
