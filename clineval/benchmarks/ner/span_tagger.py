"""The NER tasks with a span tagger (`gliner:PATH`): prompts from the dataset's types, one
stored prediction per document, committed batch by batch.

The prompts are the dataset's OMOP types, each prompted with its own name unless
`--option ner.labels=type:text,...` gives it other label texts (types of other datasets in
that option are left out, so one option serves a run of several ner:* tasks). `ner.threshold`
(default: the gliner package's) and `ner.flat` (default true) go to the model as they are.

Each record is `{"entities": [[start, end, type], ...], "settings": {...}}`. A document whose
stored record was made with other settings (labels, threshold, flat) is predicted again on
resume, like a CRF record of another model: a run never mixes spans of two settings.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from clineval.benchmarks.base import RunContext
from clineval.benchmarks.ner.gliner_tagger import (
    BATCH_SIZE,
    GlinerTagger,
    TaggerSettings,
    ncer_label_order,
)
from clineval.benchmarks.ner.options import NER_OPTIONS
from clineval.benchmarks.ner.records import NerDocument
from clineval.errors import InputError

SETTINGS_KEY = "settings"


def tagger_settings(ctx: RunContext, types: Sequence[str]) -> TaggerSettings:
    """The prompts for `types` and the decoding settings, from the run's options."""
    given: tuple[tuple[str, str], ...] = NER_OPTIONS.value(ctx.config.options, "labels") or ()
    prompts = {
        entity_type: tuple(text for t, text in given if t == entity_type) or (entity_type,)
        for entity_type in types
    }
    chunking = str(NER_OPTIONS.value(ctx.config.options, "chunking"))
    hash_seed: int | None = NER_OPTIONS.value(ctx.config.options, "hash_seed")
    if hash_seed is not None and chunking != "ncer":
        raise InputError(
            "--option ner.hash_seed orders the labels as NCER's extractor does: it applies "
            "only with --option ner.chunking=ncer"
        )
    settings = TaggerSettings(
        prompts=prompts,
        threshold=NER_OPTIONS.value(ctx.config.options, "threshold"),
        flat=NER_OPTIONS.value(ctx.config.options, "flat"),
        chunking=chunking,
    )
    try:
        settings.prompt_types()  # one label text for two types: refused naming the option
    except InputError as exc:
        raise InputError(f"--option ner.labels: {exc.message}") from None
    if chunking != "ncer":
        return settings
    # NCER builds its label set from its config's label texts in the config's order, and
    # that history is part of what orders the set: the texts go in as the option gives them
    # (not grouped by type), then the type names of types given no text.
    texts = [text for t, text in given if t in prompts]
    texts += [t for t in types if not any(g == t for g, _ in given)]
    order = ncer_label_order(texts, hash_seed)
    return replace(settings, label_order=tuple(order), hash_seed=hash_seed)


def settings_record(settings: TaggerSettings) -> dict[str, Any]:
    """What a stored prediction says about how it was made (compared on resume)."""
    record: dict[str, Any] = {
        "labels": {t: list(texts) for t, texts in settings.prompts.items()},
        "threshold": settings.threshold,  # None: the package's default
        "flat": settings.flat,
    }
    if settings.chunking != "windows":  # absent for the default: old records still match
        record["chunking"] = settings.chunking
        # NCER's prompt order follows the hash seed: a resume under another order predicts again
        record["label_order"] = settings.ncer_order()
    return record


def span_tagger_todo(
    ctx: RunContext, documents: list[NerDocument], stored: dict[str, Any], types: Sequence[str]
) -> list[NerDocument]:
    """Documents without a prediction made with this run's settings."""
    wanted = settings_record(tagger_settings(ctx, types))
    return [
        doc
        for doc in documents
        if doc.id not in stored or stored[doc.id].get(SETTINGS_KEY) != wanted
    ]


def load_span_tagger(ctx: RunContext, task: str, types: Sequence[str]) -> GlinerTagger:
    """The run's gliner model, prompted for `types`; what it is goes into the manifest."""
    tagger = GlinerTagger.load(ctx.model.name, tagger_settings(ctx, types))
    ctx.note(task, "gliner", tagger.describe())
    return tagger


def predict_span_tagger(
    tagger: GlinerTagger,
    todo: list[NerDocument],
    put: Callable[[list[tuple[str, dict[str, Any]]]], None],
    advance: Callable[[], None],
) -> None:
    """Predict `todo`, handing each batch's records to `put` (the run store) as soon as the
    batch is done, and `advance` once per document."""
    made = settings_record(tagger.settings)
    for first in range(0, len(todo), BATCH_SIZE):
        chunk = todo[first : first + BATCH_SIZE]
        predicted = tagger.predict([doc.text for doc in chunk])
        rows = []
        for doc, spans in zip(chunk, predicted, strict=True):
            entities = [[s.start, s.end, s.type] for s in spans]
            rows.append((doc.id, {"entities": entities, SETTINGS_KEY: made}))
        put(rows)
        for _ in chunk:
            advance()
