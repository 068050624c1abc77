"""The built-ins' chat predictions on two revisions, compared byte for byte: NER (ner:ncbi)
and TCM-SD (its synthetic data) against the scripted stub server, on REV and on this checkout.

    .venv/bin/python -m perf.chat_identical REV

Each side runs NER four times into one directory and TCM-SD twice into another, with the
faults the chat loop meets (a server that refuses a response_format, once and twice; one that
fails) and replies the parsers read, salvage or refuse; the later runs resume (the failed
samples asked again, the others served from the store). After each run it compares
results.json, samples.jsonl, the stored records (task, kind, key, value), the stored requests
(key, model, request: equal keys mean an old run store is reused) and each task's "llm"
counters in manifest.json. One line each: identical, or the first difference. Exit 0 when
every one is identical.
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
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("CLINEVAL_DATA_DIR") or ROOT.parent / "shared" / "data")
sys.path.insert(0, str(ROOT / "tests"))

from llm_stub_server import StubServer  # noqa: E402

NER_OK = {
    "do": "ok",
    "content": "no entities, sorry",
    "rules": [
        {
            "prompt": "tumou?r",
            "content": '```json\n{"entities": [{"text": "tumor", "type": "Disease"}'
            ', {"text": "x", "type": "gene"}]}\n```',
        },
        {
            "prompt": "cancer",
            "content": '{"entities": [{"text": "cancer", "type": "condition"},'
            ' {"text": "nowhere-in-text", "type": "condition"}]}',
        },
        {"prompt": "deficiency", "content": '{"entities": [{"text": "deficiency", "type": "condi'},
    ],
}
TCM_OK = {
    "do": "ok",
    "content": "不知道",
    "rules": [
        {"prompt": "咳嗽", "content": "痰湿蕴肺证"},
        {"prompt": "拒按", "content": "分析……\n答案：瘀血阻滞证"},
        {"prompt": "小便", "content": "湿热下注证或气滞血瘀证"},
    ],
}
REFUSED = {"do": "status", "status": 400}
FAILED = {"do": "status", "status": 500}
# One behaviour a request, in the order they arrive, then the default. Up to twice
# --concurrency calls are under way, so a script longer than one entry is in sample order only
# when no sample asks twice (a refused response_format): NER's runs script one fault each, or
# two with one sample to ask.
TCM_FAULTS = [FAILED, TCM_OK, FAILED]


def runs(out: Path, stub_url: str, tcm_data: Path) -> list[tuple[str, list[str], Any]]:
    common = ["--model", f"openai:stub@{stub_url}", "--max-retries", "0", "--concurrency", "1"]

    def ner(limit: int) -> list[str]:
        return ["run", "ner:ncbi", "--limit", str(limit), "--output-dir", str(out / "ner"), *common]

    tcm = ["run", "tcm-sd", "--data-dir", str(tcm_data), "--limit", "10"]
    tcm += ["--output-dir", str(out / "tcm"), *common]
    return [
        ("ner", ner(3), ([FAILED], NER_OK)),  # the first document stays missing
        ("ner", ner(5), ([REFUSED], NER_OK)),  # it is asked again, without response_format
        ("ner", ner(6), ([REFUSED, REFUSED], NER_OK)),  # the sixth: refused twice, missing
        ("ner", ner(6), ([], NER_OK)),  # and asked again
        ("tcm", tcm, (TCM_FAULTS, TCM_OK)),
        ("tcm", tcm, ([], TCM_OK)),
    ]


def run_side(tree: Path, out: Path, tcm_data: Path) -> dict[str, dict[str, str]]:
    """Each run's figures (`dumps`), by benchmark and pass: "ner 1", "ner 2", ..."""
    env = {**os.environ, "PYTHONPATH": str(tree), "CLINEVAL_DATA_DIR": str(DATA)}
    seen: dict[str, dict[str, str]] = {}
    with StubServer() as stub:
        for name, argv, (script, default) in runs(out, stub.base_url, tcm_data):
            stub.reset()
            stub.script(script, default=default)
            done = subprocess.run(
                [sys.executable, "-m", "clineval", "--quiet", *argv],
                env=env,
                capture_output=True,
                text=True,
                check=False,
            )
            if done.returncode not in (0, 1):  # 1: a run with missing predictions
                sys.exit(f"{tree}: {' '.join(argv)} -> {done.returncode}\n{done.stderr}")
            n = 1 + sum(key.startswith(name) for key in seen)
            seen[f"{name} {n}"] = dumps(out / name)
    return seen


def dumps(run_dir: Path) -> dict[str, str]:
    """What must not move, as text: the files, the stored records and requests, the counters."""
    out = {n: (run_dir / n).read_text() for n in ("results.json", "samples.jsonl")}
    with sqlite3.connect(run_dir / "store.sqlite") as conn:
        rows = conn.execute("SELECT task, kind, key, value FROM records ORDER BY 1, 2, 3")
        out["records"] = "\n".join(json.dumps(r, ensure_ascii=False) for r in rows)
        calls = conn.execute("SELECT key, model, request FROM calls ORDER BY key")
        out["requests"] = "\n".join(json.dumps(r, ensure_ascii=False) for r in calls)
    tasks = json.loads((run_dir / "manifest.json").read_text())["tasks"]
    llm = {name: task.get("llm") for name, task in sorted(tasks.items())}
    out["manifest llm"] = json.dumps(llm, ensure_ascii=False, indent=1)
    return out


def first_difference(a: str, b: str) -> str | None:
    for n, (x, y) in enumerate(zip(a.splitlines(), b.splitlines(), strict=False), 1):
        if x != y:
            return f"line {n}: {x[:150]!r} != {y[:150]!r}"
    return None if a == b else "lengths differ"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rev")
    parser.add_argument("--keep", type=Path, help="work here and keep it (an empty directory)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="chat-identical-") as tmp:
        work = args.keep or Path(tmp)
        base = work / "base"
        base.mkdir()
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", args.rev], capture_output=True, check=True
        )
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive.stdout, check=True)
        tcm_data = work / "tcm-data"
        subprocess.run(
            [sys.executable, "-m", "clineval", "data", "synth", "tcm-sd", "--out", str(tcm_data)],
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            capture_output=True,
            check=True,
        )
        befores = run_side(base, work / "before", tcm_data)
        afters = run_side(ROOT, work / "after", tcm_data)
        same = True
        for name, before in befores.items():
            after = afters[name]
            for what in before:
                diff = first_difference(before[what], after[what])
                same &= diff is None
                size = f"{len(before[what].splitlines())} lines"
                print(f"{name} {what}: " + (f"identical ({size})" if diff is None else diff))
        return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
