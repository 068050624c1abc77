"""gliner:PATH throughput on CPU: documents per second of a GLiNER built offline here.

    .venv/bin/python -m perf.bench_gliner [--size tiny|base] [--dataset ncbi] [--repeat 3]

Builds a randomly initialised GLiNER (nothing downloaded: a BERT encoder of the chosen size and
a WordPiece tokenizer written here; `tiny` = 1 layer of width 16, `base` = BERT-base's 12
layers of width 768, the cost class of the smaller real GLiNER checkpoints), with GLiNER's
default `max_len` of 384 words, then on the real test split of the dataset (data root as
`clineval` finds it):
  1. the backend alone (`GlinerTagger.predict`, batches of BATCH_SIZE windows, prompts = the
     dataset's types): documents/s and windows/s, best of --repeat passes;
  2. the whole command, `clineval --quiet run ner:DATASET --model gliner:PATH` in a fresh
     process on a fresh directory (import, load, predict, store, score): wall seconds and
     documents/s.
Random weights: the spans are meaningless, only the time is measured (the tiny model's
weights are widened so that a threshold of 0.5 keeps some spans to merge).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SIZES = {
    "tiny": {"hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2},
    "base": {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12},
}
_WORDS = ["the", "patient", "with", "disease", "cancer", "of", "and", "in", "gene", "drug"]
_CHARS = list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,;:()-/%'[]+=<>")


def build(path: Path, size: str) -> Path:
    """A random GLiNER of the given encoder size at path/gliner (standalone checkpoint)."""
    import torch
    import transformers
    from gliner import GLiNER, GLiNERConfig

    encoder = path / "encoder"
    encoder.mkdir(parents=True, exist_ok=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *_WORDS, *_CHARS]
    vocab += ["##" + c for c in _CHARS]
    (encoder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    transformers.BertTokenizerFast(vocab_file=str(encoder / "vocab.txt")).save_pretrained(encoder)
    torch.manual_seed(0)
    dims = SIZES[size]
    config = transformers.BertConfig(
        vocab_size=len(vocab),
        intermediate_size=4 * dims["hidden_size"],
        max_position_embeddings=512,
        **dims,
    )
    transformers.BertModel(config).save_pretrained(encoder)
    hidden = max(dims["hidden_size"], 16)
    model = GLiNER.from_config(GLiNERConfig(model_name=str(encoder), hidden_size=hidden))
    if size == "tiny":
        # as in tests/test_ner_gliner.py: wider random weights spread the span scores, so a
        # threshold of 0.5 keeps some spans (work for the merge) instead of none
        with torch.no_grad():
            for parameter in model.parameters():
                if parameter.dim() > 1:
                    parameter.normal_(0.0, 0.2)
    model.save_pretrained(path / "gliner")
    shutil.rmtree(encoder)
    return path / "gliner"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="tiny")
    parser.add_argument("--dataset", default="ncbi")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    import torch

    from clineval.benchmarks.ner.bio import word_offsets
    from clineval.benchmarks.ner.corpora import load_ner_split
    from clineval.benchmarks.ner.gliner_tagger import BATCH_SIZE, GlinerTagger, TaggerSettings
    from clineval.benchmarks.ner.records import DATASET_TYPES
    from clineval.datapaths import resolve_data_root

    root = resolve_data_root(None, required=True)
    assert root is not None
    documents = load_ner_split(args.dataset, "test", root).documents
    texts = [doc.text for doc in documents]
    types = DATASET_TYPES[args.dataset]
    work = Path(tempfile.mkdtemp(prefix="clineval-bench-gliner-"))
    try:
        checkpoint = build(work, args.size)
        params = sum(p.numel() for p in torch.load(checkpoint / "pytorch_model.bin").values())
        settings = TaggerSettings({t: (t,) for t in types}, threshold=0.5)
        started = time.perf_counter()
        tagger = GlinerTagger.load(checkpoint, settings)
        load_s = time.perf_counter() - started
        windows = sum(len(tagger.windows([t[a:b] for a, b in word_offsets(t)])) for t in texts)
        tokens = sum(len(word_offsets(t)) for t in texts)
        best = float("inf")
        spans = 0
        for _ in range(args.repeat):
            started = time.perf_counter()
            predicted = tagger.predict(texts)
            best = min(best, time.perf_counter() - started)
            spans = sum(len(s) for s in predicted)
        print(
            f"model: random GLiNER, {args.size} BERT encoder ({params:,} parameters), "
            f"max_len {tagger.max_words} words, batch {BATCH_SIZE} windows, "
            f"torch {torch.__version__}, {torch.get_num_threads()} threads, "
            f"load average {os.getloadavg()[0]:.1f}"
        )
        print(
            f"data: {args.dataset} test, {len(texts)} documents, {tokens:,} tokens, "
            f"{windows} windows, {spans:,} spans predicted"
        )
        print(f"load (GlinerTagger.load): {load_s:.2f} s")
        print(
            f"predict (backend, best of {args.repeat}): {best:.2f} s = "
            f"{len(texts) / best:,.1f} documents/s, {windows / best:,.1f} windows/s, "
            f"{tokens / best:,.0f} tokens/s"
        )
        run_dir = work / "run"
        cmd = [sys.executable, "-m", "clineval", "--quiet", "run", f"ner:{args.dataset}"]
        cmd += ["--model", f"gliner:{checkpoint}", "--output-dir", str(run_dir)]
        cmd += ["--data-dir", str(root), "--option", "ner.threshold=0.5"]
        started = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - started
        if proc.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
        print(
            f"clineval run ner:{args.dataset} --model gliner:PATH (fresh process, all included): "
            f"{wall:.2f} s wall = {len(texts) / wall:,.1f} documents/s"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
