"""The lone-surrogate test of every JSON input line (clineval.jsonio), against decoding the
line itself, in one run: the one regex it used before (an escape alternative and a character
class) and the C-speed steps it uses now, on SYNTHETIC HealthBench-shaped lines (English) and
ClinConsensus-shaped ones (Chinese).

    .venv/bin/python -m perf.bench_surrogate_check [--examples 5000] [--repeats 5]

Each figure is the least CPU of --repeats (the work is the same each time).
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from clineval.jsonio import _may_hold_surrogates

# the test parse_json made before (both alternatives in one pattern)
OLD = re.compile(r"\\u[dD][89abcdefABCDEF]|[\ud800-\udfff]")


def least(work: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.process_time()
        work()
        times.append(time.process_time() - start)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--examples", type=int, default=5000)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    from perf.bench_clinconsensus_flow import write_synthetic_cases
    from perf.bench_healthbench import write_examples

    with tempfile.TemporaryDirectory() as tmp:
        files = {
            "HealthBench-shaped": write_examples(Path(tmp) / "hb.jsonl", args.examples, 48562),
            "ClinConsensus-shaped": write_synthetic_cases(Path(tmp) / "cc.jsonl", 1619),
        }
        texts = {k: p.read_text("utf-8").splitlines() for k, p in files.items()}
    print("| lines | MB | json.loads | old regex | now | now / old |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, lines in texts.items():
        assert [bool(OLD.search(t)) for t in lines] == [_may_hold_surrogates(t) for t in lines]
        size = sum(len(t.encode("utf-8")) for t in lines) / 1e6
        decode = least(lambda: [json.loads(t) for t in lines], args.repeats)  # noqa: B023
        old = least(lambda: [OLD.search(t) for t in lines], args.repeats)  # noqa: B023
        new = least(lambda: [_may_hold_surrogates(t) for t in lines], args.repeats)  # noqa: B023
        print(f"| {name} ({len(lines):,}) | {size:.1f} | {decode:.3f} s | {old:.3f} s | "
              f"{new:.3f} s | {new / old:.2f} |")  # fmt: skip


if __name__ == "__main__":
    main()
