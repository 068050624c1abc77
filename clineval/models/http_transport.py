"""How a chat request reaches an OpenAI-compatible server: the default pooled aiohttp client
(the least CPU per call, measured in BENCHMARKS.md), or the `openai` SDK over aiohttp / httpx
with its own retries off (the policy in clineval.retry stays the only one). The SDK is an
optional dependency (the `openai` extra): checked where the option is parsed."""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

import orjson

from clineval.errors import InputError
from clineval.jsonio import replace_invalid_unicode
from clineval.models.http_errors import (
    AttemptFailed,
    check_completion,
    classify_http,
    safe_host,
    snippet,
)

TRANSPORTS = ("aiohttp", "openai", "openai-httpx")
DEFAULT_TRANSPORT = "aiohttp"
_SDK_TRANSPORTS = ("openai", "openai-httpx")
# Fields the SDK's create() takes by name; any other field of a body goes in its extra_body.
_SDK_FIELDS = frozenset(
    {"model", "messages", "temperature", "max_tokens", "seed", "response_format"}
)


def sdk_missing(transport: str) -> str | None:
    """Why `transport` cannot be used here, or None: the transports `openai` and
    `openai-httpx` are the `openai` SDK, an optional dependency (the `openai` extra)."""
    import importlib.util

    if transport in _SDK_TRANSPORTS and importlib.util.find_spec("openai") is None:
        return (
            "needs the openai package, an optional dependency: pip install 'clineval[openai]' "
            f"(or leave llm.transport at its default, {DEFAULT_TRANSPORT})"
        )
    return None


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
                "timeout", f"no answer from {safe_host(base_url)} within {timeout_s:g} s", True
            ) from None
        except aiohttp.ClientPayloadError as exc:
            raise AttemptFailed(
                "bad_response",
                f"truncated body from {safe_host(base_url)}: {type(exc).__name__}",
                True,
            ) from None
        except (aiohttp.ClientError, OSError) as exc:
            raise AttemptFailed(
                "connection",
                f"{safe_host(base_url)}: {type(exc).__name__}: {snippet(str(exc))}",
                True,
            ) from None
        return classify_http(status, retry_after, raw)

    async def aclose(self) -> None:
        await self._session.close()


class OpenAISDKTransport:
    """The `openai` package's AsyncOpenAI client (aiohttp or httpx under it), retries off."""

    def __init__(self, api_key: str | None, pool_size: int, use_aiohttp: bool):
        name = "openai" if use_aiohttp else "openai-httpx"
        missing = sdk_missing(name)
        if missing is not None:  # the option's parser said so already; a caller of the API
            raise InputError(f"--option llm.transport={name} {missing}")
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
        host = safe_host(base_url)
        try:
            known = {k: v for k, v in body.items() if k in _SDK_FIELDS}
            extra = {k: v for k, v in body.items() if k not in _SDK_FIELDS}
            async with asyncio.timeout(timeout_s):
                completion = await self._client(base_url).chat.completions.create(
                    **known, extra_body=extra or None, timeout=timeout_s
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
        except (openai.APIError, ValueError, RecursionError) as exc:
            # ValueError / RecursionError: a body the SDK's JSON reader cannot take (an integer
            # past the digit limit, nesting past the recursion limit): a garbled reply.
            raise AttemptFailed("bad_response", f"{host}: {type(exc).__name__}", True) from None
        if isinstance(completion, str | bytes):  # a non-JSON 200 comes back as plain text
            raise AttemptFailed("bad_response", f"body is not JSON: {snippet(completion)}", True)
        # The SDK decoded it with the json module: lone surrogates get in (clineval.jsonio).
        return check_completion(replace_invalid_unicode(completion.model_dump()))

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
