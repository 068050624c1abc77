"""Benchmark: TCM-SD scoring of 1,000,000 predictions over the 148 string labels.

    .venv/bin/python -m perf.bench_tcm_metrics [--n 1000000] [--repeats 5]

Three scorers on the same data, in one run, starting from Python lists of label strings (new
string objects, as parsed from JSON, so no cached hashes):
  * clineval: `encode` to class indices + bincount-based Macro-F1 and accuracy
    (clineval.benchmarks.tcm_sd.metrics), i.e. what `evaluate` does without the bootstrap;
  * sklearn: `f1_score(gold, pred, labels=all_148, average="macro", zero_division=0)` on the
    strings (+ `accuracy_score`);
  * the same scoring from already-encoded class indices (the strings-to-indices step is a
    dict lookup per string, and dominates);
  * the reference per-class loop (`reference_macro_f1_loop`), timed once (it is slow);
  * a floor: reading every string once (`str.join`), no mapping at all; the loop's time over
    it bounds the speed-up that any exact scorer of these str objects can reach here.
Predictions: 60% correct, 38% a random label, 2% invalid text (not one of the labels).
The numbers must be identical to sklearn's and equal to the loop's (to 1e-12: the loop sums
per-label F1 in another order).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from sklearn.metrics import accuracy_score, f1_score

import clineval.benchmarks.tcm_sd.metrics as cls


def _labels() -> list[str]:
    from clineval.benchmarks.tcm_sd.dataset import find_file, read_vocab
    from clineval.datapaths import resolve_data_root

    root = resolve_data_root(None)
    path = find_file([root], ("syndrome_vocab.txt",)) if root else None
    return read_vocab(path) if path else [f"证型{i:03d}证" for i in range(148)]


def make_data(n: int, labels: list[str], seed: int = 0) -> tuple[list[str], list[str]]:
    rng = np.random.default_rng(seed)
    weights = 1.0 / (np.arange(len(labels)) + 6.0) ** 2
    gold_idx = rng.choice(len(labels), size=n, p=weights / weights.sum())
    roll = rng.random(n)
    pred_idx = np.where(roll < 0.6, gold_idx, rng.integers(0, len(labels), n))
    names = [*labels, "无法判断"]
    pred_idx[roll > 0.98] = len(labels)
    # json round trip: fresh str objects, like predictions read from a file
    gold = json.loads(json.dumps([labels[i] for i in gold_idx], ensure_ascii=False))
    pred = json.loads(json.dumps([names[i] for i in pred_idx], ensure_ascii=False))
    return gold, pred


def ours(gold: list[str], pred: list[str], labels: list[str]) -> tuple[float, float]:
    index = {label: i for i, label in enumerate(labels)}
    g = cls.encode(gold, index)
    p = cls.encode(pred, index)
    return cls.scores(g, p, len(labels))


def sk(gold: list[str], pred: list[str], labels: list[str]) -> tuple[float, float]:
    f1 = f1_score(gold, pred, labels=labels, average="macro", zero_division=0)
    return float(f1), float(accuracy_score(gold, pred))


def timed(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    labels = _labels()
    gold, pred = make_data(args.n, labels)
    print(f"{args.n:,} predictions, {len(labels)} labels")
    t_ours, r_ours = timed(lambda: ours(gold, pred, labels), args.repeats)
    t_sk, r_sk = timed(lambda: sk(gold, pred, labels), max(1, args.repeats // 2))
    index = {label: i for i, label in enumerate(labels)}
    g_idx, p_idx = cls.encode(gold, index), cls.encode(pred, index)
    t_core, r_core = timed(
        lambda: cls.scores(g_idx, p_idx, len(labels)),
        args.repeats,
    )
    # A floor under ANY exact method that starts from these str objects: read each one once
    # (one C-level str.join over gold and predictions, no mapping, no hashing, no counting).
    t_read, _ = timed(lambda: ("\n".join(gold), "\n".join(pred)), args.repeats)
    t_ref, r_ref = timed(lambda: cls.reference_macro_f1_loop(gold, pred, labels), 1)
    print(f"clineval   {t_ours:9.3f} s  macro_f1={r_ours[0]!r} accuracy={r_ours[1]!r}")
    print(f"  of which scoring the encoded indices {t_core:.4f} s (encoding the strings: the rest)")
    print(f"sklearn    {t_sk:9.3f} s  macro_f1={r_sk[0]!r} accuracy={r_sk[1]!r}")
    print(f"ref. loop  {t_ref:9.3f} s  macro_f1={r_ref[0]!r} accuracy={r_ref[1]!r}")
    print(
        f"speed-up vs sklearn: {t_sk / t_ours:.1f}x; vs the per-class loop: {t_ref / t_ours:.0f}x"
    )
    print(f"scoring already-encoded labels vs the loop: {t_ref / t_core:.0f}x")
    print(
        f"reading every string once (str.join, nothing else): {t_read:.4f} s, so no method "
        f"that reads the strings can be more than {t_ref / t_read:.0f}x faster than the loop"
    )
    same_sk = r_ours == r_sk == r_core
    same_ref = abs(r_ours[0] - r_ref[0]) < 1e-12 and r_ours[1] == r_ref[1]
    print(f"identical to sklearn: {same_sk}; equal to the loop (1e-12): {same_ref}")
    if not (same_sk and same_ref):
        raise SystemExit("MISMATCH")


if __name__ == "__main__":
    main()
