"""A HealthBench-shaped run at full size: 5,000 SYNTHETIC examples with 48,562 rubric criteria
(the published counts), graded by the local stub judge, then the same run from stored calls.

    .venv/bin/python -m perf.bench_healthbench [--examples 5000] [--criteria 48562]
        [--concurrency 256] [--latency 0.0] [--clinconsensus-cases 900]
        [--clinconsensus-criteria 30] [--repeats 3]

The examples are SYNTHETIC, in the authors' layout: the fixture's four examples repeated under
new ids with a distinct first turn each, their rubrics cycled to reach the criteria count,
tags of the real shape (7 themes, 5 axes, 2 levels, cluster tags on some). Only their shape
matters to the flow. Each phase is its own process (`clineval.cli.main` in-process there),
so its wall time, CPU time and peak memory are its own:

  run      the first run: 5,000 candidate calls, then one judge call per criterion against
           tests/llm_stub_server.py (in its own process), evaluate, run files
  rerun    the same command on the same run directory: every call stored, 0 HTTP requests
  score    `clineval score` (evaluate only: the authors' figures and 1,000-resample bootstraps
           for every tag)
  report   `clineval report` (its size is printed)

Then the same four phases for ClinConsensus (SYNTHETIC cases as perf.bench_clinconsensus_flow
writes them, 30 criteria each; by default as many criteria in all as HealthBench's, so that a
process's fixed costs weigh the same per criterion; --clinconsensus-cases 0 leaves it out)
against the same stub: the two benchmarks' CPU per criterion measured in one run under one
load, and their ratio printed. Every phase is repeated (--repeats; the run into an emptied
directory), the two benchmarks taking turns phase by phase, and each is reported by its
median-CPU repeat, because one run of a phase varies by 20-30% on a shared machine; the
ratios are also printed from each phase's least-CPU repeat (load only adds to the work).
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from llm_stub_server import StubServer

THEMES = ("emergency_referrals", "hedging", "global_health", "context_seeking",
          "communication", "health_data_tasks", "complex_responses")  # fmt: skip
AXES = ("accuracy", "completeness", "context_awareness", "communication_quality",
        "instruction_following")  # fmt: skip


def write_examples(path: Path, n_examples: int, n_criteria: int) -> Path:
    from clineval.benchmarks.healthbench.data import FIXTURES

    base = [json.loads(line) for line in FIXTURES[False].read_text("utf-8").splitlines()]
    pool = [r for e in base for r in e["rubrics"]]
    per, extra = divmod(n_criteria, n_examples)
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n_examples):
            row = json.loads(json.dumps(base[i % len(base)]))
            row["prompt_id"] = f"synthetic-{i:05d}"
            row["prompt"][-1]["content"] = f"SYNTHETIC {i}: " + row["prompt"][-1]["content"]
            rubrics = []
            for j in range(per + (i < extra)):
                rubric = dict(pool[(i + j) % len(pool)])
                cluster = [f"cluster:synthetic_{j % 34}"] if j == 0 and i % 3 == 0 else []
                level = "level:cluster" if cluster else "level:example"
                rubric["tags"] = [level, f"axis:{AXES[(i + j) % len(AXES)]}", *cluster]
                rubric["criterion"] = f"{rubric['criterion']} (synthetic {j})"
                rubrics.append(rubric)
            rubrics[0]["points"] = abs(rubrics[0]["points"]) or 1  # a positive one always
            row["rubrics"] = rubrics
            row["example_tags"] = [f"theme:{THEMES[i % len(THEMES)]}",
                                   f"physician_agreed_category:synthetic_{i % 11}"]  # fmt: skip
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path


def phase(argv: list[str]) -> None:
    """One phase, in this (child) process: prints {wall, cpu, peak_mb, code}."""
    from clineval.cli import main

    start = time.perf_counter()
    code = main(["--quiet", *argv])
    usage = resource.getrusage(resource.RUSAGE_SELF)
    wall = time.perf_counter() - start
    cpu = usage.ru_utime + usage.ru_stime
    print(json.dumps({"wall": wall, "cpu": cpu, "peak_mb": usage.ru_maxrss / 1024, "code": code}))


def child(argv: list[str]) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "perf.bench_healthbench", "--phase", json.dumps(argv)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    lines = [line for line in out.stdout.splitlines() if line.startswith('{"wall"')]
    if not lines:
        raise SystemExit(out.stderr[-2000:])
    return dict(json.loads(lines[-1]))


def repeated(
    stub: StubServer, runs: list[tuple[list[str], Path]], repeats: int
) -> list[list[tuple[str, dict[str, Any]]]]:
    """run (into an emptied directory), rerun, score and report of each benchmark, `repeats`
    times, the benchmarks taking turns phase by phase so that a change of load on the machine
    falls on both alike; each phase's figures are its median-CPU repeat (one run of a phase
    varies by 20-30% on a shared machine)."""
    phases = ("run", "rerun", "score", "report")
    seen: list[dict[str, list[dict[str, Any]]]] = [{p: [] for p in phases} for _ in runs]
    for _ in range(repeats):
        for name in phases:
            for i, (run, out) in enumerate(runs):
                if name == "run":
                    shutil.rmtree(out, ignore_errors=True)
                argv = {
                    "score": ["score", str(out)],
                    "report": ["report", str(out), "-o", str(out / "report.html")],
                }.get(name, run)
                before = stub.stats()["requests"]
                got = child(argv)
                got["http"] = stub.stats()["requests"] - before
                seen[i][name].append(got)
    return [
        [(name, {**_median(got[name]), "least_cpu": _least(got[name])}) for name in phases]
        for got in seen
    ]


def _least(figures: list[dict[str, Any]]) -> float:
    """The least CPU of the repeats: the work is the same each time, and load on a shared
    machine only ever adds to it, so this is the steadier estimate of what the work costs."""
    return min(float(got["cpu"]) for got in figures)


def _median(figures: list[dict[str, Any]]) -> dict[str, Any]:
    """The repeat with the median CPU time (its own wall, memory and exit code with it)."""
    return sorted(figures, key=lambda got: float(got["cpu"]))[len(figures) // 2]


def table(rows: list[tuple[str, dict[str, Any]]], calls: int, criteria: int) -> None:
    print("| phase | wall | CPU | CPU per call | CPU per criterion | peak RSS | HTTP | exit |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, got in rows:
        per_call, per_criterion = 1000 * got["cpu"] / calls, 1000 * got["cpu"] / criteria
        print(f"| {name} | {got['wall']:.1f} s | {got['cpu']:.1f} s | {per_call:.3f} ms | "
              f"{per_criterion:.3f} ms | {got['peak_mb']:.0f} MB | {got['http']:,} | "
              f"{got['code']} |")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--examples", type=int, default=5000)
    ap.add_argument("--criteria", type=int, default=48562)
    ap.add_argument("--concurrency", type=int, default=256)
    ap.add_argument("--latency", type=float, default=0.0)
    ap.add_argument("--clinconsensus-cases", type=int, default=None,
                    help="ClinConsensus cases measured the same way after (0: none; default: "
                    "as many criteria as HealthBench's)")  # fmt: skip
    ap.add_argument("--clinconsensus-criteria", type=int, default=30)
    ap.add_argument(
        "--repeats",
        type=int,
        default=3,
        help="every phase this many times (its median-CPU repeat is shown)",
    )
    ap.add_argument("--phase", help=argparse.SUPPRESS)
    args = ap.parse_args()
    cc_cases_n = args.clinconsensus_cases
    if cc_cases_n is None:  # the same criteria count: a process's fixed costs weigh the same
        cc_cases_n = round(args.criteria / args.clinconsensus_criteria)
    if args.phase:
        phase(json.loads(args.phase))
        return
    with tempfile.TemporaryDirectory() as tmp, StubServer(latency=args.latency) as stub:
        cases = write_examples(Path(tmp) / "synthetic.jsonl", args.examples, args.criteria)
        out = Path(tmp) / "run"
        run = ["run", "healthbench", "--model", f"openai:cand@{stub.base_url}", "--judge",
               f"openai:judge@{stub.base_url}", "--option", f"healthbench.cases={cases}",
               "--concurrency", str(args.concurrency), "-o", str(out)]  # fmt: skip
        runs = [(run, out)]
        if cc_cases_n:
            from perf.bench_clinconsensus_flow import write_synthetic_cases

            cc_cases = write_synthetic_cases(
                Path(tmp) / "clinconsensus_synthetic_cases.jsonl", cc_cases_n
            )
            cc_out = Path(tmp) / "cc"
            cc_run = ["run", "clinconsensus", "--model", f"openai:bench@{stub.base_url}",
                      "--cases", str(cc_cases), "--concurrency", str(args.concurrency),
                      "--option", f"clinconsensus.max_criteria={args.clinconsensus_criteria}",
                      "-o", str(cc_out)]  # fmt: skip
            runs.append((cc_run, cc_out))
        measured = repeated(stub, runs, args.repeats)
        rows = measured[0]
        cc_rows = measured[1] if cc_cases_n else []
        results = json.loads((out / "results.json").read_text())["healthbench"]
        size = (out / "report.html").stat().st_size
        samples = (out / "samples.jsonl").stat().st_size
    calls = args.examples + args.criteria
    size_text = f"{args.examples:,} examples, {args.criteria:,} criteria, {calls:,} calls"
    print(f"HealthBench: {size_text} (SYNTHETIC), concurrency {args.concurrency}, "
          f"latency {args.latency} s")  # fmt: skip
    table(rows, calls, args.criteria)
    n_tags = sum(1 for k in results if k.endswith(":n_samples")) - 1
    print(f"report {size / 1e6:.1f} MB, samples.jsonl {samples / 1e6:.1f} MB, "
          f"{n_tags} tag figures, judge errors {results['judge_errors']}")  # fmt: skip
    if cc_rows:
        cc_criteria = cc_cases_n * args.clinconsensus_criteria
        cc_calls = cc_cases_n + cc_criteria
        print(f"\nClinConsensus (SYNTHETIC), the same way: {cc_cases_n:,} cases x "
              f"{args.clinconsensus_criteria} criteria, {cc_calls:,} calls")  # fmt: skip
        table(cc_rows, cc_calls, cc_criteria)
        print("\nHealthBench / ClinConsensus, CPU per criterion (median-CPU repeats; least):")
        for (name, hb), (_, cc) in zip(rows, cc_rows, strict=True):
            ratio = (hb["cpu"] / args.criteria) / (cc["cpu"] / cc_criteria)
            least = (hb["least_cpu"] / args.criteria) / (cc["least_cpu"] / cc_criteria)
            print(f"  {name}: {ratio:.2f}; {least:.2f}")


if __name__ == "__main__":
    main()
