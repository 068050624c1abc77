"""The garbage collector's thresholds during `execute` (clineval/collector.py), compared in one
run on the two judged benchmarks at HealthBench's size: CPU, the share the collector took
(timed by gc.callbacks) and peak memory of each phase under each setting.

    .venv/bin/python -m perf.bench_gc [--examples 5000] [--criteria 48562] [--repeats 3]
        [--settings 700,10,10 10000,10,10 50000,10,10 off]

The data is SYNTHETIC (perf.bench_healthbench's HealthBench examples and
perf.bench_clinconsensus_flow's ClinConsensus cases, as many criteria in all), judged by the
stub server (tests/llm_stub_server.py, its own process). Phases, each its own process:

  run      the first run into an emptied directory (once per setting: ~35 s each)
  rerun    the same command again, every call stored (--repeats times)
  score    `clineval score` (--repeats times)

`off` disables the collector (a bound, not a choice: cycles would never be freed). The
settings take turns within each repeat so that a change of load falls on all alike; each row
is the repeat with the median CPU.
"""

from __future__ import annotations

import argparse
import gc
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

from perf.bench_healthbench import write_examples


def phase(setting: str, argv: list[str]) -> None:
    """One phase in this (child) process under `setting`; prints its figures as JSON."""
    import clineval.collector

    if setting == "off":
        gc.disable()
    else:
        clineval.collector.THRESHOLDS = tuple(int(x) for x in setting.split(","))  # type: ignore[assignment]
    spent = [0.0, 0.0]  # seconds in the collector, start of the current pass

    def timed(stage: str, info: dict[str, Any]) -> None:
        if stage == "start":
            spent[1] = time.process_time()
        else:
            spent[0] += time.process_time() - spent[1]

    gc.callbacks.append(timed)
    from clineval.cli import main

    code = main(["--quiet", *argv])
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu = usage.ru_utime + usage.ru_stime
    print(json.dumps({"cpu": cpu, "gc": spent[0], "peak_mb": usage.ru_maxrss / 1024, "code": code}))


def child(setting: str, argv: list[str]) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "perf.bench_gc", "--phase", json.dumps([setting, argv])]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    lines = [line for line in out.stdout.splitlines() if line.startswith('{"cpu"')]
    if not lines:
        raise SystemExit(out.stderr[-2000:])
    got = dict(json.loads(lines[-1]))
    if got["code"] != 0:
        raise SystemExit(f"{argv[0]} under {setting} exited {got['code']}: {out.stderr[-2000:]}")
    return got


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--examples", type=int, default=5000)
    ap.add_argument("--criteria", type=int, default=48562)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument(
        "--settings", nargs="+", default=["700,10,10", "10000,10,10", "50000,10,10", "off"]
    )
    ap.add_argument("--phase", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.phase:
        setting, argv = json.loads(args.phase)
        phase(setting, argv)
        return
    from perf.bench_clinconsensus_flow import write_synthetic_cases

    seen: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory() as tmp, StubServer() as stub:
        root = Path(tmp)
        hb_cases = write_examples(root / "synthetic.jsonl", args.examples, args.criteria)
        cc_cases = write_synthetic_cases(root / "cc_synthetic.jsonl", round(args.criteria / 30))
        url = stub.base_url

        def run_argv(bench: str, out: Path) -> list[str]:
            if bench == "healthbench":
                return ["run", "healthbench", "--model", f"openai:cand@{url}", "--judge",
                        f"openai:judge@{url}", "--option", f"healthbench.cases={hb_cases}",
                        "--concurrency", "256", "-o", str(out)]  # fmt: skip
            return ["run", "clinconsensus", "--model", f"openai:bench@{url}", "--cases",
                    str(cc_cases), "--concurrency", "256", "--option",
                    "clinconsensus.max_criteria=30", "-o", str(out)]  # fmt: skip

        benches = ("healthbench", "clinconsensus")
        for repeat in range(args.repeats):
            for name in ("run", "rerun", "score"):
                if name == "run" and repeat:
                    continue  # once per setting: it is the slow phase
                for bench in benches:
                    for setting in args.settings:
                        out = root / f"{bench}-{setting}"
                        if name == "run":
                            shutil.rmtree(out, ignore_errors=True)
                        argv = ["score", str(out)] if name == "score" else run_argv(bench, out)
                        seen.setdefault((bench, name, setting), []).append(child(setting, argv))
    print(f"SYNTHETIC: {args.examples:,} HealthBench examples, {args.criteria:,} criteria; "
          f"ClinConsensus {round(args.criteria / 30):,} cases x 30 criteria")  # fmt: skip
    print("| benchmark | phase | thresholds | CPU | in the collector | peak RSS | CPU vs default |")
    print("|---|---|---|---:|---:|---:|---:|")
    for (bench, name, setting), figures in seen.items():
        got = sorted(figures, key=lambda g: float(g["cpu"]))[len(figures) // 2]
        base = seen[(bench, name, args.settings[0])]
        base_cpu = sorted(float(g["cpu"]) for g in base)[len(base) // 2]
        print(f"| {bench} | {name} | {setting} | {got['cpu']:.1f} s | {got['gc']:.1f} s | "
              f"{got['peak_mb']:.0f} MB | {got['cpu'] / base_cpu:.2f} |")  # fmt: skip


if __name__ == "__main__":
    main()
