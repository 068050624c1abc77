"""Judge throughput: 27,000 judge-shaped calls at concurrency 256 against a 100 ms stub server.

    .venv/bin/python -m perf.bench_judge_throughput [--cases 900] [--criteria 30]
        [--concurrency 256] [--latency 0.1] [--alt-calls 5400] [--skip-threads]

What it measures (all calls go over real HTTP on 127.0.0.1 to tests/llm_stub_server.py, run in
its own process so its CPU is not charged to the client):
  1. clineval's client (open_chat_model: run store lookup + write, run-wide semaphore, retry
     policy) over N cases x M criteria, all cases at once, each fanning out its criteria
     through gather_bounded inside run_model_calls (uvloop, frozen heap), as the
     ClinConsensus task does;
     wall time vs the ideal N*M/concurrency*latency, and client CPU time per call;
  2. the same calls again on the same run store: must make zero HTTP requests;
  3. a nested thread-pool design (an outer pool over cases, an inner pool over criteria, as
     simple-evals' HealthBench grader does) with the openai SDK's sync client and the same
     total number of threads in flight;
  4. client CPU per call of the three transports (plain aiohttp, openai SDK over aiohttp,
     openai SDK over httpx), each through the full clineval call path, on `--alt-calls` calls.
The request bodies are synthetic, judge-shaped (a ~1.5k-character Chinese case context, a
~600-character answer, one criterion, a json_schema response format).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from llm_stub_server import StubServer

from clineval.benchmarks.base import RunContext
from clineval.concurrency import gather_bounded, run_model_calls
from clineval.config import RunConfig
from clineval.models.llm import RetryPolicy, open_chat_model
from clineval.models.llm_base import ChatRequest
from clineval.models.spec import ModelSpec
from clineval.store import RunStore

SCHEMA = {
    "type": "json_schema",
    "json_schema": {
        "name": "verdict",
        "schema": {
            "type": "object",
            "properties": {"explanation": {"type": "string"}, "criteria_met": {"type": "boolean"}},
            "required": ["explanation", "criteria_met"],
        },
    },
}
SYSTEM = "你是一名临床评审专家。只根据给定的一条评分标准判断回答是否满足，输出 JSON。"


def synthetic_requests(n_cases: int, n_criteria: int) -> list[list[ChatRequest]]:
    """Judge-shaped synthetic requests, one list per case (synthetic text, not real cases)."""
    context = "患者男性，65岁，反复胸闷气短三年，加重一周。既往高血压病史十年。" * 25
    answer = "建议完善心电图、心肌酶谱及心脏超声检查，必要时冠脉造影。" * 20
    cases = []
    for c in range(n_cases):
        rows = []
        for k in range(n_criteria):
            user = (
                f"【病例 synthetic-{c}】\n{context}\n\n【回答开始】\n{answer}\n【回答结束】\n\n"
                f"【评分标准 {k + 1}】回答是否提及第{k + 1}项关键检查（如心电图、超声）。"
            )
            rows.append(
                ChatRequest(
                    messages=(("system", SYSTEM), ("user", user)),
                    max_tokens=256,
                    seed=0,
                    response_format=SCHEMA,
                    template_version="bench-judge-v1",
                )
            )
        cases.append(rows)
    return cases


def process_cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) used so far by another process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def make_ctx(run_dir: Path, base_url: str, concurrency: int, transport: str) -> RunContext:
    config = RunConfig(
        tasks=["bench"],
        model=f"openai:bench-judge@{base_url}",
        concurrency=concurrency,
        timeout_s=60.0,
        options={"llm.transport": transport},
    )
    return RunContext(
        config=config,
        store=RunStore.in_dir(run_dir),
        output_dir=run_dir,
        data_root=None,
        model=ModelSpec.parse(config.model),
    )


def run_clineval(
    cases: list[list[ChatRequest]], run_dir: Path, base_url: str, concurrency: int, transport: str
) -> dict[str, Any]:
    """All cases at once, each fanning out its criteria through gather_bounded and
    open_chat_model, as the ClinConsensus task does."""
    ctx = make_ctx(run_dir, base_url, concurrency, transport)
    state = ctx.runtime.calls

    async def main() -> int:
        async with open_chat_model(
            ctx.model, ctx.runtime, "judge", retry=RetryPolicy(max_retries=3)
        ) as model:

            async def answered(request: ChatRequest) -> bool:
                # The task records each reply and keeps no response object: nor does this.
                return bool((await model.chat(request)).text)

            async def case(rows: list[ChatRequest]) -> int:
                return sum(await gather_bounded(state, (answered(r) for r in rows)))

            return sum(await asyncio.gather(*(case(rows) for rows in cases)))

    cpu0, t0 = cpu_seconds(), time.perf_counter()
    answered = run_model_calls(main())
    wall, cpu = time.perf_counter() - t0, cpu_seconds() - cpu0
    totals = ctx.runtime.calls.totals()
    ctx.store.close()
    return {"answered": answered, "wall_s": wall, "cpu_s": cpu, **totals}


def run_nested_threads(
    cases: list[list[ChatRequest]], base_url: str, outer: int, inner: int
) -> dict[str, Any]:
    """simple-evals style: outer pool over cases, each case grades its criteria in an inner pool
    with the openai SDK's synchronous client (no store, no caching: the cheaper side)."""
    import openai

    client = openai.OpenAI(base_url=base_url, api_key="not-needed", max_retries=3, timeout=60.0)

    def grade(request: ChatRequest) -> str:
        kwargs: dict[str, Any] = {
            "model": "bench-judge",
            "messages": [{"role": r, "content": c} for r, c in request.messages],
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            "seed": request.seed,
            "response_format": request.response_format,
        }
        completion = client.chat.completions.create(**kwargs)
        return completion.choices[0].message.content or ""

    def grade_case(rows: list[ChatRequest]) -> int:
        with ThreadPoolExecutor(max_workers=inner) as pool:
            return sum(1 for text in pool.map(grade, rows) if text)

    cpu0, t0 = cpu_seconds(), time.perf_counter()
    with ThreadPoolExecutor(max_workers=outer) as pool:
        answered = sum(pool.map(grade_case, cases))
    wall, cpu = time.perf_counter() - t0, cpu_seconds() - cpu0
    client.close()
    return {"answered": answered, "wall_s": wall, "cpu_s": cpu}


def line(name: str, n_calls: int, result: dict[str, Any], ideal: float | None = None) -> str:
    per_call_us = result["cpu_s"] / max(n_calls, 1) * 1e6
    text = (
        f"{name:<44} {result['wall_s']:7.2f} s wall  {result['cpu_s']:7.2f} s CPU"
        f"  {per_call_us:6.0f} us CPU/call  {n_calls / result['wall_s']:7.0f} calls/s"
    )
    if ideal:
        text += f"  ({result['wall_s'] / ideal:.3f}x ideal)"
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=900)
    parser.add_argument("--criteria", type=int, default=30)
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--alt-calls", type=int, default=5400, help="calls per transport row")
    parser.add_argument("--skip-threads", action="store_true")
    parser.add_argument("--skip-transports", action="store_true")
    parser.add_argument("--json", type=Path, help="also write the numbers here")
    args = parser.parse_args()

    cases = synthetic_requests(args.cases, args.criteria)
    n_calls = args.cases * args.criteria
    ideal = n_calls / args.concurrency * args.latency
    report: dict[str, Any] = {"n_calls": n_calls, "ideal_s": ideal, "args": vars(args) | {}}
    report["args"]["json"] = str(args.json) if args.json else None
    print(f"load average before: {os.getloadavg()}, CPUs: {os.cpu_count()}")
    report["loadavg_before"] = os.getloadavg()
    print(
        f"{n_calls} judge calls, concurrency {args.concurrency}, stub latency {args.latency} s: "
        f"ideal {ideal:.2f} s, bound 1.25x = {1.25 * ideal:.2f} s"
    )
    with StubServer(latency=args.latency) as stub, tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "run"
        assert stub.proc is not None
        stub_cpu0 = process_cpu_seconds(stub.proc.pid)
        first = run_clineval(cases, run_dir, stub.base_url, args.concurrency, "aiohttp")
        stub_cpu = process_cpu_seconds(stub.proc.pid) - stub_cpu0
        sent = stub.stats()["requests"]
        print(line("clineval (aiohttp transport, store on)", n_calls, first, ideal))
        stub_us = stub_cpu / n_calls * 1e6
        print(f"  stub server process: {stub_cpu:.2f} s CPU = {stub_us:.0f} us/request")
        first["stub_cpu_s"] = stub_cpu
        second = run_clineval(cases, run_dir, stub.base_url, args.concurrency, "aiohttp")
        resent = stub.stats()["requests"] - sent
        print(line("clineval rerun from the store", n_calls, second))
        print(
            f"  HTTP requests: first run {sent}, rerun {resent}; cache hits {second['cache_hits']}"
        )
        report["clineval"] = first | {"stub_requests": sent}
        report["rerun"] = second | {"stub_requests": resent}
        report["within_bound"] = first["wall_s"] <= 1.25 * ideal

        if not args.skip_threads:
            inner = 2  # simple-evals' inner default is os.cpu_count(): 2 on this machine
            outer = args.concurrency // inner
            stub.reset()
            threads = run_nested_threads(cases, stub.base_url, outer, inner)
            print(
                line(
                    f"nested threads {outer}x{inner} (openai sync client)", n_calls, threads, ideal
                )
            )
            report["nested_threads"] = threads | {"outer": outer, "inner": inner}

        if not args.skip_transports:
            per_case = max(1, args.alt_calls // args.criteria)
            subset = cases[:per_case]
            k = per_case * args.criteria
            report["transports"] = {}
            for transport in ("aiohttp", "openai", "openai-httpx"):
                sub_dir = Path(tmp) / f"run-{transport}"
                result = run_clineval(subset, sub_dir, stub.base_url, args.concurrency, transport)
                print(
                    line(
                        f"transport {transport} ({k} calls)",
                        k,
                        result,
                        k / args.concurrency * args.latency,
                    )
                )
                report["transports"][transport] = result
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, default=str))


if __name__ == "__main__":
    main()
