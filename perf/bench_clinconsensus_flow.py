"""The whole ClinConsensus predict step against a 100 ms loopback stub: `clineval run` as a user
runs it (candidate answers, then one judge call per criterion, parse, store, progress).

    .venv/bin/python -m perf.bench_clinconsensus_flow [--cases 900] [--criteria 30]
        [--concurrency 256] [--latency 0.1]

Cases are SYNTHETIC: the project's fixture cases repeated under new ids
("synthetic-NNNN", written to a temporary clinconsensus_synthetic_cases.jsonl), since only
their shape matters to the flow. The stub (tests/llm_stub_server.py) runs in its own process,
so the CPU time reported is the harness's alone. Prints: calls, wall time vs the ideal
calls / concurrency * latency, harness CPU per call, the HTTP requests of a second run on
the same run directory (must be 0), the cost of `clineval score` (evaluate only), and the
task's own CPU per judge call measured alone (prompt, judge flow, parse, batched verdict
records) with an in-process judge that answers at once (no HTTP, no call cache).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from llm_stub_server import StubServer

from clineval.benchmarks.clinconsensus.cases import fixture_path
from clineval.cli import main as cli_main
from clineval.models.llm_base import ChatRequest, ChatResponse


def write_synthetic_cases(path: Path, n_cases: int) -> Path:
    rows = [json.loads(line) for line in fixture_path().read_text("utf-8").splitlines()]
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n_cases):
            row = dict(rows[i % len(rows)])
            case_id = f"synthetic-{i:04d}"
            row["case_id"] = case_id
            # a distinct query per case, or identical requests would share one HTTP call
            row["clinical_context"] = f"（合成病例 {case_id}）" + row["clinical_context"]
            row["rubrics"] = [
                {"criterion_id": f"{case_id}-r{j:02d}", "criterion": r["criterion"]}
                for j, r in enumerate(row["rubrics"])
            ]
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path


class CannedJudge:
    """An in-process ChatModel that answers at once: isolates the task's own CPU per call."""

    label = "bench:canned"

    async def chat(self, request: ChatRequest) -> ChatResponse:
        return ChatResponse(text=CANNED, model="canned", usage={"prompt_tokens": 1})


CANNED = '{"explanation": "提到了心电图检查", "criteria_met": true}'


def task_side_cpu(cases_file: Path, store_dir: Path) -> tuple[int, float]:
    """CPU of prompt building + judge flow + parsing + batched verdict records, no HTTP."""
    from clineval.benchmarks.clinconsensus.cases import load_cases
    from clineval.benchmarks.clinconsensus.wording import builtin_prompt
    from clineval.benchmarks.judged_flow import BufferedRecords
    from clineval.judge.run import FormatLadder, judge_criterion
    from clineval.judge.verdict import verdict_key
    from clineval.store import RunStore

    cases = load_cases(cases_file)
    prompt, model, ladder = builtin_prompt(), CannedJudge(), FormatLadder()
    answer = "建议立即就医，完善心电图和肌钙蛋白检查。" * 20

    async def one(case_id: str, criterion_id: str, criterion: str, query: str) -> None:
        outcome = await judge_criterion(model, prompt, query, answer, criterion, ladder)
        writer.add(
            "verdict:bench", verdict_key(case_id, criterion_id), outcome.record("b", prompt.version)
        )

    async def all_calls() -> None:
        await asyncio.gather(
            *(
                one(c.case_id, r.criterion_id, r.criterion, c.query)
                for c in cases
                for r in c.rubrics
            )
        )

    with RunStore.in_dir(store_dir) as store:
        writer = BufferedRecords(store, "bench")
        cpu = cpu_seconds()
        asyncio.run(all_calls())
        writer.flush()
        return sum(len(c.rubrics) for c in cases), cpu_seconds() - cpu


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run_once(argv: list[str]) -> tuple[int, float, float]:
    wall, cpu = time.perf_counter(), cpu_seconds()
    code = cli_main(argv)
    return code, time.perf_counter() - wall, cpu_seconds() - cpu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=900)
    parser.add_argument("--criteria", type=int, default=30)
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--latency", type=float, default=0.1)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp, StubServer(latency=args.latency) as stub:
        cases = write_synthetic_cases(Path(tmp) / "clinconsensus_synthetic_cases.jsonl", args.cases)
        out = Path(tmp) / "run"
        argv = [
            "--quiet",
            "run",
            "clinconsensus",
            "--model",
            f"openai:bench@{stub.base_url}",
            "--cases",
            str(cases),
            "--concurrency",
            str(args.concurrency),
            "--option",
            f"clinconsensus.max_criteria={args.criteria}",
            "--output-dir",
            str(out),
        ]
        code, wall, cpu = run_once(argv)
        manifest = json.loads((out / "manifest.json").read_text("utf-8"))
        phases = manifest["tasks"]["clinconsensus"]["phase_seconds"]
        requests = stub.stats()["requests"]
        calls = args.cases * (1 + args.criteria)
        judge_calls = args.cases * args.criteria
        ideal = calls / args.concurrency * args.latency
        stub.reset()
        code2, wall2, cpu2 = run_once(argv)
        rerun_requests = stub.stats()["requests"]
        code3, wall3, cpu3 = run_once(["--quiet", "score", str(out)])
        n_side, cpu_side = task_side_cpu(cases, Path(tmp) / "side")
    print(f"exit codes: first {code}, rerun {code2}, score {code3}")
    print(
        f"calls: {calls} ({args.cases} candidate + {judge_calls} judge); HTTP requests {requests}"
    )
    print(
        f"first run: wall {wall:.2f} s, ideal {ideal:.2f} s "
        f"({calls} / {args.concurrency} * {args.latency} s), ratio {wall / ideal:.3f}"
    )
    print(
        f"  of which the predict phase (all model calls): {phases['predict']:.2f} s, ratio "
        f"{phases['predict'] / ideal:.3f}; load {phases['load']:.2f} s, evaluate "
        f"{phases['evaluate']:.2f} s; the rest is start-up and writing the run files"
    )
    print(f"harness CPU: {cpu:.2f} s total, {1000 * cpu / calls:.3f} ms per call")
    print(f"rerun from the store: wall {wall2:.2f} s, CPU {cpu2:.2f} s")
    print(f"rerun HTTP requests: {rerun_requests}")
    print(f"clineval score (evaluate only, no model): wall {wall3:.2f} s, CPU {cpu3:.2f} s")
    print(
        f"task side alone (in-process canned judge, no HTTP, no call cache): {n_side} judge"
        f" calls, CPU {cpu_side:.2f} s, {1e6 * cpu_side / n_side:.0f} us per call"
    )


if __name__ == "__main__":
    main()
