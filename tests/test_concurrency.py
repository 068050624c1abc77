"""gather_bounded: asyncio.gather's results, with at most BUDGET_PER_SLOT x limit live calls."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Coroutine, Iterator
from typing import Any

import pytest

from clineval.concurrency import BUDGET_PER_SLOT, RunCallState, gather_bounded


def test_results_in_order_and_never_more_live_coroutines_than_the_budget() -> None:
    state = RunCallState(limit=3)
    budget = BUDGET_PER_SLOT * 3
    live = 0
    most_live = 0
    created = finished = 0

    async def call(i: int) -> int:
        nonlocal live, most_live, finished
        live += 1
        most_live = max(most_live, live)
        await asyncio.sleep(0.001 * (i % 5))  # finish out of order
        live -= 1
        finished += 1
        return i * i

    def calls():  # type: ignore[no-untyped-def]
        nonlocal created
        for i in range(200):
            created += 1
            assert created - finished <= budget  # created only once a token is held
            yield call(i)

    async def main() -> list[int]:
        first, second = await asyncio.gather(
            gather_bounded(state, calls()), gather_bounded(state, (call(i) for i in range(50)))
        )
        return first + second

    results = asyncio.run(main())
    assert results == [i * i for i in range(200)] + [i * i for i in range(50)]
    # the budget is shared by both gathers of the run
    assert most_live == budget


def test_generator_is_advanced_only_when_a_token_is_free() -> None:
    state = RunCallState(limit=1)  # budget 4
    started: list[int] = []

    async def main() -> None:
        release = asyncio.Event()

        async def call(i: int) -> int:
            await release.wait()
            return i

        def calls():  # type: ignore[no-untyped-def]
            for i in range(10):
                started.append(i)
                yield call(i)

        task = asyncio.ensure_future(gather_bounded(state, calls()))
        await asyncio.sleep(0.02)
        assert started == list(range(BUDGET_PER_SLOT))  # 4 created, the 5th waits for a token
        release.set()
        assert await task == list(range(10))

    asyncio.run(main())


def test_first_error_propagates_as_is_and_cancels_the_rest() -> None:
    state = RunCallState(limit=2)
    cancelled: list[int] = []

    async def call(i: int) -> int:
        try:
            if i == 3:
                await asyncio.sleep(0.01)
                raise KeyError("boom")
            await asyncio.sleep(10)
            return i
        except asyncio.CancelledError:
            cancelled.append(i)
            raise

    async def main() -> None:
        with pytest.raises(KeyError, match="boom"):  # not an ExceptionGroup
            await gather_bounded(state, (call(i) for i in range(100)))

    asyncio.run(main())
    # the calls alive when call 3 failed were cancelled; none after it were created
    assert sorted(cancelled) == [i for i in range(2 * BUDGET_PER_SLOT) if i != 3]


def test_empty_input_and_the_budget_is_returned() -> None:
    state = RunCallState(limit=1)

    async def main() -> tuple[list[int], int]:
        empty: list[int] = await gather_bounded(state, iter([]))

        async def one() -> int:
            return 1

        ones = await gather_bounded(state, (one() for _ in range(20)))
        return empty + ones, state.call_budget()._value

    results, free = asyncio.run(main())
    assert results == [1] * 20
    assert free == BUDGET_PER_SLOT  # every token came back


def test_model_calls_run_on_uvloop_unless_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    import gc

    import uvloop

    from clineval.concurrency import EVENT_LOOP_ENV, run_model_calls

    async def loop_and_frozen() -> tuple[type, bool]:
        return type(asyncio.get_running_loop()), gc.get_freeze_count() > 0

    monkeypatch.delenv(EVENT_LOOP_ENV, raising=False)
    loop_type, frozen = run_model_calls(loop_and_frozen())
    assert issubclass(loop_type, uvloop.Loop)
    assert frozen  # the heap from before the phase is left out of collections ...
    assert gc.get_freeze_count() == 0  # ... and given back afterwards

    monkeypatch.setenv(EVENT_LOOP_ENV, "asyncio")
    loop_type, _ = run_model_calls(loop_and_frozen())
    assert not issubclass(loop_type, uvloop.Loop)
    assert issubclass(loop_type, asyncio.BaseEventLoop)


def test_an_error_in_the_generator_cancels_what_it_started() -> None:
    state = RunCallState(limit=1)

    async def call(i: int) -> int:
        await asyncio.sleep(10)
        return i

    def calls():  # type: ignore[no-untyped-def]
        yield call(0)
        raise ValueError("bad case file")

    async def main() -> None:
        with pytest.raises(ValueError, match="bad case file"):
            await gather_bounded(state, calls())
        assert asyncio.all_tasks() == {asyncio.current_task()}  # nothing left running
        assert state.call_budget()._value == BUDGET_PER_SLOT  # tokens all given back

    asyncio.run(main())


def test_errors_after_the_first_are_retrieved(caplog: pytest.LogCaptureFixture) -> None:
    """Calls failing together (every commit on a full disk): the first error ends the gather,
    the others must not each be logged as "Task exception was never retrieved" (a traceback
    each, ~80 lines on a disk-full run)."""
    state = RunCallState(limit=8)

    async def call(i: int) -> int:
        await asyncio.sleep(0)
        raise OSError(28, f"full {i}")

    async def main() -> None:
        await gather_bounded(state, (call(i) for i in range(16)))

    with caplog.at_level("ERROR", logger="asyncio"), pytest.raises(OSError, match="full"):
        asyncio.run(main())
    gc.collect()  # an unretrieved task exception is logged when the task is freed
    assert [r.getMessage() for r in caplog.records if "never retrieved" in r.getMessage()] == []


def test_gathers_running_together_take_turns() -> None:
    """Two gathers sharing the budget start their coroutines in turn: the first does not take
    every free token (one ClinConsensus case with all its calls in flight, the others none)."""
    state = RunCallState(3)  # budget 6
    started: list[str] = []
    release = asyncio.Event()

    async def call(name: str) -> str:
        started.append(name)
        await release.wait()
        return name

    async def main() -> list[list[str]]:
        def calls(group: str) -> Iterator[Coroutine[Any, Any, str]]:
            return (call(f"{group}{i}") for i in range(5))

        gathers = [asyncio.ensure_future(gather_bounded(state, calls(g))) for g in "ab"]
        while len(started) < BUDGET_PER_SLOT * 3:  # the budget is full
            await asyncio.sleep(0)
        assert sorted(started) == ["a0", "a1", "a2", "b0", "b1", "b2"]
        release.set()
        return list(await asyncio.gather(*gathers))

    assert asyncio.run(main()) == [[f"a{i}" for i in range(5)], [f"b{i}" for i in range(5)]]


# ---- the hand-off semaphore ---------------------------------------------------------------
async def _script(sem: Any, n_tasks: int, limit: int) -> tuple[list[int], int]:
    """Tasks that take the semaphore in turn, some cancelled while they wait and one right
    after it was handed a token: the order of the holders and the most held at once."""
    order: list[int] = []
    held = most = 0

    async def holder(i: int) -> None:
        nonlocal held, most
        async with sem:
            held += 1
            most = max(most, held)
            order.append(i)
            await asyncio.sleep(0)
            await asyncio.sleep(0)
            held -= 1

    tasks = [asyncio.create_task(holder(i)) for i in range(n_tasks)]
    await asyncio.sleep(0)  # every task queued: the first `limit` hold, the rest wait
    for i in (limit + 1, limit + 4, n_tasks - 1):
        tasks[i].cancel()  # cancelled while waiting
    await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 10)  # no lost token
    return order, most


def test_the_handoff_semaphore_acts_as_asyncio_s() -> None:
    from clineval.concurrency import HandoffSemaphore

    for limit in (1, 3):
        mine = asyncio.run(_script(HandoffSemaphore(limit), 12, limit))
        theirs = asyncio.run(_script(asyncio.Semaphore(limit), 12, limit))
        assert mine == theirs  # the same holders, in the same order
        assert mine[1] == limit and len(mine[0]) == 12 - 3


def test_a_token_handed_to_a_cancelled_waiter_is_passed_on() -> None:
    from clineval.concurrency import HandoffSemaphore

    async def main() -> tuple[list[str], int]:
        sem = HandoffSemaphore(1)
        got: list[str] = []

        async def take(name: str) -> None:
            async with sem:
                got.append(name)

        await sem.acquire()
        first, second = asyncio.create_task(take("a")), asyncio.create_task(take("b"))
        await asyncio.sleep(0)  # both wait
        sem.release()  # the token is handed to "a", whose task has not run yet ...
        first.cancel()  # ... and is cancelled before it does: "b" must get the token
        # bounded: a lost token would leave "b" waiting for ever
        await asyncio.wait_for(asyncio.gather(first, second, return_exceptions=True), 10)
        return got, sem._value

    assert asyncio.run(main()) == (["b"], 1)  # and the token is back
