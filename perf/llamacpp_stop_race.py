"""How often stopping the in-process llama.cpp server right after it started hangs.

    PYTHONPATH=. .venv/bin/python -m perf.llamacpp_stop_race [--cycles 100]

Each cycle is a fresh Python process that starts `LlamaCppServer` (SmolLM2 GGUF, 1 slot, 1
thread), asks `/v1/models` once and stops it; a cycle still running after 45 s counts as hung
and is killed. Two processes spin on the cores meanwhile (a busy 2-core machine: the hang is
a race between llama.cpp's HTTP thread and its task loop). The checkout on PYTHONPATH is the
one measured, so the same command measures an older revision from its own worktree.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

CYCLE = r"""
import urllib.request
from clineval.models.llamacpp_server import LlamaCppServer, LlamaCppSettings, smollm2_gguf_path
settings = LlamaCppSettings(n_parallel=1, n_ctx_per_slot=512, threads=1)
server = LlamaCppServer(smollm2_gguf_path(), settings)
with server:
    urllib.request.urlopen(server.base_url + "/models", timeout=30).read()
"""
HUNG_AFTER_S = 45.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=100)
    args = parser.parse_args()
    spinners = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"])
        for _ in range(os.cpu_count() or 2)
    ]
    hung, failed, seconds = 0, 0, []
    try:
        for _ in range(args.cycles):
            started = time.perf_counter()
            try:
                done = subprocess.run(
                    [sys.executable, "-c", CYCLE], timeout=HUNG_AFTER_S, capture_output=True
                )
                failed += done.returncode != 0
                seconds.append(time.perf_counter() - started)
            except subprocess.TimeoutExpired:
                hung += 1
    finally:
        for spinner in spinners:
            spinner.kill()
    mean = sum(seconds) / len(seconds) if seconds else float("nan")
    print(
        f"cycles {args.cycles}: hung {hung}, failed {failed}, mean seconds of the others {mean:.2f}"
    )


if __name__ == "__main__":
    main()
