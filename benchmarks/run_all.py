"""Run every benchmark script in turn (`make bench`); each prints its own table.

The figures in BENCHMARKS.md come from these scripts, one section per script. Run them on a
quiet machine: several compare wall time against an ideal or an alternative.
"""

from __future__ import annotations

import subprocess
import sys

BENCHMARKS = (
    "benchmarks.bench_ner_data",
    "benchmarks.bench_ner_metrics",
    "benchmarks.bench_ner_demo",
    "benchmarks.bench_tcm_metrics",
    "benchmarks.bench_tcm_run",
    "benchmarks.bench_report",
    "benchmarks.bench_judge_throughput",
    "benchmarks.bench_clinconsensus_flow",
    "benchmarks.bench_retry_overhead",
    "benchmarks.bench_gliner",
    "benchmarks.bench_prefix_affinity_sim",
    "benchmarks.bench_prefix_affinity_llamacpp",
)


def main() -> int:
    failed = []
    for module in BENCHMARKS:
        print(f"\n=== {module} ===", flush=True)
        if subprocess.run([sys.executable, "-m", module], check=False).returncode != 0:
            failed.append(module)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
