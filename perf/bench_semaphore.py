"""asyncio.Semaphore against clineval.concurrency.HandoffSemaphore, in one run: CPU for
200,000 take-and-give-back pairs of tasks that hold a token across one loop turn, the shape
of a judged run's call budget and concurrency limit (many waiters, hundreds of releases per
loop iteration).

    .venv/bin/python -m perf.bench_semaphore [--pairs 200000] [--limit 256] [--repeats 3]

Each row is the median of --repeats, the two semaphores taking turns.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import Any

from clineval.concurrency import HandoffSemaphore


async def _holders(sem: Any, tasks: int, per_task: int) -> None:
    async def holder() -> None:
        for _ in range(per_task):
            async with sem:
                await asyncio.sleep(0)

    await asyncio.gather(*(holder() for _ in range(tasks)))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=200_000)
    ap.add_argument("--limit", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    kinds = {"asyncio.Semaphore": asyncio.Semaphore, "HandoffSemaphore": HandoffSemaphore}
    print(f"{args.pairs:,} acquire/release pairs, limit {args.limit}")
    print("| waiting tasks | semaphore | CPU (median) | vs asyncio |")
    print("|---:|---|---:|---:|")
    for tasks in (2 * args.limit, 5000):
        seen: dict[str, list[float]] = {name: [] for name in kinds}
        for _ in range(args.repeats):
            for name, kind in kinds.items():
                start = time.process_time()
                asyncio.run(_holders(kind(args.limit), tasks, args.pairs // tasks))
                seen[name].append(time.process_time() - start)
        base = statistics.median(seen["asyncio.Semaphore"])
        for name, times in seen.items():
            cpu = statistics.median(times)
            print(f"| {tasks:,} | {name} | {cpu:.2f} s | {cpu / base:.2f} |")


if __name__ == "__main__":
    main()
