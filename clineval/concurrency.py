"""Per-run shared state for model calls: the ONE concurrency limit and the call counters.

A run may open several chat models at once (a candidate and several judges). They must share
one limit (`--concurrency`), or a run with three judges would put three times the load a user
asked for on the servers. The state belongs to the run (`ctx.runtime.calls`, see
clineval.models.runtime), so two runs in the same process (tests) never share a limit, and
everything dies with the run.

asyncio semaphores belong to one event loop. Tasks may call `asyncio.run` more than once per
run (candidate generation, then judging), so the semaphore is kept per running loop; only one
loop drives a run at a time, so the limit still holds.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import os
import threading
import weakref
from collections import Counter, deque
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")

# Model-call coroutines alive at once per concurrency slot (gather_bounded).
BUDGET_PER_SLOT = 2


class HandoffSemaphore:
    """A FIFO semaphore whose release hands its token to the first live waiter at once.

    asyncio.Semaphore leaves a woken waiter in its queue until that waiter's task runs, and
    each release walks past every such waiter to find one not yet woken: with hundreds of
    releases per loop iteration (a finished judge call each) that walk was a visible share of
    a judged run's CPU (perf/bench_semaphore.py compares the two, BENCHMARKS.md). Here a
    release takes its waiter off the queue, so a free token (`_value` above 0) means no live
    waiter, and `acquire` takes it without a wait. A waiter cancelled while waiting stays
    queued, done, and is skipped; one cancelled after it was handed a token passes it on.
    """

    def __init__(self, value: int) -> None:
        if value < 0:
            raise ValueError("a semaphore's value must be >= 0")
        self._value = value
        self._waiters: deque[asyncio.Future[None]] = deque()

    def locked(self) -> bool:
        return self._value == 0

    async def acquire(self) -> bool:
        if self._value > 0:
            self._value -= 1
            return True
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():  # handed a token: not taken
                self.release()
            raise
        return True

    def release(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self._value += 1

    async def __aenter__(self) -> None:
        await self.acquire()

    async def __aexit__(self, *exc: object) -> None:
        self.release()


@dataclass
class ModelCallStats:
    """Counters for one model label within this process's part of the run."""

    requests: int = 0  # chat() calls
    cache_hits: int = 0  # answered from the run store without HTTP
    reused: int = 0  # of cache_hits: answered by a --reuse directory (copied into the store)
    http_attempts: int = 0  # HTTP requests sent (first tries + retries)
    retries: int = 0
    errors: Counter[str] = field(default_factory=Counter)  # ChatError kind -> count
    prompt_tokens: int = 0  # tokens of calls made now (cached calls are not re-counted)
    completion_tokens: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "cache_hits": self.cache_hits,
            "reused": self.reused,
            "http_attempts": self.http_attempts,
            "retries": self.retries,
            "errors": dict(self.errors),
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
        }


class RunCallState:
    """The run's concurrency limit, per-model counters and shared local servers."""

    def __init__(self, limit: int, budget: int | None = None):
        if limit < 1:
            raise ValueError("concurrency limit must be >= 1")
        self.limit = limit
        # call coroutines alive at once (call_budget); batch mode lifts it
        self.budget = budget if budget is not None else BUDGET_PER_SLOT * limit
        self.stats: dict[str, ModelCallStats] = {}
        self._semaphores: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, HandoffSemaphore]
        self._semaphores = weakref.WeakKeyDictionary()
        self._budgets: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, HandoffSemaphore]
        self._budgets = weakref.WeakKeyDictionary()
        self._slot_limits: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, dict[str, HandoffSemaphore]
        ] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()
        # Shared resources keyed by name (e.g. one llama.cpp server per GGUF for the run).
        self.resources: dict[str, Any] = {}

    def semaphore(self) -> HandoffSemaphore:
        """The run-wide limit for the running event loop."""
        loop = asyncio.get_running_loop()
        with self._lock:
            sem = self._semaphores.get(loop)
            if sem is None:
                sem = HandoffSemaphore(self.limit)
                self._semaphores[loop] = sem
            return sem

    def server_slots(self, base_url: str, slots: int) -> HandoffSemaphore:
        """The decoding slots of a local server at `base_url` on the running loop, shared by
        every model of the run that calls it (candidate and judge on one GGUF). A call waits
        here, untimed, until a slot is free, so its --timeout counts the server's work only:
        requests the server would queue would otherwise time out and be sent again while the
        server still computes them."""
        loop = asyncio.get_running_loop()
        with self._lock:
            per_loop = self._slot_limits.setdefault(loop, {})
            sem = per_loop.get(base_url)
            if sem is None:
                sem = per_loop[base_url] = HandoffSemaphore(slots)
            return sem

    def call_budget(self) -> HandoffSemaphore:
        """How many model-call coroutines may exist at once on the running loop (see
        `gather_bounded`): twice the concurrency limit, so a free slot always has a call
        waiting for it."""
        loop = asyncio.get_running_loop()
        with self._lock:
            sem = self._budgets.get(loop)
            if sem is None:
                sem = HandoffSemaphore(self.budget)
                self._budgets[loop] = sem
            return sem

    def model_stats(self, label: str) -> ModelCallStats:
        with self._lock:
            return self.stats.setdefault(label, ModelCallStats())

    def retries(self) -> int:
        """HTTP retries of every model so far: what the progress line shows and
        manifest.json["llm_calls"]["totals"]["retries"] records (one counter for both)."""
        with self._lock:
            return sum(s.retries for s in self.stats.values())

    def totals(self) -> dict[str, Any]:
        """Sum over models: the numbers manifest.json["llm_calls"]["totals"] records."""
        total = ModelCallStats()
        for s in self.stats.values():
            total.requests += s.requests
            total.cache_hits += s.cache_hits
            total.reused += s.reused
            total.http_attempts += s.http_attempts
            total.retries += s.retries
            total.errors.update(s.errors)
            total.prompt_tokens += s.prompt_tokens
            total.completion_tokens += s.completion_tokens
        return total.as_dict()


async def gather_bounded(state: RunCallState, coros: Iterable[Coroutine[Any, Any, T]]) -> list[T]:
    """Like asyncio.gather over `coros` (results in order), but each coroutine is created only
    when the run's call budget has room; the budget is shared by every gather of the run.

    Why: 27,000 judge calls gathered at once are 27,000 live tasks, coroutines and futures
    (~400k objects) for the whole run; every full garbage collection walks all of them and
    stalls the event loop (measured: ~2 s of GC in a 27,000-call run, see BENCHMARKS.md).
    With the budget about 2x --concurrency calls exist at a time and the slots stay full; a
    finished task is dropped at once (only its result is kept).

    Pass a generator: it is advanced only after a budget token is held. Gathers running at
    the same time take turns, one coroutine each (FIFO on the budget). If one coroutine
    raises, the others are cancelled and that exception propagates as it is. Do not nest: a
    bounded coroutine that waits for another gather_bounded may wait forever.
    """
    budget = state.call_budget()
    results: list[Any] = []
    running: set[asyncio.Task[Any]] = set()
    finished: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    producing = True

    def on_done(task: asyncio.Task[Any], index: int) -> None:
        budget.release()
        running.discard(task)
        if finished.done():
            # Seen, though another error already ended the gather: else asyncio logs each of
            # them ("Task exception was never retrieved", a traceback each) when it is freed.
            if not task.cancelled():
                task.exception()
            return
        if task.cancelled():
            finished.set_exception(asyncio.CancelledError())
        elif (error := task.exception()) is not None:
            finished.set_exception(error)
        else:
            results[index] = task.result()
            if not running and not producing:
                finished.set_result(None)

    iterator = iter(coros)
    try:
        while not finished.done():
            await budget.acquire()
            if finished.done():  # a coroutine failed while this waited: start no more
                budget.release()
                break
            try:
                coro = next(iterator)
            except StopIteration:
                budget.release()
                break
            except BaseException:  # the generator's own error
                budget.release()
                raise
            results.append(None)
            task = asyncio.create_task(coro)
            running.add(task)
            task.add_done_callback(functools.partial(on_done, index=len(results) - 1))
            # Take turns with the other gathers of the run: a free budget token is taken
            # without a wait, so without this the first gather would take every free token
            # (one ClinConsensus case with all its 30 calls in flight, on one replica, while
            # the other cases wait: replicas place keys by the cases active on them).
            await asyncio.sleep(0)
        producing = False
        if not running and not finished.done():
            finished.set_result(None)
        await finished
    finally:
        for task in running:
            task.cancel()
        if running:
            await asyncio.gather(*running, return_exceptions=True)
        if finished.done() and not finished.cancelled():
            finished.exception()  # seen (if we were cancelled first, nobody else will look)
    return results


EVENT_LOOP_ENV = "CLINEVAL_EVENT_LOOP"  # "asyncio" turns uvloop off


def _loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's event loop when it is installed (and not turned off), else asyncio's own."""
    if os.environ.get(EVENT_LOOP_ENV, "").strip().lower() == "asyncio":
        return None
    try:
        import uvloop
    except ImportError:
        return None
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory


def run_model_calls(main: Coroutine[Any, Any, T]) -> T:
    """asyncio.run for a phase of model calls: on uvloop, with the heap from before it frozen.

    uvloop: the same aiohttp calls cost 12-14% less CPU on its event loop than on asyncio's
    (measured, BENCHMARKS.md); set CLINEVAL_EVENT_LOOP=asyncio to run without it.

    gc.freeze(): every full garbage collection walks every tracked object; a run's data,
    imported modules and loaded records (~100k objects) live through the whole phase and are
    not garbage, yet the short-lived request objects trigger a full pass every ~2,000 calls.
    Frozen, they are left out of those passes until the phase ends (measured on a 27,900-call
    ClinConsensus run: GC time 1.0 s -> 0.5 s).
    """
    already_frozen = gc.get_freeze_count() > 0  # an embedding program froze its own heap
    gc.freeze()
    try:
        with asyncio.Runner(loop_factory=_loop_factory()) as runner:
            return runner.run(main)
    finally:
        if not already_frozen:
            gc.unfreeze()
