"""The one interface every LLM backend offers (OpenAI-compatible HTTP, local llama.cpp).

Tasks and the judge code against `ChatModel` only. A backend caches every finished call in the
run store (key = hash of model, generation settings, messages, template version), retries with
bounded jittered backoff, and shares the run's single concurrency limit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from clineval.store import canonical_json, hash_text


@dataclass(frozen=True)
class ChatRequest:
    """One chat call a benchmark builds: the messages ((role, content) pairs) and sampling
    settings, the version of the prompt that made them (in the call's cache key: a changed
    prompt is a new request), and optionally a `response_format`, routing and limits."""

    messages: tuple[tuple[str, str], ...]  # (role, content) pairs
    temperature: float = 0.0
    max_tokens: int | None = None
    seed: int | None = None
    # OpenAI `response_format`, e.g. {"type": "json_schema", "json_schema": {...}}
    response_format: dict[str, Any] | None = None
    # Version of the prompt template that built `messages`; part of the cache key.
    template_version: str = ""
    # Routing only, never part of the cache key: calls with the same key share a long prompt
    # prefix (a ClinConsensus case and answer) and go to the same replica, whose server then
    # computes that prefix once (clineval.models.replicas). None: no shared prefix to reuse.
    prefix_key: str | None = field(default=None, compare=False)
    # Extra fields of the request body (clineval.models.extra_body: --option llm.extra_body),
    # e.g. vLLM's chat_template_kwargs. In the cache key only when given, so a call without
    # extra fields keeps the key it had before the field existed (old run stores resume).
    extra_body: dict[str, Any] | None = None
    # Keep only this many tokens of the templated prompt (the ClinConsensus authors' judge
    # truncation, applied by a backend that templates the prompt itself: hf:). In the cache key
    # only when given, like extra_body.
    max_input_tokens: int | None = None

    def cache_payload(self, model_label: str) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "model": model_label,
            "messages": [list(m) for m in self.messages],
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
            "response_format": self.response_format,
            "template_version": self.template_version,
        }
        if self.extra_body:
            payload["extra_body"] = self.extra_body
        if self.max_input_tokens is not None:
            payload["max_input_tokens"] = self.max_input_tokens
        return payload


def request_key(request: ChatRequest, model_label: str) -> tuple[str, str]:
    """(the request's canonical JSON, its run-store key). Encoded once: the JSON is hashed for
    the key and is what the store keeps as the call's request."""
    request_json = canonical_json(request.cache_payload(model_label))
    return request_json, hash_text(request_json)


@dataclass
class ChatResponse:
    """A chat model's reply: its `text`, the model that gave it, token usage and timings."""

    text: str
    model: str
    # prompt_tokens, completion_tokens, total_tokens, cached_tokens (ints), timings (a dict):
    # see clineval.models.usage.usage_of
    usage: dict[str, Any] = field(default_factory=dict)
    cached: bool = False
    finish_reason: str | None = None
    system_fingerprint: str | None = None
    # the call's key in the run store: a record names the calls it came from, so that its
    # task's usage is read from the stored calls, as the run's is (models.usage.task_usage)
    key: str | None = None


class ChatError(Exception):
    """A call that failed after the bounded retries (or at once, for a non-retryable error).

    `kind` is one of: "timeout", "connection", "rate_limit", "server", "bad_request",
    "bad_response". The message never contains an API key.
    """

    def __init__(self, kind: str, message: str):
        self.kind = kind
        super().__init__(f"{kind}: {message}")


class ChatModel(Protocol):
    """What every chat backend offers: `await chat(request) -> ChatResponse` and a `label`
    (backend:name, never a URL or key). Benchmarks reach it through `predict_by_chat` or
    `open_chat_model`, which add the run store as cache, resume and the concurrency limit."""

    label: str  # e.g. "openai:qwen2.5-7b" (no URL, no key)

    async def chat(self, request: ChatRequest) -> ChatResponse: ...
