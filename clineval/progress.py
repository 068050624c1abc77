"""Progress of every long step of a run: bars on a terminal, whole timestamped lines otherwise.

One module, three displays, chosen once per step:
- bars: stderr is a terminal and not --quiet. One rich display holds a row per open step
  (nested and parallel steps share it: rich allows one live display at a time).
- lines: stderr is a file or a pipe (a batch job's log). A step prints a line when it starts,
  one every interval while it runs (`CLINEVAL_PROGRESS_INTERVAL` seconds, default
  DEFAULT_INTERVAL_S), and one when it ends. A bar written to a file would be its last frame,
  cut to 80 columns; and a line only when an item finishes leaves a log silent for minutes
  while a model thinks or a CRF trains. The line at an interval says so when nothing finished
  since the last one (a heartbeat), so a silent log means a stopped process.
- quiet (--quiet): nothing (as `pip -q`, inspect's `--display none`): warnings, errors and
  the results stay, and the manifest records every step's counters.

Entry points:
- `step(description, total, unit)`: one long step (training, predicting documents); `phase`
  moves it on to its next named part (CRF: reading, features, L-BFGS) in the same row.
- `task_progress(description, total, calls)`: a step of model calls. With the run's call
  counters (`calls=`, the RunCallState whose figures manifest.json["llm_calls"] records) it
  shows cache hits and retries; counters a task declares (`counters=("judge_errors",)`) show
  from the start, others once bumped, so a step shows no counter it cannot have.
- `track(items, total, description)`: a step over an iterable.

Retries are not counted here: they are read from the run's call counters, the retries made
since the display opened. One counter, so the progress line and the manifest cannot disagree.

Long module: one `Step` serves the three displays (its figures, its lines and their ticker,
its row of the shared bars); split apart, each piece would reach into the others' state.
"""

from __future__ import annotations

import math
import os
import sys
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from clineval.console import make_console
from clineval.errors import InputError

if TYPE_CHECKING:
    from clineval.concurrency import RunCallState

T = TypeVar("T")
Mode = Literal["bars", "lines", "quiet"]

INTERVAL_ENV = "CLINEVAL_PROGRESS_INTERVAL"
# A log line every 20 s: a 7-minute step writes ~20 lines, and a stalled one is seen within
# half a minute. (`clineval --help`, --quiet, names it: the CLI does not import this module
# before a command runs.)
DEFAULT_INTERVAL_S = 20.0
# A bar's figures are updated at most this often (perf/bench_run_summary.py).
_BAR_EVERY_S = 0.1
# Read from the run's call counters (RunCallState), never bumped by a task.
DERIVED = ("retries",)

_quiet = False
console = make_console(stderr=True)
_print_lock = threading.Lock()


def set_quiet(quiet: bool) -> None:
    global _quiet
    _quiet = quiet


def mode() -> Mode:
    """How progress is shown now: see the module doc."""
    if _quiet:
        return "quiet"
    return "bars" if console.is_terminal else "lines"


def interval_seconds() -> float:
    """Seconds between progress lines: `CLINEVAL_PROGRESS_INTERVAL`, else the default."""
    raw = os.environ.get(INTERVAL_ENV, "").strip()
    if not raw:
        return DEFAULT_INTERVAL_S
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise InputError(f"${INTERVAL_ENV}={raw!r}: expected a number of seconds above 0")
    return value


class _CurrentStderr:
    """sys.stderr as it is at each write, for the logging handler: rich's live display swaps
    it while bars show (a line written to the original would cut through the bars)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


current_stderr = _CurrentStderr()


def _line(text: str) -> None:
    """One whole line on stderr, time-stamped; lines of parallel steps never interleave."""
    stamp = time.strftime("%H:%M:%S")
    with _print_lock:
        print(f"{stamp} {text}", file=sys.stderr, flush=True)


# ---- figures as text ------------------------------------------------------------------------


def _two_figures(value: float) -> str:
    """Two significant figures (no exponent), whole numbers from 10 up: 0.57, 3.4, 37, 120."""
    if value >= 9.95:  # what rounds to 10.0 has two figures as 10
        return f"{value:,.0f}"
    if value >= 0.995:
        return f"{value:.1f}"
    return f"{value:.2g}"


def rate_text(per_second: float, unit: str) -> str:
    """A rate that never rounds to zero: per second from 1/s, else per minute, else per hour."""
    if per_second <= 0:
        return f"0 {unit}/min"
    if per_second >= 1:
        return f"{_two_figures(per_second)} {unit}/s"
    if per_second * 60 >= 1:
        return f"{_two_figures(per_second * 60)} {unit}/min"
    return f"{_two_figures(per_second * 3600)} {unit}/h"


def duration_text(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


# ---- the shared terminal display ------------------------------------------------------------


class _Bars:
    """One rich display for every open step (rich refuses a second live display)."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._progress: Progress | None = None
        self._open = 0

    def add(self, description: str, total: int | None, unit: str) -> TaskID:
        with self._lock:
            if self._progress is None:
                self._progress = Progress(
                    # as written: a model spec's `[...]` is no markup
                    TextColumn("{task.description}", style="bold", markup=False),
                    BarColumn(),
                    MofNCompleteColumn(),
                    TextColumn("{task.fields[unit]}"),
                    TimeElapsedColumn(),
                    TextColumn("{task.fields[eta]}"),
                    TextColumn("{task.fields[status]}", markup=False),
                    console=console,
                    transient=False,
                )
                self._progress.start()
            self._open += 1
            return self._progress.add_task(description, total=total, unit=unit, eta="", status="")

    def update(self, task_id: TaskID, *, close: bool = False, **fields: Any) -> None:
        """New figures for a row; `close`: its step ended (the last one stops the display)."""
        with self._lock:
            if self._progress is None:
                return
            self._progress.update(task_id, **fields)
            self._open -= close
            if self._open <= 0:
                self._progress.stop()
                self._progress, self._open = None, 0


_bars = _Bars()


# ---- one step -------------------------------------------------------------------------------


class Step:
    """One long step of a run: how far it is, at what rate, with which counters.

    Thread-safe (a lock around the figures), so a thread pool or an asyncio loop's callbacks
    may all report into one instance. The rate counts items finished in this process only
    (cache hits excluded), so a resumed run's ETA is not flattered by what was already stored.
    With `calls`, "retries" is the HTTP retries counted there since this display opened.
    """

    def __init__(
        self,
        description: str,
        total: int | None,
        *,
        unit: str = "items",
        calls: RunCallState | None = None,
        counters: Sequence[str] = (),
        display: Mode | None = None,
    ) -> None:
        self.description = description
        self.total = total
        self.unit = unit
        self.done = 0
        self._calls = calls
        self._declared = tuple(counters)
        self._counts: dict[str, int] = dict.fromkeys(self._declared, 0)
        if calls is not None:
            self._counts = {"cache_hits": 0, **self._counts}
        self._cached = 0  # items served from the run store (never part of the rate)
        self._retries_before = calls.retries() if calls is not None else 0
        self._display: Mode = display or mode()
        self._lock = threading.Lock()
        self._started = time.monotonic()
        self._last_advance = self._started
        self._done_at_last_line = 0
        self._last_line_at = self._started
        self._last_bar = 0.0
        self._task_id: TaskID | None = None
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    # -- what tasks call ---------------------------------------------------------------------
    def advance(self, n: int = 1, *, cached: bool = False) -> None:
        """n items finished; `cached=True` when they came from the run store, not a model."""
        with self._lock:
            self.done += n
            self._last_advance = time.monotonic()
            if cached:
                self._cached += n
                self._counts["cache_hits"] = self._counts.get("cache_hits", 0) + n
        self._refresh()

    def count(self, counter: str, n: int = 1) -> None:
        """Bump a counter ("judge_errors", "invalid", ...); shown from its first bump on."""
        if counter in DERIVED:
            # A second count of the retries is how the line once said 0 beside 48.
            raise ValueError(f"{counter!r} is read from the run's call counters, not counted")
        with self._lock:
            self._counts[counter] = self._counts.get(counter, 0) + n
        self._refresh()

    def phase(self, description: str, total: int | None, unit: str | None = None) -> None:
        """The step moves on to its next part (same row, figures from zero): the part before
        gets its end line."""
        self._end_line("done")
        with self._lock:
            self.description = description
            self.total = total
            self.unit = unit or self.unit
            self.done = 0
            self._cached = 0
            self._counts = dict.fromkeys(self._counts, 0)
            self._started = self._last_advance = time.monotonic()
            self._done_at_last_line = 0
        if self._task_id is not None:
            _bars.update(
                self._task_id,
                description=description,
                total=total,
                completed=0,
                unit=self.unit,
                eta="",
                status="",
            )
        self._start_line()

    @property
    def counts(self) -> dict[str, int]:
        """The counters, "retries" included (from the run's call counters) when there are."""
        counts = dict(self._counts)
        if self._calls is not None:
            counts = {
                "cache_hits": counts.pop("cache_hits", 0),
                "retries": self._calls.retries() - self._retries_before,
                **counts,
            }
        return counts

    # -- derived figures ----------------------------------------------------------------------
    def elapsed(self) -> float:  # seconds since the step (or its part) began
        return time.monotonic() - self._started

    def rate(self) -> float:
        """Items per second made in this process (cache hits excluded)."""
        return (self.done - self._cached) / max(self.elapsed(), 1e-9)

    def eta_seconds(self) -> float | None:
        if self.total is None:
            return None
        remaining = max(self.total - self.done, 0)
        if remaining == 0:
            return 0.0
        rate = self.rate()
        return remaining / rate if rate > 0 else None

    def status(self) -> str:
        """The rate (once two items were made here: the rate of one is the elapsed time, shown
        anyway) and the counters."""
        parts = [rate_text(self.rate(), self.unit)] if self.done - self._cached >= 2 else []
        parts += [f"{name.replace('_', ' ')} {value:,}" for name, value in self.counts.items()]
        return " · ".join(parts)

    def _eta_text(self) -> str:
        eta = self.eta_seconds()
        return "?" if eta is None else duration_text(eta)

    def _position(self) -> str:
        total = "?" if self.total is None else f"{self.total:,}"
        return f"{self.done:,}/{total} {self.unit}"

    def summary(self) -> str:
        """The step now, as one line (without the time stamp)."""
        parts = [self._position(), f"{duration_text(self.elapsed())} elapsed"]
        status = self.status()
        if status:
            parts.append(status)
        if self.total is not None:
            parts.append(f"ETA {self._eta_text()}")
        return f"{self.description}: {' · '.join(parts)}"

    # -- display ------------------------------------------------------------------------------
    def _refresh(self) -> None:
        if self._task_id is not None:
            now = time.monotonic()
            if now - self._last_bar < _BAR_EVERY_S and self.done != self.total:
                return  # rich redraws 10 times a second: more updates cost, show nothing
            self._last_bar = now
            _bars.update(
                self._task_id,
                completed=self.done,
                status=self.status(),
                eta=f"ETA {self._eta_text()}" if self.total is not None else "",
            )

    def _start_line(self) -> None:
        self._last_line_at = time.monotonic()
        if self._display != "lines":
            return
        size = "" if self.total is None else f" ({self.total:,} {self.unit})"
        _line(f"{self.description}: started{size}")

    def _end_line(self, how: str) -> None:
        if self._display != "lines":
            return
        status = self.status()
        _line(
            f"{self.description}: {how} at {self._position()} in "
            f"{duration_text(self.elapsed())}" + (f" · {status}" if status else "")
        )

    def _tick(self, interval: float) -> None:
        """A line `interval` seconds after the step's last line, until the step closes."""
        while True:
            wait = self._last_line_at + interval - time.monotonic()
            if wait > 0:
                if self._stop.wait(wait):
                    return
                continue
            with self._lock:
                quiet_for = time.monotonic() - self._last_advance
                stalled = self.done == self._done_at_last_line
                self._done_at_last_line = self.done
            text = self.summary()
            if stalled:
                # The heartbeat: the process lives, and the log says how long nothing finished.
                text += f" · still working, nothing finished for {duration_text(quiet_for)}"
            self._last_line_at = time.monotonic()
            _line(text)

    def open(self) -> None:
        if self._display == "bars":
            self._task_id = _bars.add(self.description, self.total, self.unit)
            return
        self._start_line()
        if self._display == "lines":
            interval = interval_seconds()
            self._ticker = threading.Thread(
                target=self._tick, args=(interval,), name="clineval-progress", daemon=True
            )
            self._ticker.start()

    def close(self, how: str) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        if self._task_id is not None:
            _bars.update(self._task_id, close=True, completed=self.done, status=self.status())
            return
        self._end_line(how)


TaskProgress = Step  # the name tasks' type hints use


@contextmanager
def step(
    description: str,
    total: int | None,
    *,
    unit: str = "items",
    calls: RunCallState | None = None,
    counters: Sequence[str] = (),
) -> Iterator[Step]:
    """One long step, shown as the module doc says; its end line says done or stopped."""
    interval_seconds()  # a bad $CLINEVAL_PROGRESS_INTERVAL is an error before any work
    current = Step(description, total, unit=unit, calls=calls, counters=counters)
    current.open()
    how = "stopped"
    try:
        yield current
        how = "done"
    finally:
        current.close(how)


@contextmanager
def task_progress(
    description: str,
    total: int | None,
    calls: RunCallState | None = None,
    *,
    counters: Sequence[str] = (),
    unit: str | None = None,
) -> Iterator[Step]:
    """A step of model calls. `calls`: the run's call counters (`ctx.runtime.calls`) when the
    step calls models (the display then shows cache hits and retries); `counters`: what the
    task counts that shows from the start, e.g. ("judge_errors",) for a judged task."""
    with step(
        description,
        total,
        unit=unit or ("calls" if calls is not None else "items"),
        calls=calls,
        counters=counters,
    ) as current:
        yield current


def track(
    items: Iterable[T], total: int | None = None, description: str = "", unit: str = "items"
) -> Iterator[T]:
    """Iterate with a step's display."""
    with step(description, total, unit=unit) as current:
        for item in items:
            yield item
            current.advance()


def counters_of(tp: Step) -> dict[str, Any]:
    """The final counters, e.g. to record them in a run's manifest."""
    return {"done": tp.done, "total": tp.total, **tp.counts}
