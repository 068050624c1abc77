"""OpenAI-compatible chat backends: `openai:MODEL[@URL]` and `llamacpp:PATH.gguf`.

    async with open_chat_model(spec, ctx.runtime, role="judge") as model:
        response = await model.chat(ChatRequest(messages=(("user", "..."),)))

What every call goes through, in order:
  1. the run store, 2. single flight, and last the commit of the finished call: see
     clineval.models.chat_store (shared with the in-process Hugging Face backend);
  3. the run's ONE concurrency limit (`--concurrency`, shared by every model of the
     run, see clineval.concurrency), held only while a request is on the wire, never while
     sleeping between retries;
  4. a replica (clineval.models.replicas): a call with a prefix key goes where the key's
     earlier calls went (a new key to the replica serving the fewest active keys); other
     calls to the base URL with the fewest requests in flight (ties round-robin);
  5. bounded retries (`--max-retries`) with jittered exponential backoff on 429, 408,
     409, 425, 5xx, timeouts, connection errors, malformed bodies and replies without content
     (chat_store.empty_reply_reason: never stored); other 4xx fails at once as
     ChatError("bad_request"); exhausted retries -> ChatError(kind). Waits are capped (see
     RetryPolicy): backoff at `max_delay_s` (30 s), a Retry-After at `max_retry_after_s`
     (120 s): a server asking for longer gets its retry after 120 s (+ up to 10% jitter), and
     that retry counts against max_retries like any other.

Batch mode (`--batch`, `--batch-model`, `--batch-file-out` / `--batch-file-in`): an openai:
model is a clineval.models.batch.BatchChatModel instead: 1, 2 and the commit as above, then
its calls go out in rounds of batch lines (the same request bodies), with 5's bounds on
error lines; no concurrency slot and no replica choice apply.

Transport. The request and response are the OpenAI chat-completions wire format, the same
that the `openai` SDK sends. The default transport posts it with one pooled aiohttp session:
measured through the whole call path it spends about a quarter of the CPU per call of the
`openai` SDK (even over the SDK's own aiohttp option; numbers in BENCHMARKS.md), which decides
whether a 2-core machine can keep 256 judge calls in flight. `--option llm.transport=openai`
(the SDK's AsyncOpenAI over aiohttp) or `openai-httpx` select the SDK; it then
runs with its own retries disabled so the policy above stays the only one.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit

from clineval.concurrency import RunCallState
from clineval.errors import InputError
from clineval.models.backends import resolve_backend
from clineval.models.extra_body import ExtraBodyModel, check_in_process, extra_body_for
from clineval.models.http_chat import HTTPChatModel
from clineval.models.http_errors import safe_host
from clineval.models.http_transport import DEFAULT_TRANSPORT, TRANSPORTS, make_transport
from clineval.models.llamacpp_server import (
    LOCAL_MIN_TIMEOUT_S,
    LlamaCppServer,
    LlamaCppSettings,
    check_gguf,
)
from clineval.models.llm_base import ChatModel
from clineval.models.options import LLM_OPTIONS
from clineval.models.registry import backend_info
from clineval.models.server_capacity import warn_unservable_concurrency
from clineval.models.spec import ModelSpec
from clineval.progress import step
from clineval.references import resolve_reference
from clineval.retry import RetryPolicy, parse_retry_after
from clineval.secrets import env_credential, register_url

if TYPE_CHECKING:
    from clineval.models.runtime import ModelRuntime
    from clineval.models.settings import ModelSettings

__all__ = [
    "DEFAULT_TRANSPORT",
    "TRANSPORTS",
    "RetryPolicy",
    "open_chat_model",
    "openai_base_urls",
    "parse_retry_after",
]


def _retry_policy(settings: ModelSettings) -> RetryPolicy:
    """The run's retry policy: --max-retries and the declared llm.backoff_* options."""
    base = LLM_OPTIONS.value(settings.options, "backoff_base_s")
    cap = LLM_OPTIONS.value(settings.options, "backoff_max_s")
    return RetryPolicy(
        max_retries=settings.max_retries,
        base_delay_s=RetryPolicy.base_delay_s if base is None else base,
        max_delay_s=RetryPolicy.max_delay_s if cap is None else cap,
    )


def openai_base_urls(spec: ModelSpec) -> tuple[str, ...]:
    """The spec's base URLs, else $OPENAI_BASE_URL; InputError when there is none."""
    urls: tuple[str, ...] = tuple(spec.base_urls)
    if not urls and os.environ.get("OPENAI_BASE_URL"):
        urls = (os.environ["OPENAI_BASE_URL"],)
        register_url(urls[0])  # its user:password, if any, masked like a flag's
    for url in urls:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InputError(
                f"{spec.label}: base URL {safe_host(url)!r} is not http(s)://HOST[:PORT]/PATH"
            )
    if urls:
        return urls
    raise InputError(
        f"{spec.label}: no server address (write openai:MODEL@URL, pass --base-url, "
        "or set OPENAI_BASE_URL)"
    )


@asynccontextmanager
async def _shared_hf_generator(state: RunCallState, path: str) -> AsyncIterator[Any]:
    """One loaded hf:PATH model for the whole run (candidate and judge may share it)."""
    from clineval.models.hf_chat import HFGenerator

    key = f"hf:{Path(path).resolve()}"
    entry = state.resources.get(key)
    if entry is None:
        with step(f"hf:{Path(path).name}: loading the model", 1, unit="model") as loading:
            generator = await asyncio.to_thread(HFGenerator, Path(path))
            loading.advance()
        entry = state.resources.setdefault(key, {"generator": generator, "users": 0})
        if entry["generator"] is not generator:  # another role loaded it meanwhile
            generator.close()
    entry["users"] += 1
    try:
        yield entry["generator"]
    finally:
        entry["users"] -= 1
        if entry["users"] == 0:
            state.resources.pop(key, None)
            await asyncio.to_thread(entry["generator"].close)


@asynccontextmanager
async def _shared_llamacpp(
    state: RunCallState, gguf: str, settings: LlamaCppSettings
) -> AsyncIterator[str]:
    """One llama.cpp server per GGUF for the whole run (candidate and judge may share it)."""
    path = check_gguf(gguf)
    key = f"llamacpp:{path}"
    entry = state.resources.get(key)
    if entry is None:
        server = LlamaCppServer(path, settings)
        entry = state.resources.setdefault(key, {"server": server, "users": 0})
    entry["users"] += 1
    try:
        if not entry.setdefault("started", False):  # the first user loads it, shown as a step
            entry["started"] = True
            with step(f"llamacpp:{path.name}: loading the model", 1, unit="model") as loading:
                base_url = await asyncio.to_thread(entry["server"].start)
                loading.advance()
        else:
            base_url = await asyncio.to_thread(entry["server"].start)
        yield base_url
    finally:
        entry["users"] -= 1
        if entry["users"] == 0:
            state.resources.pop(key, None)
            await asyncio.to_thread(entry["server"].stop)


@asynccontextmanager
async def _open_backend(
    spec: ModelSpec,
    runtime: ModelRuntime,
    role: str = "candidate",
    *,
    retry: RetryPolicy | None = None,
    transport: str | None = None,
) -> AsyncIterator[ChatModel]:
    """A ChatModel for `spec` within a run (`runtime`), closed (and its local server stopped)
    on exit: opened by its backend's registered opener (clineval.models.registry).

    `role` ("candidate", "judge", ...) only labels the call counters (runtime.calls:
    a progress display given them shows their retries). `retry` and `transport` override the
    run's settings (tests, benchmarks); by default they come from runtime.settings (max_retries,
    options llm.transport / llm.backoff_base_s / llm.backoff_max_s).
    """
    transport_name = transport or runtime.settings.options.get("llm.transport", DEFAULT_TRANSPORT)
    if transport_name not in TRANSPORTS:
        raise InputError(
            f"unknown --option llm.transport={transport_name!r} (known: {', '.join(TRANSPORTS)})"
        )
    opener = backend_info(spec).opener
    if opener is None:
        raise _not_a_chat_model(spec)
    open_model = cast(Opener, resolve_reference(opener))
    async with open_model(Opening(spec, runtime, role, retry, transport_name)) as model:
        yield model


def _not_a_chat_model(spec: ModelSpec) -> InputError:
    return InputError(
        f"{spec.label} is not a chat model (LLM tasks need openai:MODEL[@URL], "
        "llamacpp:PATH.gguf or hf:PATH of a causal language model)"
    )


@dataclass(frozen=True)
class Opening:
    """What a chat backend's opener (its registration's `opener`) is given: the spec, the
    run, the role its calls are counted under, a retry policy that overrides the run's, and
    the transport of the run's HTTP calls (checked)."""

    spec: ModelSpec
    runtime: ModelRuntime
    role: str
    retry: RetryPolicy | None
    transport_name: str

    @asynccontextmanager
    async def http_model(
        self,
        urls: tuple[str, ...],
        api_key: str | None,
        *,
        server_slots: int | None = None,
        timeout_s: float | None = None,
    ) -> AsyncIterator[ChatModel]:
        """A chat model behind OpenAI-compatible `urls`, with the run's store, counters,
        retry policy and transport (the HTTP backends share it)."""
        state, settings = self.runtime.calls, self.runtime.settings
        client = make_transport(self.transport_name, api_key, pool_size=state.limit)
        try:
            yield HTTPChatModel(
                label=self.spec.label,
                model_name=self.spec.name,
                base_urls=urls,
                role=self.role,
                transport=client,
                store=self.runtime.store,
                state=state,
                policy=self.retry or _retry_policy(settings),
                timeout_s=float(settings.timeout_s) if timeout_s is None else timeout_s,
                send_prompt_cache_key=LLM_OPTIONS.value(settings.options, "prompt_cache_key"),
                server_slots=server_slots,
            )
        finally:
            await client.aclose()


Opener = Callable[[Opening], AbstractAsyncContextManager[ChatModel]]


@asynccontextmanager
async def open_openai(opening: Opening) -> AsyncIterator[ChatModel]:
    """The opener of `openai:` (registry): its batch model in batch mode, else its servers."""
    spec, runtime = opening.spec, opening.runtime
    state, settings = runtime.calls, runtime.settings
    if runtime.batched(spec):
        policy = opening.retry or _retry_policy(settings)
        async with _batch_model(spec, runtime, opening.role, policy) as model:
            yield model
        return
    api_key = _api_key(spec)
    urls = openai_base_urls(spec)
    if api_key and any(urlsplit(u).username is not None for u in urls):
        # HTTP has one Authorization header: Basic (from the URL) or Bearer (the key).
        raise InputError(
            f"{spec.label}: a base URL carries user:password and ${spec.api_key_variable} is "
            f"set; use one of the two (#key= at the end of the spec: no key)"
        )
    probed = state.resources.setdefault("capacity_probed", set())  # once a URL a run
    if not set(urls) <= probed:
        probed.update(urls)
        await warn_unservable_concurrency(urls, api_key, settings.concurrency, settings.timeout_s)
    async with opening.http_model(urls, api_key) as model:
        yield model


def _api_key(spec: ModelSpec) -> str | None:
    """The key `spec` sends: the value of its own variable (`#key=NAME`), else of
    $OPENAI_API_KEY, none for `#key=` (clineval.models.spec); masked from now on."""
    variable = spec.api_key_variable
    return None if variable is None else env_credential(variable)


@asynccontextmanager
async def open_llamacpp(opening: Opening) -> AsyncIterator[ChatModel]:
    """The opener of `llamacpp:` (registry): the run's one in-process server of the GGUF."""
    run, spec = opening.runtime.settings, opening.spec
    settings = LlamaCppSettings.from_options(run.options)
    # clineval started this server and knows its slots: calls wait for a free one
    # (untimed), so none queues inside the server against its timeout.
    timeout_s = max(float(run.timeout_s), LOCAL_MIN_TIMEOUT_S)
    async with (
        _shared_llamacpp(opening.runtime.calls, spec.name, settings) as base_url,
        opening.http_model(
            (base_url,), None, server_slots=settings.n_parallel, timeout_s=timeout_s
        ) as model,
    ):
        yield model


@asynccontextmanager
async def open_hf(opening: Opening) -> AsyncIterator[ChatModel]:
    """The opener of `hf:` (registry): a causal LM's checkpoint, loaded once a run."""
    spec, runtime = opening.spec, opening.runtime
    if not resolve_backend(spec).is_chat:
        if not (Path(spec.name) / "config.json").is_file():
            raise InputError("not a Hugging Face checkpoint (no config.json)", path=spec.name)
        raise _not_a_chat_model(spec)
    from clineval.models.hf_chat import HFChatModel

    async with _shared_hf_generator(runtime.calls, spec.name) as generator:
        yield HFChatModel(
            label=spec.label,
            generator=generator,
            role=opening.role,
            store=runtime.store,
            state=runtime.calls,
        )


@asynccontextmanager
async def _batch_model(
    spec: ModelSpec, runtime: ModelRuntime, role: str, policy: RetryPolicy
) -> AsyncIterator[ChatModel]:
    """The BatchChatModel of `spec` (clineval.models.batch): its server's Batch API with
    --batch, else only files (--batch-file-out / --batch-file-in, no server needed)."""
    from clineval.models.batch import BatchChatModel, BatchSettings
    from clineval.models.batch_client import BatchClient
    from clineval.models.http_chat import chat_body

    run = runtime.settings
    opts = run.options
    settings = BatchSettings(
        poll_s=LLM_OPTIONS.value(opts, "batch_poll_s"),
        poll_max_s=LLM_OPTIONS.value(opts, "batch_poll_max_s"),
        max_lines=LLM_OPTIONS.value(opts, "batch_max_lines"),
        max_bytes=LLM_OPTIONS.value(opts, "batch_max_bytes"),
        resubmits=LLM_OPTIONS.value(opts, "batch_resubmits"),
        file_out=run.batch_file_out,
    )
    client = None
    if run.batch_server:
        # One server takes a model's batches: the first of its base URLs.
        url = openai_base_urls(spec)[0]
        client = BatchClient(url, _api_key(spec), policy, run.timeout_s)
    send_key = LLM_OPTIONS.value(opts, "prompt_cache_key")
    try:
        yield BatchChatModel(
            label=spec.label,
            model_name=spec.name,
            role=role,
            store=runtime.store,
            state=runtime.calls,
            body_of=lambda request: chat_body(spec.name, request, send_key),
            client=client,
            settings=settings,
            policy=policy,
            imported=runtime.batch_imports(),
        )
    finally:
        if client is not None:
            await client.aclose()


@asynccontextmanager
async def open_chat_model(
    spec: ModelSpec,
    runtime: ModelRuntime,
    role: str = "candidate",
    *,
    retry: RetryPolicy | None = None,
    transport: str | None = None,
) -> AsyncIterator[ChatModel]:
    """The model of `_open_backend`, its calls carrying the run's extra request fields for
    `role` (--option llm.extra_body / llm.judge_extra_body, clineval.models.extra_body): a
    model without them is returned as it is."""
    extra = extra_body_for(runtime.settings.options, role)
    if extra and spec.backend == "hf":
        check_in_process(extra, spec.label)
    async with _open_backend(spec, runtime, role, retry=retry, transport=transport) as model:
        yield ExtraBodyModel(model, extra) if extra else model
