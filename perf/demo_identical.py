"""`make demo`'s results on two revisions, compared byte for byte (issue 17's "behaviour
unchanged": a restructuring must not move a number).

    .venv/bin/python -m perf.demo_identical REV [--skip-llm]

REV is checked out into a temporary worktree; both sides run the demo's commands with this
checkout's .venv, each importing its own `clineval` (PYTHONPATH), against the same data root.
For each demo run directory it compares results.json and samples.jsonl (a packaged file,
named by the path of the checkout that ran, written as `<checkout>/clineval/...` on both
sides) and prints one line per file: identical, or the first differing line; and for runs
that call models, how many of the stored requests are byte-identical (equal cache keys). The
ClinConsensus step runs the local llama.cpp model (a few minutes on 2 cores); --skip-llm
leaves it out. --one-slot serves it with one decoding slot on both sides: with two, llama.cpp
batches concurrent requests and a greedy reply can change from one run to the next, and with
it every judge request that quotes it. Exit 0 when every file is identical.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# $CLINEVAL_DATA_DIR first, as clineval itself reads it: a checkout elsewhere (a worktree)
# has no data beside it
DATA = Path(os.environ.get("CLINEVAL_DATA_DIR") or ROOT.parent / "shared" / "data")


def demo_steps(
    runs: Path, gguf: str, skip_llm: bool, one_slot: bool = False
) -> list[tuple[str, list[str]]]:
    steps = [
        ("demo-ner", ["run", "ner:ncbi", "ner:bc5cdr", "ner:biored", "ner:chia",
                      "--model", "baseline:crf", "--output-dir", str(runs / "demo-ner")]),
        ("", ["data", "synth", "tcm-sd", "--out", str(runs / "tcm-sd-synthetic-data")]),
        ("demo-tcm-sd-synthetic", ["run", "tcm-sd", "--model", "baseline:tfidf",
                                   "--data-dir", str(runs / "tcm-sd-synthetic-data"),
                                   "--output-dir", str(runs / "demo-tcm-sd-synthetic")]),
    ]  # fmt: skip
    if not skip_llm:
        steps.append(
            ("demo-clinconsensus-fixture", [
                "run", "clinconsensus", "--option", "clinconsensus.cases=fixture",
                "--model", f"llamacpp:{gguf}", "--limit", "2",
                "--option", "clinconsensus.max_criteria=3", "--option", "clinconsensus.k=2",
                "--max-tokens", "96", "--option", "clinconsensus.judge_max_tokens=160",
                "--max-judge-error-rate", "1",
                "--output-dir", str(runs / "demo-clinconsensus-fixture"),
                *(["--option", "llamacpp.n_parallel=1"] if one_slot else []),
            ])
        )  # fmt: skip
    return steps


def run_side(tree: Path, runs: Path, gguf: str, skip_llm: bool, one_slot: bool) -> None:
    env = {**os.environ, "PYTHONPATH": str(tree), "CLINEVAL_DATA_DIR": str(DATA)}
    for _, args in demo_steps(runs, gguf, skip_llm, one_slot):
        done = subprocess.run(
            [sys.executable, "-m", "clineval", "--quiet", *args],
            cwd=tree, env=env, capture_output=True, text=True,
        )  # fmt: skip
        print(f"  [{tree.name}] clineval {args[0]} {args[1]}: exit {done.returncode}", flush=True)


def first_difference(a: Path, b: Path, roots: tuple[Path, Path]) -> str | None:
    """None when the files are equal once each side's package directory is written the same
    way (a packaged file, such as the fixture cases, is named by its path in the checkout that
    ran); else the first differing line."""
    if not a.exists() or not b.exists():
        return f"missing: {a if not a.exists() else b}"
    text_a, text_b = (
        path.read_text().replace(json.dumps(f"{root}/clineval/")[1:-1], "<checkout>/clineval/")
        for path, root in ((a, roots[0]), (b, roots[1]))
    )
    if text_a == text_b:
        return None
    for n, (x, y) in enumerate(zip(text_a.splitlines(), text_b.splitlines(), strict=False), 1):
        if x != y:
            return f"line {n} differs"
    return "lengths differ"


def request_keys(run_dir: Path) -> set[str]:
    """The cache keys of the run's stored model calls: equal keys mean byte-identical
    requests (a key hashes everything that decides an answer)."""
    store = run_dir / "store.sqlite"
    if not store.exists():
        return set()
    with sqlite3.connect(store) as conn:
        return {row[0] for row in conn.execute("SELECT key FROM calls")}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("rev")
    parser.add_argument("--skip-llm", action="store_true")
    parser.add_argument("--one-slot", action="store_true")
    args = parser.parse_args()
    from clineval.models.llamacpp_server import smollm2_gguf_path

    gguf = str(smollm2_gguf_path())
    work = Path(tempfile.mkdtemp(prefix="demo-identical-"))
    before = work / "before"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-f", "--detach", str(before),
                    args.rev], check=True, capture_output=True)  # fmt: skip
    try:
        for side, tree in (("before", before), ("after", ROOT)):
            print(f"=== {side}: {tree}", flush=True)
            run_side(tree, work / f"runs-{side}", gguf, args.skip_llm, args.one_slot)
        same = True
        for name, _ in demo_steps(work, gguf, args.skip_llm):
            if not name:
                continue
            for file in ("results.json", "samples.jsonl"):
                diff = first_difference(
                    work / "runs-before" / name / file,
                    work / "runs-after" / name / file,
                    (before, ROOT),
                )
                same &= diff is None
                print(f"{name}/{file}: {'identical' if diff is None else diff}")
            keys = [request_keys(work / f"runs-{side}" / name) for side in ("before", "after")]
            if keys[0] or keys[1]:
                shared = len(keys[0] & keys[1])
                print(f"{name}: model requests {len(keys[0])} / {len(keys[1])}, {shared} identical")
        return 0 if same else 1
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(before)],
                       capture_output=True)  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())
