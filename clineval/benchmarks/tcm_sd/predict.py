"""TCM-SD predictions: one predictor per model backend, each writing its outputs to the run store.

Every output is stored as a `prediction` record keyed by sample id as soon as its batch is
done, and ids already stored are skipped (resume). A run store binds the settings its first
predictions were made with (check_prediction_settings), so a resume never mixes predictions of
another model or other options.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TypeVar

from clineval.benchmarks.base import RunContext
from clineval.benchmarks.kit import PREDICTION, pending, predictions_path, read_predictions
from clineval.benchmarks.tcm_sd.dataset import KNOWLEDGE_NAMES, TcmRecord, find_file, read_knowledge
from clineval.benchmarks.tcm_sd.samples import (
    TASK,
    TcmData,
    label_roots,
    option,
    record_fields,
)
from clineval.data.checksums import sha256_file
from clineval.errors import InputError
from clineval.models.backends import ModelKind
from clineval.progress import step, track
from clineval.store import stable_hash

BATCH = 512
Todo = list[tuple[str, TcmRecord]]  # (sample id, record) of the samples still to predict
_Item = TypeVar("_Item")


def _batches(items: Sequence[_Item], size: int) -> Iterator[Sequence[_Item]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def predict_in_batches(
    ctx: RunContext,
    todo: Todo,
    predict: Callable[[list[TcmRecord]], list[str | None]],
    description: str,
    batch: int = BATCH,
) -> None:
    """Run `predict` over `todo` batch by batch, storing each batch as soon as it is done."""
    chunks = list(_batches(todo, batch))
    for chunk in track(chunks, len(chunks), f"{description} predict", unit="batches"):
        preds = predict([r for _, r in chunk])
        ctx.store.put_records(
            TASK, PREDICTION, ((k, {"pred": p}) for (k, _), p in zip(chunk, preds, strict=True))
        )


def _predict_tfidf(ctx: RunContext, data: TcmData, todo: Todo) -> None:
    from clineval.benchmarks.tcm_sd.baselines import TfidfBaseline, record_text

    if not data.train:
        raise InputError("baseline:tfidf needs the train split", path=data.data_root / "tcm-sd")
    fields = record_fields(ctx)
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
        with step(f"tcm-sd tf-idf training on {len(texts):,} records", 1, unit="model") as done:
            model = TfidfBaseline().fit(texts, [str(r.label) for r in data.train])
            done.advance()
        ctx.store.put_artifact(name, model.to_bytes(), {"n_train": len(texts), "fields": fields})
        ctx.note(TASK, "tfidf_model", {"artifact": name, "trained_now": True})
    predict_in_batches(
        ctx,
        todo,
        lambda rs: list(model.predict([record_text(r, fields) for r in rs])),
        "tcm-sd tfidf",
        batch=2048,
    )


def _predict_knowledge(ctx: RunContext, data: TcmData, todo: Todo) -> None:
    from clineval.benchmarks.tcm_sd.baselines import KnowledgeBaseline, record_text

    explicit: str | None = option(ctx, "knowledge")
    path = (
        Path(explicit)
        if explicit
        else find_file(label_roots(data.data_root, ctx.data_root), KNOWLEDGE_NAMES)
    )
    if path is None:
        raise InputError(
            "baseline:knowledge needs the knowledge corpus (syndrome_knowledge_fixed.json.gz or "
            "syndrome_knowledge.json) under <data root>/tcm-sd/, or --option tcm.knowledge=PATH"
        )
    embed: str | None = option(ctx, "embed")
    model = KnowledgeBaseline(data.labels, read_knowledge(path), embed=embed)
    ctx.note(
        TASK, "knowledge", {"path": str(path), "sha256": sha256_file(path), "model": model.name}
    )
    fields = record_fields(ctx)
    predict_in_batches(
        ctx,
        todo,
        lambda rs: list(model.predict([record_text(r, fields) for r in rs])),
        f"tcm-sd {model.name}",
        batch=64 if embed else 2048,
    )


def _label_check(label: object) -> str | None:
    return None if label is None or isinstance(label, str) else '"label" must be a string or null'


def _predict_file(ctx: RunContext, data: TcmData, todo: Todo) -> None:
    """`predictions:FILE`: JSON Lines `{"id": "<user_id>", "label": "<syndrome>"}`, read by the
    kit (every line checked against the whole split). A label outside the 148 is allowed
    (`null` too): it is stored as given and scored as invalid, never mapped onto a label."""
    path = predictions_path(ctx, TASK)  # the runner notes its path and sha256
    by_id = read_predictions(path, data.split_ids, "label", _label_check)
    ctx.store.put_records(
        TASK, PREDICTION, ((k, {"pred": by_id[r.user_id]}) for k, r in todo if r.user_id in by_id)
    )


def _predict_hf(ctx: RunContext, data: TcmData, todo: Todo) -> None:
    from clineval.benchmarks.tcm_sd.hf_classifier import HFSyndromeClassifier

    batch: int = option(ctx, "batch")
    max_length: int = option(ctx, "max_length")
    with step(f"tcm-sd {ctx.model.label}: loading the model", 1, unit="model") as loading:
        model = HFSyndromeClassifier(Path(ctx.model.name), data.labels, max_length=max_length)
        loading.advance()
    ctx.note(TASK, "hf_model", model.describe())
    predict_in_batches(ctx, todo, model.predict, "tcm-sd hf", batch=batch)


def _predict_llm(ctx: RunContext, data: TcmData, todo: Todo) -> None:
    from clineval.benchmarks.tcm_sd.llm import predict_llm

    predict_llm(ctx, data.labels, data.norm, todo, record_fields(ctx))


# Options that change what a model predicts; a resume must not mix predictions made with others.
_PREDICTION_OPTIONS = ("data", "split", "synth_scale", "fields", "embed", "knowledge", "max_length")


def check_prediction_settings(ctx: RunContext) -> None:
    """Refuse to add predictions to a run store that holds ones made with other settings."""
    # The raw option text (None when unset), not the typed value: run stores already hold
    # settings in this form, and a typed value would make them refuse their own resume.
    settings = {
        "model": ctx.model.label,
        **{key: ctx.config.options.get(f"tcm.{key}") for key in _PREDICTION_OPTIONS},
    }
    stored = ctx.store.get_meta("tcm-sd.prediction_settings")
    # Settings bind only once a prediction is stored: a run refused before that (a bad
    # predictions file) must not refuse the corrected command.
    if stored is None or not ctx.store.count_records(TASK, PREDICTION):
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
    todo = pending(ctx, TASK, data.samples(), lambda kr: kr[0])
    ctx.note(TASK, "predicted_now", len(todo))
    if not todo:
        return
    kind, name = ctx.backend.kind, ctx.model.name
    if kind is ModelKind.BASELINE:
        if name == "tfidf":
            _predict_tfidf(ctx, data, todo)
        elif name == "knowledge":
            _predict_knowledge(ctx, data, todo)
        else:
            raise InputError(f"unknown TCM-SD baseline {name!r} (known: tfidf, knowledge)")
    elif kind is ModelKind.PREDICTIONS:
        _predict_file(ctx, data, todo)
    elif kind is ModelKind.CHAT:  # a server, a GGUF, or hf:PATH of a causal LM
        _predict_llm(ctx, data, todo)
    else:  # an hf sequence-classification checkpoint
        _predict_hf(ctx, data, todo)
