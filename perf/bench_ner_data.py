"""Time NER data preparation: cold (parse from disk) and warm (per-process parse cache) loads.

Run: .venv/bin/python -m perf.bench_ner_data [--data-dir DIR]
Prints seconds per (dataset, split) and the total for the four test sets.
"""

from __future__ import annotations

import argparse
import time

from clineval.benchmarks.ner.corpora import load_ner_split
from clineval.datapaths import resolve_data_root

DATASETS = ("ncbi", "bc5cdr", "biored", "chia")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args()
    root = resolve_data_root(args.data_dir, required=True)
    assert root is not None
    for label in ("cold", "warm"):
        total = 0.0
        for dataset in DATASETS:
            start = time.perf_counter()
            prepared = load_ner_split(dataset, "test", root)
            elapsed = time.perf_counter() - start
            total += elapsed
            docs, spans = len(prepared.documents), prepared.notes["spans"]
            print(f"{label} {dataset:7s} test: {elapsed:6.3f} s ({docs} docs, {spans} spans)")
        print(f"{label} all four test sets: {total:.3f} s")
    for dataset in DATASETS:
        for split in ("train", "dev"):
            start = time.perf_counter()
            prepared = load_ner_split(dataset, split, root)
            elapsed = time.perf_counter() - start
            print(f"{dataset:7s} {split:5s}: {elapsed:6.3f} s ({len(prepared.documents)} docs)")


if __name__ == "__main__":
    main()
