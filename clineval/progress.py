"""Progress display shared by every task: rich bars on a terminal, quiet log lines otherwise.

Two entry points:
- `track(items, total, description)`: a plain bar over an iterable (training, reading files).
- `task_progress(description, total)`: the per-task display of a run with model calls:
  done/total, calls per second, cache hits, retries, judge errors and an ETA. Tasks call
  `advance(cached=...)` per finished item and `count("judge_errors")` (or any counter of their
  own) when that happens. With `--quiet` the same counters go to log lines (at most one every
  few seconds, and a final summary), so a batch job's log still shows where the run is.

Retries are not counted here: a task passing its run's call counters (`calls=`, the
RunCallState whose figures manifest.json["llm_calls"] records) gets them shown as they stand
there, the retries made since the display opened. One counter, so the progress line and the
manifest cannot disagree.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from clineval.console import make_console

if TYPE_CHECKING:
    from clineval.concurrency import RunCallState

T = TypeVar("T")
log = logging.getLogger("clineval")

_quiet = False
console = make_console(stderr=True)

# Counters a task may bump besides "done"; shown in this order.
COUNTERS = ("cache_hits", "judge_errors")
# Read from the run's call counters (RunCallState), never bumped by a task.
DERIVED = ("retries",)
_LOG_EVERY_S = 5.0


def set_quiet(quiet: bool) -> None:
    global _quiet
    _quiet = quiet


def _as_lines() -> bool:
    """Log lines instead of bars: with --quiet, and whenever stderr is not a terminal. A bar
    written to a log file is its last frame, cut to 80 columns (rich's width without a
    terminal): the counters at its end were lost. Whole lines at an interval keep them."""
    return _quiet or not console.is_terminal


def _line(text: str) -> None:
    """One whole progress line: through logging with --quiet (its INFO level is on then),
    else printed to stderr as it is (never wrapped or cut)."""
    if _quiet:
        log.info("%s", text)
    else:
        print(text, file=sys.stderr, flush=True)


def make_progress() -> Progress:
    """A rich Progress with done/total, rate-friendly columns and ETA; disabled when quiet."""
    return Progress(
        TextColumn("{task.description}", style="bold", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        TextColumn("{task.fields[status]}", markup=False),
        console=console,
        disable=_quiet,
        transient=False,
    )


def track(items: Iterable[T], total: int | None = None, description: str = "") -> Iterator[T]:
    """Iterate with a progress bar (or a single log line when quiet)."""
    if _as_lines():
        _line(f"{description} ({total if total is not None else '?'} items)")
        yield from items
        return
    with make_progress() as progress:
        task_id = progress.add_task(description, total=total, status="")
        for item in items:
            yield item
            progress.advance(task_id)


class TaskProgress:
    """Counters of one task's model calls, rendered as a bar or as periodic log lines.

    Thread-safe (a lock around the counters), so a thread pool or an asyncio loop's callbacks
    may all report into one instance. The rate counts items finished in this process only
    (cache hits excluded), so a resumed run's ETA is not flattered by what was already stored.
    With `calls`, "retries" is the HTTP retries counted there since this display opened.
    """

    def __init__(
        self,
        description: str,
        total: int | None,
        progress: Progress | None,
        calls: RunCallState | None = None,
    ) -> None:
        self.description = description
        self.total = total
        self.done = 0
        self._counts: dict[str, int] = dict.fromkeys(COUNTERS, 0)
        self._calls = calls
        self._retries_before = calls.retries() if calls is not None else 0
        self._progress = progress
        self._task_id: TaskID | None = None
        self._lock = threading.Lock()
        self._started = time.monotonic()
        self._last_log = self._started
        if progress is not None:
            self._task_id = progress.add_task(description, total=total, status="", eta="?")

    # -- what tasks call ---------------------------------------------------------------------
    def advance(self, n: int = 1, *, cached: bool = False) -> None:
        """n items finished; `cached=True` when they came from the run store, not a model."""
        with self._lock:
            self.done += n
            if cached:
                self._counts["cache_hits"] += n
            self._refresh()

    def count(self, counter: str, n: int = 1) -> None:
        """Bump a counter: "judge_errors" (or any other name, shown as well)."""
        if counter in DERIVED:
            # A second count of the retries is how the line once said 0 beside 48.
            raise ValueError(f"{counter!r} is read from the run's call counters, not counted")
        with self._lock:
            self._counts[counter] = self._counts.get(counter, 0) + n
            self._refresh()

    @property
    def counts(self) -> dict[str, int]:
        """The counters, "retries" included (from the run's call counters) when there are."""
        counts = dict(self._counts)
        if self._calls is not None:
            counts = {
                "cache_hits": counts.pop("cache_hits"),
                "retries": self._calls.retries() - self._retries_before,
                **counts,
            }
        return counts

    # -- derived figures ----------------------------------------------------------------------
    def rate(self) -> float:
        """Items per second made by a model call in this process (cache hits excluded)."""
        elapsed = max(time.monotonic() - self._started, 1e-9)
        return (self.done - self._counts["cache_hits"]) / elapsed

    def eta_seconds(self) -> float | None:
        if self.total is None:
            return None
        rate = self.rate()
        remaining = max(self.total - self.done, 0)
        if remaining == 0:
            return 0.0
        return remaining / rate if rate > 0 else None

    def status(self) -> str:
        parts = [f"{self.rate():.1f} calls/s"]
        parts += [f"{name.replace('_', ' ')} {value}" for name, value in self.counts.items()]
        return " · ".join(parts)

    def summary(self) -> str:
        total = "?" if self.total is None else str(self.total)
        return f"{self.description}: {self.done}/{total} · {self.status()} · ETA {self._eta_text()}"

    def _eta_text(self) -> str:
        eta = self.eta_seconds()
        if eta is None:
            return "?"
        minutes, seconds = divmod(round(eta), 60)
        return f"{minutes}:{seconds:02d}"

    def _refresh(self) -> None:
        if self._progress is not None and self._task_id is not None:
            self._progress.update(
                self._task_id, completed=self.done, status=self.status(), eta=self._eta_text()
            )
            return
        now = time.monotonic()
        if now - self._last_log >= _LOG_EVERY_S:
            self._last_log = now
            _line(self.summary())


@contextmanager
def task_progress(
    description: str, total: int | None, calls: RunCallState | None = None
) -> Iterator[TaskProgress]:
    """A per-task progress display; with --quiet or without a terminal, whole lines every few
    seconds and at the end.

    `calls`: the run's call counters (`ctx.runtime.calls`, a RunCallState), for tasks that
    make model calls: the display then shows their retries."""
    if _as_lines():
        tp = TaskProgress(description, total, None, calls)
        _line(f"{description}: started ({'?' if total is None else total} items)")
        try:
            yield tp
        finally:
            _line(tp.summary())
        return
    progress = Progress(
        TextColumn("{task.description}", style="bold", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA {task.fields[eta]}", markup=False),
        TextColumn("{task.fields[status]}", markup=False),
        console=console,
        transient=False,
    )
    with progress:
        yield TaskProgress(description, total, progress, calls)


def counters_of(tp: TaskProgress) -> dict[str, Any]:
    """The final counters, e.g. to record them in a run's manifest."""
    return {"done": tp.done, "total": tp.total, **tp.counts}
