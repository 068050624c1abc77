"""The whole ClinConsensus predict step against a 100 ms loopback stub: `clineval run` as a user
runs it (candidate answers, then one judge call per criterion, parse, store, progress).

    .venv/bin/python -m benchmarks.bench_clinconsensus_flow [--cases 900] [--criteria 30]
        [--concurrency 256] [--latency 0.1]

Cases are SYNTHETIC: the project's fixture cases repeated under new ids
("synthetic-NNNN", written to a temporary clinconsensus_synthetic_cases.jsonl), since only
their shape matters to the flow. The stub (tests/llm_stub_server.py) runs in its own process,
so the CPU time reported is the harness's alone. Prints: calls, wall time vs the ideal
calls / concurrency * latency, harness CPU per call, the HTTP requests of a second run on
the same run directory (must be 0), and the cost of `clineval score` (evaluate only).
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from llm_stub_server import StubServer

from clineval.cli import main as cli_main
from clineval.data.clinconsensus import fixture_path


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
        requests = stub.stats()["requests"]
        calls = args.cases * (1 + args.criteria)
        judge_calls = args.cases * args.criteria
        ideal = calls / args.concurrency * args.latency
        stub.reset()
        code2, wall2, cpu2 = run_once(argv)
        rerun_requests = stub.stats()["requests"]
        code3, wall3, cpu3 = run_once(["--quiet", "score", str(out)])
    print(f"exit codes: first {code}, rerun {code2}, score {code3}")
    print(
        f"calls: {calls} ({args.cases} candidate + {judge_calls} judge); HTTP requests {requests}"
    )
    print(
        f"first run: wall {wall:.2f} s, ideal {ideal:.2f} s "
        f"({calls} / {args.concurrency} * {args.latency} s), ratio {wall / ideal:.3f}"
    )
    print(f"harness CPU: {cpu:.2f} s total, {1000 * cpu / calls:.3f} ms per call")
    print(f"rerun from the store: wall {wall2:.2f} s, CPU {cpu2:.2f} s")
    print(f"rerun HTTP requests: {rerun_requests}")
    print(f"clineval score (evaluate only, no model): wall {wall3:.2f} s, CPU {cpu3:.2f} s")


if __name__ == "__main__":
    main()
