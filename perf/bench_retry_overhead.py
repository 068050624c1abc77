"""Client CPU per call of a retry wrapper on the success path: clineval's plain loop over
clineval.retry.RetryPolicy against tenacity's AsyncRetrying and stamina's retry_context.

Why it matters: a judge run makes tens of thousands of calls and a whole call costs ~330 us of
client CPU (BENCHMARKS.md, judge throughput), so a wrapper that adds 25-30 us per call is
+8-9%. Every call here succeeds at once (the overwhelmingly common case); the wrapped attempt
is an awaited no-op, so what is measured is the wrapper alone. Alternatives that are not
installed are skipped (`pip install tenacity stamina`).

    python -m perf.bench_retry_overhead
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable

from clineval.retry import RetryPolicy

CALLS = 20_000
ROUNDS = 3


class _Failed(Exception):
    retryable = True


async def _attempt() -> int:
    return 1


async def clineval_loop(n: int) -> None:
    policy, rng = RetryPolicy(), random.Random(0)
    for _ in range(n):
        retries = 0
        while True:
            try:
                await _attempt()
                break
            except _Failed:
                if retries >= policy.max_retries:
                    raise
                await asyncio.sleep(policy.delay(retries, None, rng))
                retries += 1


def _alternatives() -> dict[str, Callable[[int], Awaitable[None]]]:
    found: dict[str, Callable[[int], Awaitable[None]]] = {"clineval loop": clineval_loop}
    try:
        import tenacity

        async def tenacity_async(n: int) -> None:
            for _ in range(n):
                async for attempt in tenacity.AsyncRetrying(
                    stop=tenacity.stop_after_attempt(6),
                    retry=tenacity.retry_if_exception_type(_Failed),
                    wait=tenacity.wait_random_exponential(0.5, 30),
                    reraise=True,
                ):
                    with attempt:
                        await _attempt()

        found["tenacity"] = tenacity_async
    except ImportError:
        pass
    try:
        import stamina

        async def stamina_context(n: int) -> None:
            for _ in range(n):
                async for attempt in stamina.retry_context(
                    on=_Failed, attempts=6, wait_initial=0.5, wait_max=30
                ):
                    with attempt:
                        await _attempt()

        found["stamina"] = stamina_context
    except ImportError:
        pass
    return found


async def _measure() -> dict[str, float]:
    best: dict[str, float] = {}
    alternatives = _alternatives()
    for _ in range(ROUNDS):  # interleaved rounds; the best of each is kept
        for name, run in alternatives.items():
            started = time.process_time()
            await run(CALLS)
            per_call = (time.process_time() - started) / CALLS * 1e6
            best[name] = min(best.get(name, per_call), per_call)
    return best


def main() -> None:
    best = asyncio.run(_measure())
    base = best["clineval loop"]
    print(f"retry wrapper, success path, {CALLS:,} calls x {ROUNDS} rounds (best round)")
    print(f"{'wrapper':<22} {'us/call':>8} {'extra vs loop':>14}")
    for name, us in best.items():
        print(f"{name:<22} {us:8.2f} {us - base:+13.2f}")


if __name__ == "__main__":
    main()
