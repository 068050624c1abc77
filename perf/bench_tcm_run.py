"""Benchmark: a full-size TCM-SD run on the SYNTHETIC fixture with `baseline:tfidf`.

    .venv/bin/python -m perf.bench_tcm_run [--workdir DIR] [--seed 0]

1. `clineval data synth tcm-sd` writes the full-size fixture (43,180 / 5,486 / 5,486 records);
   timed separately, it is not part of the run.
2. `clineval run tcm-sd --model baseline:tfidf` in a fresh process: load, train on 43,180
   records, predict 5,486, score (with the 1,000-resample bootstrap), write the run directory.
   Wall time and the child's peak RSS (ru_maxrss) are reported, plus the task's own seconds.
3. `clineval score` on the result (no model): wall time and that results.json is unchanged.
The numbers are fixture numbers, not TCM-SD results.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_CHILD = (
    "import resource, sys\n"
    "from clineval.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "print('MAXRSS_KIB', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def _cli(*args: str) -> tuple[float, int]:
    """Wall seconds and peak RSS (MiB) of `clineval ARGS` in a fresh process of its own."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, "--quiet", *args],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    seconds = time.perf_counter() - start
    kib = [
        int(line.split()[1]) for line in done.stderr.splitlines() if line.startswith("MAXRSS_KIB")
    ]
    return seconds, kib[-1] // 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench-tcm-"))
    data, run = work / "synthetic-data", work / "run-tfidf"
    shutil.rmtree(run, ignore_errors=True)
    t_synth, rss_synth = _cli(
        "data", "synth", "tcm-sd", "--out", str(data), "--seed", str(args.seed)
    )
    print(f"synthesize full-size fixture: {t_synth:.1f} s, peak RSS {rss_synth} MiB")
    t_run, rss = _cli(
        "run", "tcm-sd", "--model", "baseline:tfidf", "--data-dir", str(data),
        "--output-dir", str(run), "--seed", str(args.seed),
    )  # fmt: skip
    results = json.loads((run / "results.json").read_text())["tcm-sd"]
    task_seconds = json.loads((run / "manifest.json").read_text())["tasks"]["tcm-sd"]["seconds"]
    print(
        f"run (train 43,180 + predict {results['n']:,} + score): {t_run:.1f} s wall "
        f"(task {task_seconds:.1f} s, the rest is process start-up and imports); "
        f"peak RSS {rss} MiB"
    )
    print(
        f"fixture scores: macro_f1={results['macro_f1']:.4f} {results['macro_f1_ci']} "
        f"accuracy={results['accuracy']:.4f} fixture={results['fixture']}"
    )
    before = (run / "results.json").read_bytes()
    t_score, rss_score = _cli("score", str(run))
    same = (run / "results.json").read_bytes() == before
    print(
        f"clineval score (no model): {t_score:.1f} s, peak RSS {rss_score} MiB; "
        f"results.json unchanged: {same}"
    )
    store_mib = (run / "store.sqlite").stat().st_size / 2**20
    print(f"run store (predictions + cached tfidf model): {store_mib:.1f} MiB")
    if args.workdir is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
