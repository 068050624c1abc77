"""Every model backend, registered once: its name, kinds, file check and capabilities.

Code outside `clineval/models/` never compares a backend's name (the architecture test scans
for it): it asks `backend_info(spec)` a question (`.takes_base_url`, `.has_batch`,
`.keeps_schema_as_grammar`, ...), so a new backend is its module under `clineval/models/`
plus one `BackendInfo` in `BACKEND_TABLE`, and every check, plan and judge bound that asks a
capability treats it by what it declares.

The file check and the chat opener are "module:function" strings, imported only when a spec
of that backend is checked or opened (a check may need torch's or gliner's install state, never
at startup). The check is called as `function(spec, task_names)`: `task_names` lists the tasks
there are, for a backend whose spec may name tasks (`predictions:TASK=FILE,...`); it raises
InputError naming the file. The opener (a chat backend's) takes a `clineval.models.llm.Opening`
and returns an async context manager of its `ChatModel`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol, cast

from clineval.errors import InputError
from clineval.messages import did_you_mean
from clineval.references import resolve_reference


class SpecOfBackend(Protocol):
    """What the registry reads of a model spec (clineval.models.spec.ModelSpec, which parses
    itself against this registry: the registry names none of its types)."""

    @property
    def backend(self) -> str: ...


class ModelKind(StrEnum):
    """What a model spec is (`ctx.backend.kind`): a chat model, a checkpoint, a baseline, a
    predictions file or a span tagger; a benchmark lists the kinds it accepts in
    `Benchmark.capabilities` and branches on the kind, never on a backend's name."""

    CHAT = "chat"
    CHECKPOINT = "checkpoint"
    BASELINE = "baseline"
    PREDICTIONS = "predictions"
    SPAN_TAGGER = "span_tagger"


FileCheck = Callable[[SpecOfBackend, Callable[[], Sequence[str]]], None]


@dataclass(frozen=True)
class BackendInfo:
    name: str  # the spec's prefix: `name:...`
    # what its specs can be; more than one when a file decides (`hf:PATH`: config.json)
    kinds: tuple[ModelKind, ...]
    # "module:function" checking the local files a spec names (see the module doc); None:
    # it names none (a server, a built-in baseline)
    file_check: str | None = None
    # it calls OpenAI-compatible servers: `@URL` in the spec, --base-url, --judge-base-url
    takes_base_url: bool = False
    # it has a batch interface (--batch, --batch-model, the batch files)
    has_batch: bool = False
    # a response_format's JSON schema becomes a grammar the reply cannot leave, so a bound in
    # the schema (a judge's explanation length) is kept, not only asked for
    keeps_schema_as_grammar: bool = False
    # it ignores response_format: a schema, or a bound in it, would be recorded but not kept
    ignores_response_format: bool = False
    # it applies its checkpoint's chat template itself, so its input can be cut after the
    # template (a server templates the input out of reach)
    templates_own_input: bool = False
    # "module:function" opening its chat model (clineval.models.llm.Opening -> an async
    # context manager of a ChatModel); None: it has no chat kind
    opener: str | None = None
    # an in-process server with a fixed number of slots (calls beyond them wait) on local
    # hardware, where a small model that loops writes its whole token cap slowly
    local_slots: bool = False
    # what follows `name:` in a spec, as `clineval run --help` lists the backends
    form: str = ""

    @property
    def replays_predictions(self) -> bool:
        """Its specs name files of outputs made elsewhere, replayed rather than computed."""
        return self.kinds == (ModelKind.PREDICTIONS,)

    def check_files(self, spec: SpecOfBackend, task_names: Callable[[], Sequence[str]]) -> None:
        if self.file_check is None:
            return
        check = cast(FileCheck, resolve_reference(self.file_check))
        check(spec, task_names)


BACKEND_TABLE: tuple[BackendInfo, ...] = (
    BackendInfo(
        "openai",
        (ModelKind.CHAT,),
        opener="clineval.models.llm:open_openai",
        takes_base_url=True,
        has_batch=True,
        form="MODEL[@URL]: an OpenAI-compatible server (vLLM, SGLang, llama.cpp, hosted APIs)",
    ),
    BackendInfo(
        "llamacpp",
        (ModelKind.CHAT,),
        file_check="clineval.models.llamacpp_server:check_spec_files",
        opener="clineval.models.llm:open_llamacpp",
        keeps_schema_as_grammar=True,
        local_slots=True,
        form="PATH.gguf: a local GGUF served in process by llama.cpp",
    ),
    BackendInfo(
        "hf",
        (ModelKind.CHAT, ModelKind.CHECKPOINT),
        file_check="clineval.models.hf_checkpoint:check_spec_files",
        opener="clineval.models.llm:open_hf",
        ignores_response_format=True,
        templates_own_input=True,
        form="PATH: a local Hugging Face checkpoint (a classifier, or a causal LM with a chat "
        "template)",
    ),
    BackendInfo(
        "gliner",
        (ModelKind.SPAN_TAGGER,),
        file_check="clineval.models.gliner_checkpoint:check_spec_files",
        form="PATH: a local GLiNER checkpoint (a span tagger)",
    ),
    BackendInfo(
        "baseline",
        (ModelKind.BASELINE,),
        form="NAME: a built-in baseline of the task (each benchmark names its own)",
    ),
    BackendInfo(
        "predictions",
        (ModelKind.PREDICTIONS,),
        file_check="clineval.models.predictions_files:check_spec_files",
        form="FILE or TASK=FILE,...: outputs made elsewhere, replayed and scored",
    ),
)

_BY_NAME = {info.name: info for info in BACKEND_TABLE}
BACKENDS: tuple[str, ...] = tuple(_BY_NAME)


def backend_named(name: str) -> BackendInfo:
    try:
        return _BY_NAME[name]
    except KeyError:
        raise InputError(
            f"unknown model backend {name!r}{did_you_mean(name, BACKENDS)} (known: {BACKENDS})"
        ) from None


def backend_info(spec: SpecOfBackend) -> BackendInfo:
    """The registration of `spec`'s backend (a parsed spec's backend is always registered)."""
    return backend_named(spec.backend)
