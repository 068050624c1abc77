"""What a model spec IS, decided once: the backend registry.

A task does not branch on backend strings nor read checkpoint files to find out what a model
can do; it asks `resolve_backend(spec).kind`:

  chat         answers chat requests: `openai:` (a server), `llamacpp:` (a GGUF served in
               process), `hf:PATH` of a causal LM with a chat template
  checkpoint   `hf:PATH` of a classification head (sequence or token classifier)
  baseline     a built-in baseline, named by the spec's name (the task knows which it has)
  predictions  `predictions:FILE`, outputs made elsewhere, replayed
  span_tagger  `gliner:PATH`, a GLiNER checkpoint: text + label prompts -> typed spans

`hf:PATH` is the one spec whose kind depends on a file (config.json's architectures); it is
read once per RunContext (which caches the resolved backend), not at every question.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from clineval.models.spec import ModelSpec


class ModelKind(StrEnum):
    CHAT = "chat"
    CHECKPOINT = "checkpoint"
    BASELINE = "baseline"
    PREDICTIONS = "predictions"
    SPAN_TAGGER = "span_tagger"


@dataclass(frozen=True)
class Backend:
    spec: ModelSpec
    kind: ModelKind

    @property
    def is_chat(self) -> bool:
        return self.kind is ModelKind.CHAT


def static_kind(spec: ModelSpec) -> ModelKind | None:
    """The kind a spec has without reading any file; None for `hf:PATH` (chat or checkpoint,
    by its config.json)."""
    if spec.backend == "hf":
        return None
    return resolve_backend(spec).kind


def resolve_backend(spec: ModelSpec) -> Backend:
    if spec.backend in ("openai", "llamacpp"):
        return Backend(spec, ModelKind.CHAT)
    if spec.backend == "hf":
        from clineval.models.hf_chat import is_causal_lm_checkpoint

        causal = is_causal_lm_checkpoint(spec.name)
        return Backend(spec, ModelKind.CHAT if causal else ModelKind.CHECKPOINT)
    if spec.backend == "predictions":
        return Backend(spec, ModelKind.PREDICTIONS)
    if spec.backend == "gliner":
        return Backend(spec, ModelKind.SPAN_TAGGER)
    return Backend(spec, ModelKind.BASELINE)


def model_traits(spec: ModelSpec) -> frozenset[str]:
    """What `spec` is, in the words an `--option` declares the models it applies to with
    (clineval.options.Option.models): its backend, its kind and `backend:name`. `hf:PATH` is
    chat or checkpoint by a file read later, so it counts as both here."""
    kind = static_kind(spec)
    kinds = {kind.value} if kind is not None else {ModelKind.CHAT.value, ModelKind.CHECKPOINT.value}
    return frozenset({spec.backend, f"{spec.backend}:{spec.name}", *kinds})
