"""TCM-SD samples: what a run evaluates.

The official JSON Lines splits come from the data root, or from the cache of
`clineval data fetch tcm-sd` when the data root has none; only when asked with
`--option tcm.data=synthetic` is the project's synthetic fixture generated into the run
directory instead. The 148 labels are read in vocabulary order; --dedupe / --limit / --shard
choose the evaluated samples. Options are read through their typed declarations
(clineval.benchmarks.tcm_sd.options).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from clineval.benchmarks.base import RunContext
from clineval.benchmarks.kit import select_samples
from clineval.benchmarks.tcm_sd.dataset import (
    EXPECTED_LABELS,
    NORM_TABLE_NAMES,
    SPLITS,
    TEXT_FIELDS,
    VOCAB_NAME,
    TcmRecord,
    duplicate_report,
    find_file,
    find_split,
    overlaps_train,
    read_records,
    read_vocab,
    sample_keys,
)
from clineval.benchmarks.tcm_sd.norm import NormTable, load_norm_table
from clineval.benchmarks.tcm_sd.options import TCM_OPTIONS
from clineval.data.cache import default_cache_dir
from clineval.data.checksums import sha256_file
from clineval.datapaths import resolve_data_root
from clineval.errors import InputError

TASK = "tcm-sd"
FIXTURE_DIR = "tcm-sd-synthetic-fixture"
MISSING_HELP = (
    "the official TCM-SD splits are missing: run `clineval data fetch tcm-sd` (downloads and "
    "verifies them from Borororo/ZY-BERT into the fetch cache, where this task finds them), or "
    "put train.json, dev.json and test.json (see docs/data-sources.md) in <data root>/tcm-sd/, "
    "or run on the project's SYNTHETIC fixture with --option tcm.data=synthetic (its scores "
    "are not TCM-SD results)"
)


@dataclass
class TcmData:
    labels: list[str]
    index: dict[str, int]
    split: str
    records: list[TcmRecord]  # the evaluated samples (after dedupe, limit, shard)
    keys: list[str]  # their unique sample ids
    split_ids: set[str]  # every user_id of the split (a predictions file may hold any)
    train: list[TcmRecord]
    train_counts: np.ndarray
    fixture: bool
    data_root: Path
    norm: NormTable | None
    notes: dict[str, Any] = field(default_factory=dict)

    def samples(self) -> list[tuple[str, TcmRecord]]:
        """(sample id, record) of every evaluated sample, in order."""
        return list(zip(self.keys, self.records, strict=True))


def option(ctx: RunContext, name: str) -> Any:
    """The typed value of `--option tcm.<name>` (its parsed default when unset)."""
    return TCM_OPTIONS.value(ctx.config.options, name)


def label_roots(data_root: Path, ctx_root: Path | None) -> list[Path]:
    """Where label files may live: the split's root, the run's data root, the default root."""
    roots = [data_root]
    for extra in (ctx_root, resolve_data_root(None)):
        if extra is not None and extra not in roots:
            roots.append(extra)
    return roots


def fetched_split(split: str) -> Path | None:
    """The official `split` in the cache of `clineval data fetch tcm-sd`, if it is there."""
    path, synthetic = find_split(default_cache_dir(), split)
    return path if path is not None and not synthetic else None


def official_root(data_root: Path | None, split: str) -> Path:
    """Where the official splits are: the data root when it holds `split`; else the cache of
    `clineval data fetch tcm-sd` ($CLINEVAL_CACHE_DIR or the default) when it does, so a
    fetch is found without flags; else the data root, whose missing split is then the error."""
    if data_root is not None and find_split(data_root, split)[0] is not None:
        return data_root
    if fetched_split(split) is not None:
        return default_cache_dir()
    if data_root is None:
        raise InputError("no data root: " + MISSING_HELP)
    return data_root


def synthetic_root(ctx: RunContext) -> Path:
    """The run's synthetic fixture, generated once into the run directory (deterministic for
    the run's seed and scale, so `clineval score` finds the same data)."""
    from clineval.benchmarks.tcm_sd.synthetic import write_synthetic

    scale: float = option(ctx, "synth_scale")
    root = ctx.output_dir / FIXTURE_DIR
    if not all((root / "tcm-sd" / f"{s}.synthetic.json").is_file() for s in SPLITS):
        write_synthetic(root, seed=ctx.config.seed, data_dir=ctx.data_root, scale=scale)
    return root


def record_fields(ctx: RunContext) -> tuple[str, ...]:
    """The record fields a model reads (`--option tcm.fields`), in order."""
    from clineval.benchmarks.tcm_sd.baselines import DEFAULT_FIELDS

    raw: str | None = option(ctx, "fields")
    if raw is None:
        return DEFAULT_FIELDS
    fields = tuple(f.strip() for f in raw.split(",") if f.strip())
    bad = [f for f in fields if f not in TEXT_FIELDS]
    if bad or not fields:
        raise InputError(f"--option tcm.fields: {bad or raw!r} not among {TEXT_FIELDS}")
    return fields


def load_data(ctx: RunContext) -> TcmData:
    source: str = option(ctx, "data")
    split: str = option(ctx, "split")
    root = synthetic_root(ctx) if source == "synthetic" else official_root(ctx.data_root, split)
    eval_path, eval_synthetic = find_split(root, split)
    train_path, _ = find_split(root, "train")
    if eval_path is None:
        raise InputError(MISSING_HELP, path=root / "tcm-sd" / f"{split}.json")
    roots = label_roots(root, ctx.data_root)
    vocab_path = find_file(roots, (VOCAB_NAME,))
    if vocab_path is None:
        raise InputError(f"{VOCAB_NAME} (the 148 labels) not found", path=root / "tcm-sd")
    labels = read_vocab(vocab_path)
    if len(labels) != EXPECTED_LABELS:
        # Macro-F1 averages over the whole label set: another vocabulary is another metric.
        raise InputError(
            f"expected the {EXPECTED_LABELS} TCM-SD labels, found {len(labels)}", path=vocab_path
        )
    records = read_records(eval_path, labels)
    if not records:
        # Scores of no records (n = 0, exit 0) would read as a run that worked.
        raise InputError(f"nothing to evaluate: the {split} split holds no records", path=eval_path)
    train = read_records(train_path, labels) if train_path is not None else []
    norm_path = find_file(roots, NORM_TABLE_NAMES)
    notes: dict[str, Any] = {
        "split": split,
        "files": {
            p.name: {"path": str(p), "sha256": sha256_file(p)}
            for p in (eval_path, train_path, vocab_path)
            if p is not None
        },
        "n_labels": len(labels),
        "n_split": len(records),
        "n_train": len(train),
    }
    if train:
        notes["duplicates"] = duplicate_report(records, train).as_dict()
    # Ids and sample keys come from the whole split, before --dedupe, so they never depend on
    # the options (a predictions file may cover the whole split).
    split_ids = {r.user_id for r in records}
    pairs = list(zip(sample_keys(records), records, strict=True))
    if TCM_OPTIONS.value(ctx.config.options, "dedupe"):
        if not train:
            raise InputError("--dedupe needs the train split", path=root / "tcm-sd" / "train.json")
        hits = overlaps_train(records, train)
        notes["dedupe_removed"] = sum(hits)
        pairs = [pair for pair, hit in zip(pairs, hits, strict=True) if not hit]
    pairs = select_samples(ctx, pairs, lambda kr: kr[0])  # --limit, then --shard
    index = {label: i for i, label in enumerate(labels)}
    train_counts = np.bincount([index[r.label] for r in train if r.label], minlength=len(labels))
    fixture = eval_synthetic or any(r.synthetic for _, r in pairs)
    notes["n_evaluated"] = len(pairs)
    notes["fixture"] = fixture
    return TcmData(
        labels=labels,
        index=index,
        split=split,
        records=[r for _, r in pairs],
        keys=[k for k, _ in pairs],
        split_ids=split_ids,
        train=train,
        train_counts=train_counts,
        fixture=fixture,
        data_root=root,
        norm=load_norm_table(norm_path) if norm_path is not None else None,
        notes=notes,
    )
