"""What a model spec IS, decided once: the backend registry.

A task does not branch on backend strings nor read checkpoint files to find out what a model
can do; it asks `resolve_backend(spec).kind`:

  chat         answers chat requests: `openai:` (a server), `llamacpp:` (a GGUF served in
               process), `hf:PATH` of a causal LM with a chat template
  checkpoint   `hf:PATH` of a classification head (sequence or token classifier)
  baseline     a built-in baseline, named by the spec's name (the task knows which it has)
  predictions  `predictions:FILE`, outputs made elsewhere, replayed
  span_tagger  `gliner:PATH`, a GLiNER checkpoint: text + label prompts -> typed spans

The kinds a backend can have are its registration's (`clineval.models.registry`, which also
holds its capabilities). `hf:PATH` is the one spec whose kind depends on a file (config.json's
architectures); it is read once per RunContext (which caches the resolved backend), not at
every question.
"""

from __future__ import annotations

from dataclasses import dataclass

from clineval.models.registry import ModelKind, backend_info
from clineval.models.spec import ModelSpec

__all__ = ["Backend", "ModelKind", "model_traits", "resolve_backend", "static_kind"]


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
    kinds = backend_info(spec).kinds
    return kinds[0] if len(kinds) == 1 else None


def resolve_backend(spec: ModelSpec) -> Backend:
    kind = static_kind(spec)
    if kind is not None:
        return Backend(spec, kind)
    # the one backend whose kind a file decides (registry: chat or checkpoint)
    from clineval.models.hf_chat import is_causal_lm_checkpoint

    causal = is_causal_lm_checkpoint(spec.name)
    return Backend(spec, ModelKind.CHAT if causal else ModelKind.CHECKPOINT)


def model_traits(spec: ModelSpec) -> frozenset[str]:
    """What `spec` is, in the words an `--option` declares the models it applies to with
    (clineval.options.Option.models): its backend, its kind and `backend:name`. `hf:PATH` is
    chat or checkpoint by a file read later, so it counts as both here."""
    kinds = {kind.value for kind in backend_info(spec).kinds}
    return frozenset({spec.backend, f"{spec.backend}:{spec.name}", *kinds})
