"""Run every benchmark script in turn (`make bench`); each prints its own table.

The figures in BENCHMARKS.md come from these scripts, one section per script. Run them on a
quiet machine: several compare wall time against an ideal or an alternative.
"""

from __future__ import annotations

import subprocess
import sys

BENCHMARKS = (
    "perf.bench_ner_data",
    "perf.bench_ner_metrics",
    "perf.bench_ner_demo",
    "perf.bench_tcm_metrics",
    "perf.bench_tcm_run",
    "perf.bench_report",
    "perf.bench_judge_throughput",
    "perf.bench_clinconsensus_flow",
    "perf.bench_retry_overhead",
    "perf.bench_gliner",
    "perf.bench_prefix_affinity_sim",
    "perf.bench_prefix_affinity_llamacpp",
    "perf.bench_llamacpp_defaults",
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
