"""The NER demo end to end: CRF baseline trained + predicted + scored on all four corpora.

    .venv/bin/python -m perf.bench_ner_demo [--output-dir DIR] [--keep]

Runs `clineval run ner:ncbi ner:bc5cdr ner:biored ner:chia --model baseline:crf` in a fresh
process on a fresh run directory (exactly what `make demo` does), and reports wall time, the
CPU time of that process, each task's seconds from the manifest (training included), and the
test scores next to the published zero-shot gliner_large-v2.5 span partial-match F1 (NCER
paper). Then it runs the same command again (resume: the stored models and predictions are
reused) and re-scores with `clineval score`, and checks that the results are identical.
Budget: the first run under 3 minutes on the 2-core machine.
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

TASKS = ("ner:ncbi", "ner:bc5cdr", "ner:biored", "ner:chia")
GLINER_PARTIAL_F1 = {"ner:ncbi": 75.67, "ner:bc5cdr": 80.23, "ner:biored": 71.24, "ner:chia": 67.62}
BUDGET_S = 180.0


def _clineval(*args: str) -> tuple[float, float]:
    """Run the CLI in a child process: (wall seconds, child CPU seconds)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    cmd = [sys.executable, "-m", "clineval", "--quiet", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def _read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output-dir", type=Path, default=None)
    parser.add_argument("--keep", action="store_true", help="keep the run directory")
    args = parser.parse_args()
    root = args.output_dir or Path(tempfile.mkdtemp(prefix="clineval-ner-demo-"))
    run_dir = root / "demo-ner"
    if run_dir.exists():
        shutil.rmtree(run_dir)
    argv = ["run", *TASKS, "--model", "baseline:crf", "--output-dir", str(run_dir)]

    wall, cpu = _clineval(*argv)
    results = _read(run_dir / "results.json")
    manifest = _read(run_dir / "manifest.json")
    print(f"first run: wall {wall:.1f} s, CPU {cpu:.1f} s (budget {BUDGET_S:.0f} s wall)")
    print(
        f"{'task':12} {'seconds':>8} {'train s':>8} {'token F1':>9} {'partial F1':>11} "
        f"{'exact F1':>9} {'GLiNER partial':>15}"
    )
    for task in TASKS:
        notes, res = manifest["tasks"][task], results[task]
        print(
            f"{task:12} {notes['seconds']:8.1f} {notes.get('crf_train_seconds', 0):8.1f} "
            f"{100 * res['token_macro_f1']:9.2f} {100 * res['span_partial_f1']:11.2f} "
            f"{100 * res['span_exact_f1']:9.2f} {GLINER_PARTIAL_F1[task]:15.2f}"
        )

    wall2, cpu2 = _clineval(*argv)
    same_run = _read(run_dir / "results.json") == results
    wall3, cpu3 = _clineval("score", str(run_dir))
    same_score = _read(run_dir / "results.json") == results
    print(
        f"rerun (resume, nothing retrained or re-predicted): wall {wall2:.1f} s, CPU {cpu2:.1f} s"
    )
    print(f"clineval score: wall {wall3:.1f} s, CPU {cpu3:.1f} s")
    print(f"identical results: rerun {same_run}, score {same_score}")
    print(f"within budget: {wall <= BUDGET_S}")
    if args.keep or args.output_dir:
        print(f"run directory: {run_dir}")
    else:
        shutil.rmtree(root)


if __name__ == "__main__":
    main()
