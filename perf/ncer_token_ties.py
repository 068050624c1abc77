"""How much NCER's token-label tie rule moves the token macro-F1 with Python's hash seed.

NCER (WadoodAbdul/clinical_ner_benchmark, `models/utils.py`) labels a token with
`max(set(char_labels), key=char_labels.count)`: among labels with equal character counts the
winner is whichever `set` iteration yields first, and a set of strings iterates in an order
fixed by the string hashes, i.e. by PYTHONHASHSEED. clineval breaks the tie to the leftmost
label, the same under every seed. This script re-states NCER's rule (written from the rule, not
copied), applies it to the gold and predicted spans of a finished run (samples.jsonl: text,
gold, pred) with the regex tokens, and scores each seed with sklearn's classification_report
as NCER does. It runs itself once per seed in a subprocess, since the seed is read at start-up.

    PYTHONPATH=. .venv/bin/python perf/ncer_token_ties.py RUN_DIR [--task ner:biored] [--seeds 8]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sklearn.metrics import classification_report

from clineval.benchmarks.ner.records import DATASET_TYPES
from clineval.benchmarks.ner.tokens import TOKEN_RE


def _char_labels(spans: Sequence[Sequence[Any]]) -> dict[int, str]:
    # A later span overwrites an earlier one character by character (NCER's dict merge).
    labels: dict[int, str] = {}
    for start, end, label in spans:
        labels.update(dict.fromkeys(range(int(start), int(end)), str(label)))
    return labels


def _token_labels(text: str, spans: Sequence[Sequence[Any]], leftmost: bool) -> list[str]:
    chars = _char_labels(spans)
    out = []
    for match in TOKEN_RE.finditer(text):
        labels = [chars.get(i, "O") for i in range(match.start(), match.end())]
        if leftmost:  # clineval: most characters, ties to the label seen first
            out.append(max(dict.fromkeys(labels), key=labels.count))
        else:  # NCER: ties to whatever the set yields first (hash-seed dependent)
            out.append(max(set(labels), key=labels.count))
    return out


def _ties(text: str, spans: Sequence[Sequence[Any]]) -> int:
    chars = _char_labels(spans)
    n = 0
    for match in TOKEN_RE.finditer(text):
        labels = [chars.get(i, "O") for i in range(match.start(), match.end())]
        counts = sorted((labels.count(x) for x in set(labels)), reverse=True)
        n += len(counts) > 1 and counts[0] == counts[1]
    return n


def score(run: Path, task: str, leftmost: bool) -> dict[str, Any]:
    gold: list[str] = []
    pred: list[str] = []
    ties = {"gold": 0, "pred": 0}
    with (run / "samples.jsonl").open(encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            if row.get("task") != task:
                continue
            gold += _token_labels(row["text"], row["gold"], leftmost)
            pred += _token_labels(row["text"], row["pred"], leftmost)
            ties["gold"] += _ties(row["text"], row["gold"])
            ties["pred"] += _ties(row["text"], row["pred"])
    types = list(DATASET_TYPES[task.split(":", 1)[1]])
    report = classification_report(gold, pred, labels=types, output_dict=True, zero_division=0)
    return {"macro_f1": report["macro avg"]["f1-score"], "tokens": len(gold), "ties": ties}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("run", type=Path)
    parser.add_argument("--task", default="ner:biored")
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(score(args.run, args.task, leftmost=False)))
        return
    left = score(args.run, args.task, leftmost=True)
    print(
        f"tokens {left['tokens']}, tied tokens: gold {left['ties']['gold']}, "
        f"pred {left['ties']['pred']}"
    )
    print(f"leftmost (clineval)      macro-F1 {left['macro_f1']:.6f}")
    seen = []
    for seed in range(args.seeds):
        env = {**os.environ, "PYTHONHASHSEED": str(seed)}
        argv = [sys.executable, __file__, str(args.run), "--task", args.task, "--one"]
        out = subprocess.run(argv, env=env, check=True, capture_output=True, text=True).stdout
        value = json.loads(out)["macro_f1"]
        seen.append(value)
        print(f"NCER PYTHONHASHSEED={seed:<3}  macro-F1 {value:.6f}")
    print(
        f"NCER spread over {args.seeds} seeds: {min(seen):.6f} .. {max(seen):.6f} "
        f"({max(seen) - min(seen):.6f})"
    )


if __name__ == "__main__":
    main()
