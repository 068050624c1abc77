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
    "perf.bench_run_summary",
    "perf.bench_judge_throughput",
    "perf.bench_clinconsensus_flow",
    "perf.bench_retry_overhead",
    "perf.bench_gliner",
    "perf.bench_prefix_affinity_sim",
    "perf.bench_prefix_affinity_llamacpp",
    # issue 20's fleet: 4 prefix-caching stub replicas, 12 cases x 30 criteria, 5 runs
    "perf.bench_prefix_affinity_llamacpp --server stub --replicas 4 --criteria 30 "
    "--concurrency 32 --runs 5",
    "perf.bench_batch",
    "perf.bench_batch_memory",
    "perf.bench_llamacpp_defaults",
)


def main() -> int:
    failed = []
    for command in BENCHMARKS:
        print(f"\n=== {command} ===", flush=True)
        if subprocess.run([sys.executable, "-m", *command.split()], check=False).returncode:
            failed.append(command)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
