"""The `--option ner.*` keys of the Clinical NER tasks (declared once; see clineval.options)."""

from __future__ import annotations

from clineval.benchmarks.ner.records import DATASET_TYPES
from clineval.options import (
    Option,
    OptionGroup,
    RunFacts,
    boolean,
    choice,
    integer,
    number,
    text,
)

TOKENIZER_OPTION = "ner.tokenizer"
# Every entity type of the NER datasets (the OMOP domains), for options that name types.
# What PYTHONHASHSEED accepts besides "random" (ner.hash_seed is one).
HASH_SEED_MAX = 2**32 - 1
ALL_TYPES = tuple(dict.fromkeys(t for types in DATASET_TYPES.values() for t in types))
# ner.label_map is read by hf_tagger.py under the same name (LABEL_MAP_OPTION there): the
# tagger parses its own value when it maps a checkpoint's labels to the dataset's types.


def label_prompts(value: str) -> tuple[tuple[str, str], ...]:
    """`condition:disease,drug:chemical,...` -> ((type, label text), ...) in the order given.

    A type may take several label texts (`condition:disease,condition:medical condition`);
    a type of no NER dataset is refused (a typo would otherwise leave that type unprompted).
    """
    pairs: list[tuple[str, str]] = []
    for item in value.split(","):
        if not item.strip():
            continue
        entity_type, sep, prompt = item.partition(":")
        entity_type, prompt = entity_type.strip(), prompt.strip()
        if not sep or not entity_type or not prompt:
            raise ValueError(f"{item.strip()!r} is not type:label text")
        if entity_type not in ALL_TYPES:
            raise ValueError(f"unknown type {entity_type!r} (types: {', '.join(ALL_TYPES)})")
        if (entity_type, prompt) not in pairs:
            pairs.append((entity_type, prompt))
    if not pairs:
        raise ValueError("expected type:label text,...")
    return tuple(pairs)


def probability(value: str) -> float:
    """A number in [0, 1], in ASCII digits."""
    try:
        return float(_unit(value))
    except ValueError as exc:
        if "must be" in str(exc):
            raise ValueError("must be between 0 and 1") from None
        raise


_unit = number(0.0, maximum=1.0)


def _needs_own_tokens(value: object, run: RunFacts) -> str | None:
    """ner.tokenizer=model scores on the tokens a checkpoint stores with its predictions:
    only an hf: token classifier stores them, so another model would fail only at scoring,
    after predicting every document."""
    if value == "model" and "checkpoint" not in run.candidate:
        return (
            "the model's own tokens come from an hf: checkpoint (a token classifier), "
            "and --model is not one"
        )
    return None


NER_OPTIONS = OptionGroup(
    namespace="ner",
    applies_to="the ner:* tasks",
    options=(
        Option(
            "tokenizer",
            choice("regex", "model"),
            "token boundaries of the token metric: the benchmark's regex, or the checkpoint's "
            "own tokenizer (hf backend only)",
            "regex",
            unusable=_needs_own_tokens,
        ),
        Option(
            "preparation",
            choice("clineval", "ncer"),
            "test gold: clineval's preparation, or NCER's prepare_dataset.py rules (NCBI "
            "mentions whose text mismatches their offsets dropped, BC5CDR not de-duplicated)",
            "clineval",
        ),
        Option(
            "crf_workers",
            integer(minimum=1, maximum=256),
            "processes that train the CRF baseline's models at once",
            None,
            models=("baseline:crf",),
        ),
        Option(
            "label_map",
            text(),
            "hf checkpoint labels to OMOP types: LABEL:type,LABEL:type,...",
            None,
            models=("checkpoint",),
        ),
        Option(
            "labels",
            label_prompts,
            "gliner: the label text the model is prompted with, per type: "
            "type:text,type:text,... (several texts per type allowed; default: the type name; "
            "with ner.chunking=ncer their order is the order NCER's label set is built in)",
            None,
            models=("span_tagger",),
        ),
        Option(
            "threshold",
            probability,
            "gliner: the span score threshold, 0..1 (default: the gliner package's)",
            None,
            models=("span_tagger",),
        ),
        Option(
            "chunking",
            choice("windows", "ncer"),
            "gliner: long documents in overlapping token windows (clineval), or as NCER's "
            "extractor cuts them (character pieces, spans concatenated unmerged)",
            "windows",
            models=("span_tagger",),
        ),
        Option(
            "hash_seed",
            integer(minimum=0, maximum=HASH_SEED_MAX),
            "gliner with ner.chunking=ncer: the PYTHONHASHSEED whose string hashes order the "
            "label prompts, as NCER's list(set(...)) ordered them in a process with that seed "
            "(default: this process's own hash seed)",
            None,
            models=("span_tagger",),  # read by the gliner tagger alone
        ),
        Option(
            "flat",
            boolean,
            "gliner: flat decoding (no two spans share a token); false allows overlaps",
            "true",
            models=("span_tagger",),
        ),
        Option(
            "response_format",
            choice("json_schema", "json_object", "none"),
            "how a chat model is asked for its spans",
            "json_schema",
            models=("chat",),
        ),
    ),
)
