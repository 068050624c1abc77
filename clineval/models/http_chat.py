"""A chat model behind one or more OpenAI-compatible base URLs (replicas of one model):
stored calls first (clineval.models.chat_store), then one attempt at a time on a replica
(clineval.models.replicas) within the run's concurrency limit, with the bounded retry policy
(clineval.retry)."""

from __future__ import annotations

import asyncio
import contextlib
import random
from typing import Any

from clineval.concurrency import RunCallState
from clineval.errors import InputError
from clineval.models.chat_store import StoredChatModel, empty_reply_reason
from clineval.models.http_errors import AttemptFailed
from clineval.models.http_transport import Transport
from clineval.models.llm_base import ChatError, ChatRequest
from clineval.models.replicas import Replica, ReplicaSet
from clineval.retry import RetryPolicy
from clineval.secrets import redact
from clineval.store import RunStore


def chat_body(
    model_name: str, request: ChatRequest, send_prompt_cache_key: bool = False
) -> dict[str, Any]:
    """The chat-completions body of `request`: what the synchronous path posts and what a
    batch line carries (clineval.models.batch), so that either answers the same call."""
    body: dict[str, Any] = {
        "model": model_name,
        "messages": [{"role": r, "content": c} for r, c in request.messages],
        "temperature": request.temperature,
    }
    if request.max_tokens is not None:
        body["max_tokens"] = request.max_tokens
    if request.seed is not None:
        body["seed"] = request.seed
    if request.response_format is not None:
        body["response_format"] = request.response_format
    if send_prompt_cache_key and request.prefix_key is not None:
        # Hosted APIs route prompt caching by it; routing only, not in the cache key.
        body["prompt_cache_key"] = request.prefix_key
    if request.extra_body:  # never a field set above (clineval.models.extra_body)
        body.update(request.extra_body)
    return body


class HTTPChatModel(StoredChatModel):
    """A ChatModel over one or more OpenAI-compatible base URLs (replicas of one model)."""

    def __init__(
        self,
        *,
        label: str,
        model_name: str,
        base_urls: tuple[str, ...],
        role: str,
        transport: Transport,
        store: RunStore,
        state: RunCallState,
        policy: RetryPolicy,
        timeout_s: float,
        rng: random.Random | None = None,
        send_prompt_cache_key: bool = False,
        server_slots: int | None = None,
    ) -> None:
        if not base_urls:
            raise InputError(f"{label}: no base URL")
        super().__init__(label=label, model_name=model_name, role=role, store=store, state=state)
        self._replicas = ReplicaSet(base_urls)
        self._transport = transport
        self._policy = policy
        self._timeout_s = timeout_s
        self._rng = rng or random.Random()
        # Off by default: servers that check their fields refuse a body with an unknown one.
        self._send_prompt_cache_key = send_prompt_cache_key
        # Known decoding slots of a one-replica local server (llamacpp:): calls wait for one
        # before they are sent, outside the run's limit and the timeout.
        self._server_slots = server_slots if len(base_urls) == 1 else None

    # -- HTTP ----------------------------------------------------------------------------------
    def _body(self, request: ChatRequest) -> dict[str, Any]:
        return chat_body(self.model_name, request, self._send_prompt_cache_key)

    async def _complete(self, request: ChatRequest) -> dict[str, Any]:
        """The chat.completion for `request` from a replica, with the bounded retry policy."""
        # The key counts as active on its replica from now until the call is done, also
        # while it waits for a slot or sleeps before a retry (replicas: placement by keys).
        self._replicas.begin(request.prefix_key)
        try:
            return await self._attempts(request)
        finally:
            self._replicas.end(request.prefix_key)

    async def _attempts(self, request: ChatRequest) -> dict[str, Any]:
        semaphore = self._state.semaphore()
        avoid: Replica | None = None
        retries = 0
        gate: Any = contextlib.nullcontext()
        if self._server_slots is not None:
            gate = self._state.server_slots(self._replicas.replicas[0].base_url, self._server_slots)
        while True:
            async with gate, semaphore:
                # Picked once a slot is free, so "fewest in flight" is the state right now.
                replica = self._replicas.pick(avoid, request.prefix_key)
                replica.in_flight += 1
                self.stats.http_attempts += 1
                try:
                    data = await self._transport.post_chat(
                        replica.base_url, self._body(request), self._timeout_s
                    )
                    replica.succeeded()
                    empty = empty_reply_reason(data)
                    if empty is not None:  # a failed attempt, retried like a garbled body
                        raise AttemptFailed("bad_response", empty, True)
                    break
                except AttemptFailed as failure:
                    error = failure
                    if failure.kind in ("connection", "timeout"):
                        replica.failed()
                finally:
                    replica.in_flight -= 1
            if not error.retryable or retries >= self._policy.max_retries:
                self.stats.errors[error.kind] += 1
                tries = f" after {retries + 1} attempts" if retries else ""
                raise ChatError(error.kind, redact(f"{self.label}{tries}: {error.message}"))
            await asyncio.sleep(self._policy.delay(retries, error.retry_after, self._rng))
            retries += 1
            # The one count of retries: the progress line and the manifest both read it.
            self.stats.retries += 1
            avoid = replica
        return data  # type: ignore[no-any-return]
