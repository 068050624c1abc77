"""CPU seconds (user + sys, the pytest process and every child it starts) per test file.

Wall time is useless on a machine shared with other jobs; CPU time is what the suite costs.
Each file runs in its own `pytest -n 0` so the figures add up per file.

    python -m perf.test_cpu tests/test_a.py tests/test_b.py [-m MARKERS]

MARKERS defaults to test-fast's: "not slow and not llm and not browser".
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time


def measure(path: str, marker: str) -> tuple[float, float, str]:
    """(CPU seconds, wall seconds, pytest's summary line) of one file."""
    before = os.times()
    start = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-n",
            "0",
            "-p",
            "no:cacheprovider",
            "-m",
            marker,
            path,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.monotonic() - start
    after = os.times()
    user = after.children_user - before.children_user
    cpu = user + after.children_system - before.children_system
    lines = [ln for ln in done.stdout.splitlines() if re.search(r"\d+ (passed|failed|error)", ln)]
    return cpu, wall, lines[-1] if lines else done.stdout.strip().splitlines()[-1:].__str__()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("files", nargs="+")
    parser.add_argument("-m", "--marker", default="not slow and not llm and not browser")
    args = parser.parse_args()
    total_cpu = 0.0
    total_tests = 0
    print(f"{'file':<48} {'cpu s':>7} {'wall s':>7} {'tests':>6} {'cpu/test':>8}")
    for path in args.files:
        cpu, wall, summary = measure(path, args.marker)
        counts = re.findall(r"(\d+) (passed|failed|error)", summary)
        n = sum(int(c) for c, _ in counts)
        total_cpu += cpu
        total_tests += n
        per = cpu / n if n else 0.0
        print(f"{path:<48} {cpu:7.1f} {wall:7.1f} {n:6d} {per:8.3f}   {summary.strip()}")
    per = total_cpu / total_tests if total_tests else 0.0
    print(f"{'total':<48} {total_cpu:7.1f} {'':>7} {total_tests:6d} {per:8.3f}")


if __name__ == "__main__":
    main()
