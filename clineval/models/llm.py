"""OpenAI-compatible chat backends: `openai:MODEL[@URL]` and `llamacpp:PATH.gguf`.

    async with open_chat_model(spec, ctx.runtime, role="judge") as model:
        response = await model.chat(ChatRequest(messages=(("user", "..."),)))

What every call goes through, in order:
  1. the run store, 2. single flight, and last the commit of the finished call: see
     clineval.models.chat_store (shared with the in-process Hugging Face backend);
  3. the run's ONE concurrency limit (`--concurrency`, shared by every model of the
     run, see clineval.concurrency), held only while a request is on the wire, never while
     sleeping between retries;
  4. a replica: the base URL with the fewest requests in flight (ties round-robin);
  5. bounded retries (`--max-retries`) with jittered exponential backoff on 429, 408,
     409, 425, 5xx, timeouts, connection errors, malformed bodies and replies without content
     (chat_store.empty_reply_reason: never stored); other 4xx fails at once as
     ChatError("bad_request"); exhausted retries -> ChatError(kind). Waits are capped (see
     RetryPolicy): backoff at `max_delay_s` (30 s), a Retry-After at `max_retry_after_s`
     (120 s): a server asking for longer gets its retry after 120 s (+ up to 10% jitter), and
     that retry counts against max_retries like any other.

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
import email.utils
import functools
import itertools
import json
import os
import random
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

import orjson

from clineval.concurrency import RunCallState
from clineval.errors import InputError
from clineval.models.backends import resolve_backend
from clineval.models.chat_store import StoredChatModel, empty_reply_reason
from clineval.models.llamacpp_server import LlamaCppServer, LlamaCppSettings, check_gguf
from clineval.models.llm_base import (
    ChatError,
    ChatModel,
    ChatRequest,
)
from clineval.models.spec import ModelSpec
from clineval.secrets import redact

if TYPE_CHECKING:
    from clineval.config import RunConfig
    from clineval.models.runtime import ModelRuntime

TRANSPORTS = ("aiohttp", "openai", "openai-httpx")
DEFAULT_TRANSPORT = "aiohttp"
# 4xx that say "try again later" (timeout, conflict, too early, rate limit), as the openai SDK.
_RETRYABLE_4XX = {408, 409, 425, 429}


# ---- retry policy ---------------------------------------------------------------------------
@dataclass(frozen=True)
class RetryPolicy:
    """Bounded retries: at most `max_retries` more attempts after the first one.

    No wait is longer than `max_retry_after_s` (plus its jitter): a Retry-After above it is
    cut to it, so one throttling server cannot park a call (and a run) for hours; the retry
    that follows is counted like any other.
    """

    max_retries: int = 5
    base_delay_s: float = 0.5
    max_delay_s: float = 30.0
    # A server may ask for a long pause; longer than this and we wait only this long.
    max_retry_after_s: float = 120.0

    def delay(self, retry_index: int, retry_after: float | None, rng: random.Random) -> float:
        """Seconds to wait before retry number `retry_index` (0-based).

        Without Retry-After: "equal jitter" exponential backoff, uniform in [b/2, b] with
        b = min(max_delay, base * 2**i): never zero, and spread so that many calls failing
        together do not come back together. With Retry-After: at least what the server asked,
        plus up to 10% so a crowd of throttled calls does not return in one burst.
        """
        if retry_after is not None:
            wait = min(max(retry_after, 0.0), self.max_retry_after_s)
            return wait * (1.0 + 0.1 * rng.random())
        ceiling = min(self.max_delay_s, self.base_delay_s * (2.0**retry_index))
        return ceiling * (0.5 + 0.5 * rng.random())


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Retry-After as seconds: a number of seconds or an HTTP date; None if absent/garbled."""
    if value is None:
        return None
    text = value.strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


# ---- one attempt ----------------------------------------------------------------------------
class AttemptFailed(Exception):
    """One HTTP attempt failed; `retryable` says whether the policy may try again."""

    def __init__(
        self, kind: str, message: str, retryable: bool, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.retryable = retryable
        self.retry_after = retry_after


@functools.lru_cache(maxsize=256)
def _host(url: str) -> str:
    """scheme://host:port of a URL, without user:password or path (safe for messages)."""
    parts = urlsplit(url)
    host = parts.hostname or "?"
    try:
        port = parts.port
    except ValueError:  # a non-numeric port: show none rather than fail while reporting
        port = None
    return f"{parts.scheme}://{host}" + (f":{port}" if port else "")


def _snippet(raw: bytes | str, limit: int = 200) -> str:
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    text = " ".join(text.split())
    return redact(text[:limit] + ("..." if len(text) > limit else ""))


def classify_http(status: int, retry_after: str | None, raw: bytes) -> dict[str, Any]:
    """The parsed body of a successful reply, or AttemptFailed with the right kind."""
    if status == 429:
        raise AttemptFailed(
            "rate_limit", f"HTTP 429: {_snippet(raw)}", True, parse_retry_after(retry_after)
        )
    if status >= 500:
        raise AttemptFailed(
            "server", f"HTTP {status}: {_snippet(raw)}", True, parse_retry_after(retry_after)
        )
    if status in _RETRYABLE_4XX:
        raise AttemptFailed(
            "timeout" if status == 408 else "server",
            f"HTTP {status}: {_snippet(raw)}",
            True,
            parse_retry_after(retry_after),
        )
    if status >= 400:
        raise AttemptFailed("bad_request", f"HTTP {status}: {_snippet(raw)}", False)
    if status != 200:
        raise AttemptFailed("bad_response", f"unexpected HTTP {status}", True)
    return check_completion(_parse_json_body(raw))


def _parse_json_body(raw: bytes) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        pass
    try:  # the json module also takes what orjson refuses (NaN, Infinity) and says why not
        return json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise AttemptFailed("bad_response", f"body is not JSON: {_snippet(raw)}", True) from None


def check_completion(data: Any) -> dict[str, Any]:
    """A chat.completion object with a message, or AttemptFailed("bad_response")."""
    try:
        choice = data["choices"][0]
        message = choice["message"]
        content = message.get("content")
    except (KeyError, IndexError, TypeError, AttributeError):
        raise AttemptFailed(
            "bad_response", f"not a chat completion: {_snippet(json.dumps(data))}", True
        ) from None
    if content is not None and not isinstance(content, str):
        raise AttemptFailed("bad_response", "message content is not a string", True)
    return data  # type: ignore[no-any-return]


class Transport(Protocol):
    async def post_chat(self, base_url: str, body: dict[str, Any], timeout_s: float) -> Any: ...

    async def aclose(self) -> None: ...


class AioHttpTransport:
    """POST /chat/completions with one pooled aiohttp session (the default: least CPU per call)."""

    def __init__(self, api_key: str | None, pool_size: int):
        import aiohttp
        import yarl

        self._aiohttp = aiohttp
        self._yarl = yarl
        self._urls: dict[str, Any] = {}  # base URL -> parsed endpoint URL, parsed once
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=pool_size, limit_per_host=pool_size),
            headers=headers,
            cookie_jar=aiohttp.DummyCookieJar(),  # an API client keeps no cookies
            # Our own per-call deadline (asyncio.timeout) is the one that counts.
            timeout=aiohttp.ClientTimeout(total=None),
        )

    async def post_chat(self, base_url: str, body: dict[str, Any], timeout_s: float) -> Any:
        aiohttp = self._aiohttp
        url = self._urls.get(base_url)
        if url is None:
            url = self._yarl.URL(base_url.rstrip("/") + "/chat/completions")
            self._urls[base_url] = url
        payload = orjson.dumps(body)
        try:
            async with asyncio.timeout(timeout_s):
                async with self._session.post(url, data=payload) as resp:
                    raw = await resp.read()
                    status, retry_after = resp.status, resp.headers.get("Retry-After")
        except TimeoutError:
            raise AttemptFailed(
                "timeout", f"no answer from {_host(base_url)} within {timeout_s:g} s", True
            ) from None
        except aiohttp.ClientPayloadError as exc:
            raise AttemptFailed(
                "bad_response", f"truncated body from {_host(base_url)}: {type(exc).__name__}", True
            ) from None
        except (aiohttp.ClientError, OSError) as exc:
            raise AttemptFailed(
                "connection", f"{_host(base_url)}: {type(exc).__name__}: {_snippet(str(exc))}", True
            ) from None
        return classify_http(status, retry_after, raw)

    async def aclose(self) -> None:
        await self._session.close()


class OpenAISDKTransport:
    """The `openai` package's AsyncOpenAI client (aiohttp or httpx under it), retries off."""

    def __init__(self, api_key: str | None, pool_size: int, use_aiohttp: bool):
        import openai

        self._openai = openai
        self._http_client: Any = (
            openai.DefaultAioHttpClient() if use_aiohttp else openai.DefaultAsyncHttpxClient()
        )
        self._clients: dict[str, Any] = {}
        self._api_key = api_key or "not-needed"  # the SDK insists on a key; local servers don't

    def _client(self, base_url: str) -> Any:
        client = self._clients.get(base_url)
        if client is None:
            client = self._openai.AsyncOpenAI(
                base_url=base_url,
                api_key=self._api_key,
                max_retries=0,  # the retry policy is ours, visible and counted
                http_client=self._http_client,
            )
            self._clients[base_url] = client
        return client

    async def post_chat(self, base_url: str, body: dict[str, Any], timeout_s: float) -> Any:
        openai = self._openai
        host = _host(base_url)
        try:
            async with asyncio.timeout(timeout_s):
                completion = await self._client(base_url).chat.completions.create(
                    **body, timeout=timeout_s
                )
        except (TimeoutError, openai.APITimeoutError) as exc:
            if _refused(exc):  # the SDK's aiohttp adapter reports a refused connect as timeout
                raise AttemptFailed("connection", f"{host}: connection refused", True) from None
            raise AttemptFailed(
                "timeout", f"no answer from {host} within {timeout_s:g} s", True
            ) from None
        except openai.APIStatusError as exc:
            raw = exc.response.content if exc.response is not None else b""
            return classify_http(exc.status_code, exc.response.headers.get("Retry-After"), raw)
        except openai.APIConnectionError as exc:
            raise AttemptFailed("connection", f"{host}: {type(exc).__name__}", True) from None
        except (openai.APIError, ValueError) as exc:
            raise AttemptFailed("bad_response", f"{host}: {type(exc).__name__}", True) from None
        if isinstance(completion, str | bytes):  # a non-JSON 200 comes back as plain text
            raise AttemptFailed("bad_response", f"body is not JSON: {_snippet(completion)}", True)
        return check_completion(completion.model_dump())

    async def aclose(self) -> None:
        await self._http_client.aclose()


def _refused(exc: BaseException) -> bool:
    """Whether an exception was caused by a refused/failed TCP connect (OSError in its chain)."""
    seen: BaseException | None = exc
    for _ in range(8):
        seen = seen.__cause__ or seen.__context__ if seen is not None else None
        if seen is None:
            return False
        if isinstance(seen, ConnectionError):
            return True
        if isinstance(seen, OSError) and not isinstance(seen, TimeoutError):
            return True
    return False


def make_transport(name: str, api_key: str | None, pool_size: int) -> Transport:
    if name == "aiohttp":
        return AioHttpTransport(api_key, pool_size)
    if name in ("openai", "openai-httpx"):
        return OpenAISDKTransport(api_key, pool_size, use_aiohttp=name == "openai")
    raise InputError(f"unknown --option llm.transport={name!r} (known: {', '.join(TRANSPORTS)})")


# ---- the model ------------------------------------------------------------------------------
class _Replica:
    """One base URL of a model, with its load and health."""

    __slots__ = ("base_url", "down_until", "failures", "in_flight")

    def __init__(self, base_url: str):
        self.base_url = base_url
        self.in_flight = 0
        self.failures = 0  # consecutive connection failures / timeouts
        self.down_until = 0.0  # time.monotonic() before which new calls go elsewhere

    def failed(self) -> None:
        """An unreachable replica rests 1, 2, 4 ... 30 s, so calls stop paying its timeouts."""
        self.failures += 1
        self.down_until = time.monotonic() + min(30.0, 2.0 ** (self.failures - 1))

    def succeeded(self) -> None:
        self.failures = 0
        self.down_until = 0.0


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
        store: Any,
        state: RunCallState,
        policy: RetryPolicy,
        timeout_s: float,
        rng: random.Random | None = None,
    ) -> None:
        if not base_urls:
            raise InputError(f"{label}: no base URL")
        super().__init__(label=label, model_name=model_name, role=role, store=store, state=state)
        self._replicas = [_Replica(u) for u in base_urls]
        self._rr = itertools.count()
        self._transport = transport
        self._policy = policy
        self._timeout_s = timeout_s
        self._rng = rng or random.Random()

    # -- HTTP ----------------------------------------------------------------------------------
    def _body(self, request: ChatRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model_name,
            "messages": [{"role": r, "content": c} for r, c in request.messages],
            "temperature": request.temperature,
        }
        if request.max_tokens is not None:
            body["max_tokens"] = request.max_tokens
        if request.seed is not None:
            body["seed"] = request.seed
        if request.response_format is not None:
            body["response_format"] = request.response_format
        return body

    def _pick(self, avoid: _Replica | None) -> _Replica:
        """Fewest requests in flight, ties round-robin; replicas resting after connection
        failures and the one this call just failed on are used only if nothing else is left."""
        replicas = self._replicas
        if len(replicas) == 1:
            return replicas[0]
        start = next(self._rr) % len(replicas)
        order = replicas[start:] + replicas[:start]
        now = time.monotonic()
        candidates = [r for r in order if r is not avoid and r.down_until <= now]
        candidates = candidates or [r for r in order if r is not avoid] or order
        return min(candidates, key=lambda r: r.in_flight)

    async def _complete(self, request: ChatRequest) -> dict[str, Any]:
        """The chat.completion for `request` from a replica, with the bounded retry policy."""
        semaphore = self._state.semaphore()
        avoid: _Replica | None = None
        retries = 0
        while True:
            async with semaphore:
                # Picked once a slot is free, so "fewest in flight" is the state right now.
                replica = self._pick(avoid)
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


# ---- opening a model ------------------------------------------------------------------------
def _retry_policy(config: RunConfig) -> RetryPolicy:
    options: dict[str, str] = config.options
    base = options.get("llm.backoff_base_s")
    cap = options.get("llm.backoff_max_s")
    try:
        return RetryPolicy(
            max_retries=max(0, int(config.max_retries)),
            base_delay_s=float(base) if base is not None else RetryPolicy.base_delay_s,
            max_delay_s=float(cap) if cap is not None else RetryPolicy.max_delay_s,
        )
    except ValueError:
        raise InputError(
            "--option llm.backoff_base_s / llm.backoff_max_s must be numbers"
        ) from None


def openai_base_urls(spec: ModelSpec) -> tuple[str, ...]:
    """The spec's base URLs, else $OPENAI_BASE_URL; InputError when there is none."""
    urls: tuple[str, ...] = tuple(spec.base_urls)
    if not urls and os.environ.get("OPENAI_BASE_URL"):
        urls = (os.environ["OPENAI_BASE_URL"],)
    for url in urls:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InputError(
                f"{spec.label}: base URL {_host(url)!r} is not http(s)://HOST[:PORT]/PATH"
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
        generator = await asyncio.to_thread(HFGenerator, Path(path))
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
        base_url = await asyncio.to_thread(entry["server"].start)
        yield base_url
    finally:
        entry["users"] -= 1
        if entry["users"] == 0:
            state.resources.pop(key, None)
            await asyncio.to_thread(entry["server"].stop)


@asynccontextmanager
async def open_chat_model(
    spec: ModelSpec,
    runtime: ModelRuntime,
    role: str = "candidate",
    *,
    retry: RetryPolicy | None = None,
    transport: str | None = None,
) -> AsyncIterator[ChatModel]:
    """A ChatModel for `spec` within a run (`runtime`), closed (and its local server stopped)
    on exit.

    `role` ("candidate", "judge", ...) only labels the call counters (runtime.calls:
    a progress display given them shows their retries). `retry` and `transport` override the
    run's settings (tests, benchmarks); by default they come from runtime.config (max_retries,
    options llm.transport / llm.backoff_base_s / llm.backoff_max_s).
    """
    state, config = runtime.calls, runtime.config
    transport_name = transport or config.options.get("llm.transport", DEFAULT_TRANSPORT)
    if transport_name not in TRANSPORTS:
        raise InputError(
            f"unknown --option llm.transport={transport_name!r} (known: {', '.join(TRANSPORTS)})"
        )

    @asynccontextmanager
    async def http_model(urls: tuple[str, ...], api_key: str | None) -> AsyncIterator[ChatModel]:
        client = make_transport(transport_name, api_key, pool_size=state.limit)
        try:
            yield HTTPChatModel(
                label=spec.label,
                model_name=spec.name,
                base_urls=urls,
                role=role,
                transport=client,
                store=runtime.store,
                state=state,
                policy=retry or _retry_policy(config),
                timeout_s=float(config.timeout_s),
            )
        finally:
            await client.aclose()

    if spec.backend == "openai":
        api_key = os.environ.get("OPENAI_API_KEY") or None
        urls = openai_base_urls(spec)
        if api_key and any(urlsplit(u).username is not None for u in urls):
            # HTTP has one Authorization header: Basic (from the URL) or Bearer (the key).
            raise InputError(
                f"{spec.label}: a base URL carries user:password and $OPENAI_API_KEY is set; "
                "use one of the two"
            )
        async with http_model(urls, api_key) as model:
            yield model
    elif spec.backend == "llamacpp":
        settings = LlamaCppSettings.from_options(config.options)
        async with (
            _shared_llamacpp(state, spec.name, settings) as base_url,
            http_model((base_url,), None) as model,
        ):
            yield model
    elif resolve_backend(spec).is_chat:  # hf:PATH of a causal LM
        from clineval.models.hf_chat import HFChatModel

        async with _shared_hf_generator(state, spec.name) as generator:
            yield HFChatModel(
                label=spec.label, generator=generator, role=role, store=runtime.store, state=state
            )
    elif spec.backend == "hf" and not (Path(spec.name) / "config.json").is_file():
        raise InputError("not a Hugging Face checkpoint (no config.json)", path=spec.name)
    else:
        raise InputError(
            f"{spec.label} is not a chat model (LLM tasks need openai:MODEL[@URL], "
            "llamacpp:PATH.gguf or hf:PATH of a causal language model)"
        )
