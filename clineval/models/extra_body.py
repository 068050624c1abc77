"""Extra request fields for chat servers: `--option llm.extra_body=JSON` (every chat model of a
run) and `--option llm.judge_extra_body=JSON` (judge calls only, merged over the former).

An OpenAI-compatible server often takes fields beyond the OpenAI ones: vLLM's
`chat_template_kwargs` (`{"enable_thinking": false}` serves a Qwen3 judge with thinking off, as
the released ClinConsensus judge is run), `top_k`, `repetition_penalty` ... They are sent as
given, at the top level of the request body. For `hf:PATH` models (generated in process) only
`chat_template_kwargs` means something: they become keyword arguments of the tokenizer's
apply_chat_template; any other field is refused for them.

The fields are part of each call's cache key (ChatRequest.extra_body), so another setting is
another call; a call without extra fields keeps the key it always had. Fields clineval sets from
its own flags (model, messages, temperature, max_tokens, seed, response_format, stream, n) are
refused, and so are credential-like names: the fields are recorded with the run (manifest and
run store), and credentials belong in the environment (OPENAI_API_KEY).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

from clineval.errors import InputError
from clineval.jsonio import JsonProblem, parse_json
from clineval.models.llm_base import ChatModel, ChatRequest, ChatResponse

OPTION = "llm.extra_body"
JUDGE_OPTION = "llm.judge_extra_body"
TEMPLATE_KWARGS = "chat_template_kwargs"
RESERVED = frozenset(
    {"model", "messages", "temperature", "max_tokens", "seed", "response_format", "stream", "n"}
)
# apply_chat_template arguments clineval passes itself
RESERVED_TEMPLATE_KWARGS = frozenset(
    {"conversation", "messages", "tokenize", "add_generation_prompt", "return_tensors"}
)
_CREDENTIAL = re.compile(
    r"(^|[_-])(api[_-]?key|token|secret|password|authori[sz]ation|credentials?)($|[_-])",
    re.IGNORECASE,
)


def parse_extra_body(text: str) -> dict[str, Any]:
    """An option's value: a JSON object of extra request fields (ValueError with the reason)."""
    try:  # through the input boundary: lone surrogates replaced, deep nesting refused
        value = parse_json(text, "--option")
    except JsonProblem as exc:
        raise ValueError(f"not JSON ({exc.reason})") from None
    if not isinstance(value, dict) or not value:
        raise ValueError('must be a non-empty JSON object, e.g. {"top_k": 20}')
    reserved = sorted(set(value) & RESERVED)
    if reserved:
        raise ValueError(f"{', '.join(reserved)}: set by clineval from its own flags")
    secret = sorted(k for k in value if _CREDENTIAL.search(k))
    if secret:
        raise ValueError(
            f"{', '.join(secret)}: looks like a credential; extra fields are recorded with the "
            "run, credentials belong in the environment"
        )
    kwargs = value.get(TEMPLATE_KWARGS)
    if kwargs is not None and not isinstance(kwargs, dict):
        raise ValueError(f"{TEMPLATE_KWARGS} must be a JSON object")
    return value


def extra_body_for(options: Mapping[str, str], role: str) -> dict[str, Any] | None:
    """The extra fields of a `role` ("candidate", "judge", ...) call under a run's options."""
    merged: dict[str, Any] = {}
    for key in (OPTION, JUDGE_OPTION) if role == "judge" else (OPTION,):
        raw = options.get(key)
        if raw is None:
            continue
        try:
            merged.update(parse_extra_body(raw))
        except ValueError as exc:  # checked up front by the run; here for direct callers
            raise InputError(f"--option {key}: {exc}") from None
    return merged or None


def with_extra_body(request: ChatRequest, extra: Mapping[str, Any] | None) -> ChatRequest:
    """`request` carrying `extra` (the request's own fields win)."""
    if not extra:
        return request
    merged = {**extra, **(request.extra_body or {})}
    return dataclasses.replace(request, extra_body=merged)


def check_in_process(extra: Mapping[str, Any] | None, label: str) -> None:
    """An in-process (hf:PATH) model takes only chat_template_kwargs."""
    if not extra:
        return
    others = sorted(set(extra) - {TEMPLATE_KWARGS})
    if others:
        raise InputError(
            f"--option {OPTION} / {JUDGE_OPTION}: {label} generates in process and takes only "
            f"{TEMPLATE_KWARGS} (its chat template's arguments), not {', '.join(others)}"
        )
    clash = sorted(set(extra.get(TEMPLATE_KWARGS) or {}) & RESERVED_TEMPLATE_KWARGS)
    if clash:
        raise InputError(
            f"--option {OPTION}: {TEMPLATE_KWARGS} {', '.join(clash)} are set by clineval"
        )


def template_kwargs(request: ChatRequest) -> dict[str, Any]:
    """Keyword arguments of apply_chat_template for an in-process model's call."""
    value = (request.extra_body or {}).get(TEMPLATE_KWARGS)
    return dict(value) if isinstance(value, dict) else {}


class ExtraBodyModel:
    """A ChatModel whose every call carries the extra fields (so they are in its cache key)."""

    def __init__(self, inner: ChatModel, extra: Mapping[str, Any]) -> None:
        self._inner = inner
        self._extra = dict(extra)
        self.label = inner.label

    async def chat(self, request: ChatRequest) -> ChatResponse:
        return await self._inner.chat(with_extra_body(request, self._extra))

    def __getattr__(self, name: str) -> Any:  # counters and the like of the wrapped model
        return getattr(self._inner, name)
