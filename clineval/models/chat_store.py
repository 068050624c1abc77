"""What every chat backend shares: the run store as a cache, single flight, group commit.

A backend (HTTP server, in-process Hugging Face model) only implements `_complete(request)`,
which returns an OpenAI chat.completion dict. `StoredChatModel.chat` does the rest:
  1. the run store: key = request_key(request, model label); a stored answer is returned at
     once, with no call (this is what makes resume and reruns free);
  2. single flight: an identical request already in the air is awaited, not made twice;
  3. the finished call is committed to the store before chat() returns (GroupCommit: calls
     finishing close together share one commit, made in a worker thread), with the request
     (no URL, no key), the response text, model, finish reason, temperature, seed,
     system_fingerprint and token usage (clineval.models.usage.usage_of: with the prompt
     tokens a server served from its prompt cache).

A reply without usable content (content null, "" or only whitespace) is never stored: it is
ChatError("bad_response"), so the call counts as failed and a rerun asks again. A stored
empty answer would be served from the cache forever. HTTP backends retry it within their
bounded budget first (clineval.models.llm); `empty_reply_reason` is the one test for both.
"""

from __future__ import annotations

import asyncio
import functools
from abc import ABC, abstractmethod
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar, TypeGuard

from clineval.concurrency import ModelCallStats, RunCallState
from clineval.models.llm_base import ChatError, ChatRequest, ChatResponse, request_key
from clineval.models.usage import usage_of
from clineval.store import RunStore
from clineval.store_reuse import REUSED_FROM

_FINISH_REASON_SHOWN = 40  # a server's finish_reason is its text: quote a short piece only


def empty_reply_reason(data: Mapping[str, Any]) -> str | None:
    """Why a chat.completion (already shaped: choices[0].message) has no usable content, or
    None when it has some. clineval sends no tools, so a reply is its text or nothing."""
    choice = data["choices"][0]
    content = choice["message"].get("content")
    if isinstance(content, str) and content.strip():
        return None
    what = (
        "no content" if content is None else "empty content" if not content else "only whitespace"
    )
    finish = choice.get("finish_reason")
    if finish is not None:
        what += f", finish_reason={str(finish)[:_FINISH_REASON_SHOWN]!r}"
    return f"empty reply ({what})"


def is_usable_stored_call(stored: Mapping[str, Any] | None) -> TypeGuard[Mapping[str, Any]]:
    """A stored call that answers its request. An empty answer that a store kept before empty
    replies were refused is not: the run asks again (and replaces it), and --dry-run counts
    it as a call to send."""
    return stored is not None and bool(str(stored["response"].get("text") or "").strip())


class GroupCommit:
    """Store writes of finished calls, batched, committed in a worker thread.

    `await put(row)` returns once the row is committed, so a caller never acts on an answer
    that a crash could still lose. The calls that finish while a commit is running wait for
    the next one: at 2,500 calls/s that is one commit per ~50 calls instead of 50 commits.
    The commit (SQLite page writes and WAL checkpoints, ~1 ms for a batch of judge prompts)
    runs off the event loop: SQLite releases the GIL, so it overlaps with HTTP work.
    """

    def __init__(self, store: RunStore) -> None:
        self._store = store
        self._rows: list[tuple[str, str, str, Any, Any]] = []
        self._batch: asyncio.Future[None] | None = None  # commit of the rows in self._rows
        self._writing = False

    async def put(self, row: tuple[str, str, str, Any, Any]) -> None:
        self._rows.append(row)
        if self._batch is None:
            loop = asyncio.get_running_loop()
            self._batch = loop.create_future()
            if not self._writing:
                loop.call_soon(self._start)  # after the callbacks already queued for this turn
        await asyncio.shield(self._batch)

    def _start(self) -> None:
        rows, batch = self._rows, self._batch
        self._rows, self._batch = [], None
        assert batch is not None
        self._writing = True
        write = asyncio.get_running_loop().run_in_executor(None, self._store.put_calls, rows)
        write.add_done_callback(functools.partial(self._written, batch))

    def _written(self, batch: asyncio.Future[None], write: asyncio.Future[None]) -> None:
        self._writing = False
        if write.cancelled():
            batch.cancel()
        elif (error := write.exception()) is not None:
            # e.g. disk full: every waiter of this batch gets the error
            batch.set_exception(error)
            batch.exception()  # retrieved here; each waiter re-raises it
        else:
            batch.set_result(None)
        if self._batch is not None:  # rows that came in meanwhile
            self._start()


class StoredChatModel(ABC):
    """A ChatModel whose every finished call is cached in the run store (see module doc)."""

    # Kept with each call's usage: how it was made (a batch backend: {"batch": True}, which
    # the cost summary prices at batch rates, clineval.models.usage).
    usage_marks: ClassVar[Mapping[str, Any]] = MappingProxyType({})

    def __init__(
        self, *, label: str, model_name: str, role: str, store: RunStore, state: RunCallState
    ) -> None:
        self.label = label
        self.model_name = model_name
        self.role = role
        self._store = store
        self._state = state
        self._in_flight: dict[str, asyncio.Future[ChatResponse]] = {}
        self._writer = GroupCommit(store)
        self.stats: ModelCallStats = state.model_stats(f"{label} ({role})")

    @abstractmethod
    async def _complete(self, request: ChatRequest) -> dict[str, Any]:
        """An OpenAI chat.completion dict for `request` (choices[0].message.content, usage),
        or ChatError."""

    @staticmethod
    def _from_stored(stored: Mapping[str, Any], cached: bool, key: str) -> ChatResponse:
        resp = stored["response"]
        return ChatResponse(
            text=resp["text"],
            model=resp.get("model") or "",
            usage=dict(stored.get("usage") or {}),
            cached=cached,
            finish_reason=resp.get("finish_reason"),
            system_fingerprint=resp.get("system_fingerprint"),
            key=key,
        )

    async def chat(self, request: ChatRequest) -> ChatResponse:
        self.stats.requests += 1
        request_json, key = request_key(request, self.label)  # the JSON is stored by _record
        stored = self._store.get_call(key)
        if is_usable_stored_call(stored):
            self.stats.cache_hits += 1
            return self._from_stored(stored, cached=True, key=key)
        reused = self._store.reused_call(key)
        if reused is not None and is_usable_stored_call(reused[1]):
            return await self._reuse(key, request_json, *reused)
        pending = self._in_flight.get(key)
        if pending is not None:  # the same question is already on its way: share its answer
            self.stats.cache_hits += 1
            try:
                return await asyncio.shield(pending)
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if pending.cancelled() and task is not None and not task.cancelling():
                    # The caller that sent it was cancelled, not this one: ask again.
                    self.stats.cache_hits -= 1
                    self.stats.requests -= 1
                    return await self.chat(request)
                raise
        future: asyncio.Future[ChatResponse] = asyncio.get_running_loop().create_future()
        self._in_flight[key] = future
        try:
            data = await self._complete(request)
            empty = empty_reply_reason(data)
            if empty is not None:  # never stored: a rerun must ask again
                self.stats.errors["bad_response"] += 1
                raise ChatError("bad_response", f"{self.label}: {empty}")
            response = await self._record(key, request_json, request, data)
        except BaseException as exc:
            if not future.done():
                if isinstance(exc, asyncio.CancelledError):
                    future.cancel()  # joined callers that are not cancelled ask again
                else:
                    future.set_exception(exc)
                    future.exception()  # mark retrieved: waiters re-raise it, nobody else must
            raise
        else:
            future.set_result(response)
            return response
        finally:
            self._in_flight.pop(key, None)

    async def _reuse(
        self, key: str, request_json: str, source: str, stored: Mapping[str, Any]
    ) -> ChatResponse:
        """A call answered by a --reuse directory: copied into this run's store, marked with
        where it came from (the run stays whole without that directory; its cost was paid
        there, clineval.models.usage leaves it out of this run's)."""
        self.stats.cache_hits += 1
        self.stats.reused += 1
        usage = {**(stored.get("usage") or {}), REUSED_FROM: source}
        await self._writer.put((key, self.label, request_json, stored["response"], usage))
        return self._from_stored(
            {"response": stored["response"], "usage": usage}, cached=True, key=key
        )

    async def _record(
        self, key: str, request_json: str, request: ChatRequest, data: dict[str, Any]
    ) -> ChatResponse:
        choice = data["choices"][0]
        usage = {**usage_of(data), **self.usage_marks}
        response = {
            "text": choice["message"].get("content") or "",
            "model": data.get("model") or self.model_name,
            "finish_reason": choice.get("finish_reason"),
            "system_fingerprint": data.get("system_fingerprint"),
            "temperature": request.temperature,
            "seed": request.seed,
        }
        self.stats.prompt_tokens += usage.get("prompt_tokens", 0)
        self.stats.completion_tokens += usage.get("completion_tokens", 0)
        # The stored request is the cache payload: model label, settings, messages. No URL
        # (it may carry credentials), no headers, no key.
        await self._writer.put((key, self.label, request_json, response, usage))
        return self._from_stored({"response": response, "usage": usage}, cached=False, key=key)
