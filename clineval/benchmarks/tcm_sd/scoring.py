"""TCM-SD scores, from the stored predictions only (never a model call).

Macro-F1 over all 148 labels, accuracy, invalid rate, seeded bootstrap intervals, per-class
P/R/F1, head/middle/tail groups by train frequency, the top confusions, and one sample row per
evaluated record (a model's raw reply clipped, so record text does not spread into reports).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

import clineval.benchmarks.tcm_sd.metrics as cls
from clineval.benchmarks.base import RunContext, TaskResult
from clineval.benchmarks.kit import PREDICTION
from clineval.benchmarks.tcm_sd.samples import TASK, TcmData, option
from clineval.benchmarks.tcm_sd.schema import METRICS
from clineval.metrics.bootstrap import DEFAULT_RESAMPLES

TOP_CONFUSIONS = 20

# A model may echo the record it was given; real TCM-SD text (non-commercial licence, possibly
# residual identifiers) must not spread into samples.jsonl and reports. The full reply stays in
# the run store, which only the user's own commands read.
RAW_OUTPUT_SHOWN = 80


def _clip_raw_output(raw: str) -> str:
    if len(raw) <= RAW_OUTPUT_SHOWN:
        return raw
    return (
        raw[:RAW_OUTPUT_SHOWN]
        + f"… [{len(raw) - RAW_OUTPUT_SHOWN} more characters in the run store]"
    )


@dataclass
class _Outputs:
    """The stored outputs of the evaluated samples, in sample order (None where absent)."""

    preds: list[str | None]
    raws: list[Any]
    parses: list[str | None]  # how a chat reply was read (tcm_answer); None otherwise
    absent: list[str]  # the keys without a stored output

    @property
    def missing(self) -> int:
        return len(self.absent)


def mrc_answer(answer: str, labels: Sequence[str]) -> tuple[str, str]:
    """(label, how) by the authors' run_tcm_mrc.py rule for an answer that is not a label: the
    first label, in vocabulary order, that the answer contains ("contained"), else the first
    label of the vocabulary ("label_0"). The answer is taken as it is (nothing stripped), so
    an empty one, the MRC model's "no answer", and one of white space only are label 0."""
    for label in labels:
        if label in answer:
            return label, "contained"
    return labels[0], "label_0"


def _map_answers(outputs: _Outputs, data: TcmData) -> tuple[list[str | None], Counter[str]]:
    """`tcm.answer_mapping=mrc`: every stored output that is not a label is mapped by
    `mrc_answer`, from the predicted text when it is one (a predictions file; the empty text
    included, which is what an MRC model answers when it finds no span) else from the
    model's reply (a chat model whose reply named no single label). A record with no stored
    output, and a predictions file's `null` (no text at all), stay missing or invalid: the
    authors' script always has a text."""
    mapped: list[str | None] = []
    how: Counter[str] = Counter()
    for pred, raw in zip(outputs.preds, outputs.raws, strict=True):
        answer = pred if isinstance(pred, str) else raw
        if pred in data.index or not isinstance(answer, str):
            mapped.append(pred)
            continue
        label, rule = mrc_answer(answer, data.labels)
        how[rule] += 1
        mapped.append(label)
    return mapped, how


def _stored_outputs(ctx: RunContext, data: TcmData) -> _Outputs:
    stored = ctx.store.records(TASK, PREDICTION)
    out = _Outputs([], [], [], [])
    for key in data.keys:
        value = stored.get(key)
        if value is None:
            out.absent.append(key)
            out.preds.append(None)
            out.raws.append(None)
            out.parses.append(None)
        else:
            out.preds.append(value.get("pred"))
            out.raws.append(value.get("raw_output"))
            out.parses.append(value.get("parse"))
    return out


def _groups(
    data: TcmData,
    buckets: dict[str, cls.IntArray],
    gold: cls.IntArray,
    pred: cls.IntArray,
    f1: cls.FloatArray,
) -> dict[str, Any]:
    """Head / middle / tail labels by train frequency: Macro-F1 and accuracy within each."""
    groups: dict[str, Any] = {}
    for name, members in buckets.items():
        in_group = np.isin(gold, members)
        groups[name] = {
            "macro_f1": float(np.mean(f1[members])),
            "accuracy": cls.accuracy(gold[in_group], pred[in_group]) if in_group.any() else None,
            "n": int(in_group.sum()),
            "n_labels": int(members.size),
            "train_count_range": [
                int(data.train_counts[members].min()),
                int(data.train_counts[members].max()),
            ],
            "labels": [data.labels[i] for i in members],
        }
    return groups


def _samples(data: TcmData, outputs: _Outputs, valid: np.ndarray) -> list[dict[str, Any]]:
    samples = []
    rows = zip(
        data.keys, data.records, outputs.preds, outputs.raws, outputs.parses, valid, strict=True
    )
    for key, record, p, raw, parse, v in rows:
        row: dict[str, Any] = {"id": key, "gold": record.label, "pred": p}
        if raw is not None:
            row["raw_output"] = raw if data.fixture else _clip_raw_output(raw)
        if parse is not None:
            row["parse"] = parse
        row["valid"] = bool(v)
        row["correct"] = bool(v and p == record.label)
        samples.append(row)
    return samples


def evaluate_data(ctx: RunContext, data: TcmData) -> TaskResult:
    outputs = _stored_outputs(ctx, data)
    k = len(data.labels)
    gold = cls.encode([r.label for r in data.records], data.index)
    mapping = str(option(ctx, "answer_mapping"))
    answers = outputs.preds
    mapped_how: Counter[str] = Counter()
    if mapping == "mrc":
        outputs.preds, mapped_how = _map_answers(outputs, data)
    pred = cls.encode(outputs.preds, data.index)
    n = int(gold.size)
    counts = cls.label_counts(gold, pred, k)
    precision, recall, f1 = cls.per_label_prf(counts)
    valid = pred >= 0
    present = cls.present_labels(counts)
    n_present = int(present.sum())
    seed = ctx.config.seed
    ci = cls.bootstrap_intervals(gold, pred, k, DEFAULT_RESAMPLES, seed)
    buckets = cls.frequency_buckets(data.train_counts) if data.train else {}
    group_of = {int(i): name for name, members in buckets.items() for i in members}
    per_class = {
        label: {
            "precision": float(precision[i]),
            "recall": float(recall[i]),
            "f1": float(f1[i]),
            "support": int(counts.n_gold[i]),
            "predicted": int(counts.n_pred[i]),
            "train_count": int(data.train_counts[i]),
            **({"group": group_of[i]} if group_of else {}),
        }
        for i, label in enumerate(data.labels)
    }
    confusions = [
        {"gold": data.labels[g], "pred": data.labels[p], "count": c}
        for g, p, c in cls.top_confusions(gold, pred, k, TOP_CONFUSIONS)
    ]
    metrics: dict[str, Any] = {
        # None rather than NaN when nothing was evaluated (--limit 0, an empty shard): NaN is
        # not JSON.
        "macro_f1": float(np.mean(f1)) if n else None,
        # The authors' run_tcm.py figure (sklearn classification_report without labels=): the
        # mean over the labels present in gold or predictions. Equal to macro_f1 on the full
        # test split; higher on a subset (--limit, --shard, --dedupe, dev), where many of the
        # 148 labels have no record and would count as F1 0 in macro_f1.
        "present_macro_f1": float(np.mean(f1[present])) if n else None,
        "n_labels_present": n_present,
        # Two macro-F1s stand side by side: say which one the benchmark ranks by.
        "primary_metric": METRICS.primary.key,
        "accuracy": int(counts.tp.sum()) / n if n else None,
        "invalid_rate": float(np.mean(~valid)) if n else None,
        "n": n,
        "n_invalid": int((~valid).sum()),
        "n_missing": outputs.missing,
        "n_labels": k,
        "labels_without_gold": int((counts.n_gold == 0).sum()),
        "macro_f1_ci": list(ci["macro_f1"]) if n else None,
        "present_macro_f1_ci": list(ci["present_macro_f1"]) if n else None,
        "accuracy_ci": list(ci["accuracy"]) if n else None,
        "bootstrap": {
            "resamples": DEFAULT_RESAMPLES,
            "seed": seed,
            "level": 0.95,
            "method": "percentile; records resampled within each gold label",
        },
        "split": data.split,
        "model": ctx.model.label,
        "fixture": data.fixture,
        "per_class": per_class,
        "head_middle_tail": _groups(data, buckets, gold, pred, f1),
        "confusions": confusions,
    }
    if data.fixture:
        metrics["data_note"] = (
            "SYNTHETIC fixture generated by clineval from the TCM-SD knowledge corpus, not the "
            "TCM-SD benchmark: these numbers are not TCM-SD results"
        )
    if any(p is not None for p in outputs.parses):
        # Chat replies mapped onto a label through the normalization table (or a missing 证)
        # are counted here, so such a mapping is never silent.
        metrics["parse_status"] = dict(sorted(Counter(p for p in outputs.parses if p).items()))
    # Which rule turned answers into labels, and how often it mapped one: never silent.
    metrics["answer_mapping"] = {
        "rule": mapping,
        "mapped_contained": mapped_how["contained"],
        "mapped_label_0": mapped_how["label_0"],
    }
    if "duplicates" in data.notes:
        metrics["duplicates"] = data.notes["duplicates"]
    if "dedupe_removed" in data.notes:
        metrics["dedupe_removed"] = data.notes["dedupe_removed"]
    samples = _samples(data, outputs, valid)
    if mapping == "mrc":
        for row, before, after in zip(samples, answers, outputs.preds, strict=True):
            if before != after:  # the answer as stored, clipped like a raw reply
                row["answer"] = (
                    before if data.fixture or before is None else _clip_raw_output(before)
                )
    # a sample without a prediction is scored invalid; the run fails (benchmarks.missing)
    return TaskResult(metrics=metrics, samples=samples, missing=list(outputs.absent))
