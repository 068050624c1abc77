"""/v1/files and /v1/batches of an OpenAI-compatible server (clineval.models.batch)."""

from __future__ import annotations

import asyncio
import contextlib
import random
import secrets
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import orjson

from clineval.errors import InputError
from clineval.jsonio import JsonProblem, parse_json
from clineval.models.batch_lines import ENDPOINT, LineSplitter, OutputLines
from clineval.models.http_errors import (
    AttemptFailed,
    classify_http,
    safe_host,
    snippet,
)
from clineval.retry import RetryPolicy
from clineval.secrets import redact

T = TypeVar("T")

TERMINAL = frozenset({"completed", "failed", "expired", "cancelled"})
# The end of a stored batch that the server does not know (HTTP 404): treated as failed.
LOST = "unknown to the server"
STATUSES = TERMINAL | {"validating", "in_progress", "finalizing", "cancelling"}
_CHUNK = 1 << 20  # bytes of an output file read at a time


def poll_delays(first: float, cap: float) -> Iterator[float]:
    """Waits between two looks at a running batch: `first`, doubled each time, at most
    `cap` (a batch takes minutes to hours: polling fast for ever would be rude)."""
    delay = first
    while True:
        yield min(delay, cap)
        delay = min(cap, delay * 2)


class BatchUnknown(InputError):
    """The server does not know a batch or file the run stored (HTTP 404: restarted, purged,
    or another server at --base-url). The model treats the batch as failed (_lost)."""


class BatchClient:
    """/v1/files and /v1/batches of one OpenAI-compatible server, over aiohttp, each request
    with the run's bounded retry policy."""

    def __init__(
        self, base_url: str, api_key: str | None, policy: RetryPolicy, timeout_s: float
    ) -> None:
        import aiohttp

        self._aiohttp = aiohttp
        self._base = base_url.rstrip("/")
        self._host = safe_host(base_url)
        self._policy = policy
        self._timeout_s = timeout_s
        self._rng = random.Random()
        headers = {"Accept": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._session = aiohttp.ClientSession(
            headers=headers,
            cookie_jar=aiohttp.DummyCookieJar(),
            timeout=aiohttp.ClientTimeout(total=None),
        )
        self.requests = 0  # HTTP requests made (the benchmark counts them)
        self.bytes_sent = 0

    async def aclose(self) -> None:
        await self._session.close()

    async def _call(
        self, method: str, path: str, *, unknown_if_404: bool = False, **kwargs: Any
    ) -> bytes:
        """The reply body of one request, retried by the policy; InputError when it fails.
        `unknown_if_404`: a 404 is BatchUnknown (a batch or file the server does not know),
        not an error of the run."""

        async def whole(response: Any) -> bytes:
            async with asyncio.timeout(self._timeout_s):
                return bytes(await response.read())

        return await self._request(method, path, whole, unknown_if_404, **kwargs)

    async def _request(
        self,
        method: str,
        path: str,
        consume: Callable[[Any], Awaitable[T]],
        unknown_if_404: bool,
        **kwargs: Any,
    ) -> T:
        """What `consume` makes of a successful reply (it reads the body within its own
        deadline), each attempt from the start, retried by the policy."""
        aiohttp = self._aiohttp
        retries = 0
        while True:
            self.requests += 1
            try:
                async with contextlib.AsyncExitStack() as stack:
                    async with asyncio.timeout(self._timeout_s):  # until the reply's head
                        r = await stack.enter_async_context(
                            self._session.request(method, self._base + path, **kwargs)
                        )
                    status, retry_after = r.status, r.headers.get("Retry-After")
                    if status < 300:
                        return await consume(r)
                    async with asyncio.timeout(self._timeout_s):
                        raw = await r.read()
                if status == 404 and unknown_if_404:
                    raise BatchUnknown(
                        redact(f"batch API {self._host} {method} {path}: HTTP 404: {snippet(raw)}")
                    )
                classify_http(status, retry_after, raw)  # raises for every status >= 300
            except TimeoutError:
                failure = AttemptFailed("timeout", f"no answer within {self._timeout_s:g} s", True)
            except (aiohttp.ClientError, OSError) as exc:
                failure = AttemptFailed("connection", f"{type(exc).__name__}", True)
            except AttemptFailed as exc:
                failure = exc
            if not failure.retryable or retries >= self._policy.max_retries:
                raise InputError(
                    redact(f"batch API {self._host} {method} {path}: {failure.message}")
                )
            await asyncio.sleep(self._policy.delay(retries, failure.retry_after, self._rng))
            retries += 1

    async def _json(
        self, method: str, path: str, *, unknown_if_404: bool = False, **kwargs: Any
    ) -> dict[str, Any]:
        raw = await self._call(method, path, unknown_if_404=unknown_if_404, **kwargs)
        try:
            obj = parse_json(raw)
        except JsonProblem:
            obj = None
        if not isinstance(obj, dict):
            raise InputError(f"batch API {self._host} {path}: reply is not a JSON object")
        return obj

    def _checked(self, obj: dict[str, Any], path: str) -> dict[str, Any]:
        if not isinstance(obj.get("id"), str) or obj.get("status") not in STATUSES:
            raise InputError(
                f"batch API {self._host} {path}: not a batch object "
                f"(id {obj.get('id')!r:.40}, status {obj.get('status')!r:.40})"
            )
        return obj

    async def upload(self, name: str, content: bytes) -> str:
        # The multipart body built here, whole: a known length (no chunked upload, which some
        # servers refuse), its boundary random.
        boundary = f"clineval-{secrets.token_hex(12)}"
        head = (
            f'--{boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\n'
            f'batch\r\n--{boundary}\r\nContent-Disposition: form-data; name="file"; '
            f'filename="{name}"\r\nContent-Type: application/jsonl\r\n\r\n'
        )
        body = head.encode() + content + f"\r\n--{boundary}--\r\n".encode()
        headers = {"Content-Type": f"multipart/form-data; boundary={boundary}"}
        self.bytes_sent += len(body)
        obj = await self._json("POST", "/files", data=body, headers=headers)
        if not isinstance(obj.get("id"), str):
            raise InputError(f"batch API {self._host} /files: no file id in the reply")
        return str(obj["id"])

    async def create(self, file_id: str, *, stored: bool = False) -> dict[str, Any]:
        """A batch of the uploaded file `file_id`. `stored`: the id comes from the run store
        (an earlier process uploaded it), so a 404 is BatchUnknown: the server lost it."""
        body = {"input_file_id": file_id, "endpoint": ENDPOINT, "completion_window": "24h"}
        payload = orjson.dumps(body)
        self.bytes_sent += len(payload)
        headers = {"Content-Type": "application/json"}
        obj = await self._json(
            "POST", "/batches", unknown_if_404=stored, data=payload, headers=headers
        )
        return self._checked(obj, "/batches")

    async def get(self, batch_id: str) -> dict[str, Any]:
        """The batch `batch_id`; BatchUnknown when the server does not know it (HTTP 404)."""
        path = f"/batches/{batch_id}"
        return self._checked(await self._json("GET", path, unknown_if_404=True), path)

    async def find_by_input(self, file_id: str) -> dict[str, Any] | None:
        """The batch created from `file_id`, if the server lists one (recent batches)."""
        obj = await self._json("GET", "/batches", params={"limit": "100"})
        for item in obj.get("data") or []:
            if isinstance(item, dict) and item.get("input_file_id") == file_id:
                return self._checked(item, "/batches")
        return None

    async def content_lines(
        self, file_id: str, start: Callable[[], OutputLines], where: str
    ) -> OutputLines:
        """A file's lines, streamed into a fresh `start()` at each attempt (a retried
        download starts over), `where` + " line N" naming each; never the file whole (an
        output file may be hundreds of MB). BatchUnknown when the server does not know it."""

        async def stream(response: Any) -> OutputLines:
            lines, splitter = start(), LineSplitter()
            number = 0
            chunks = response.content.iter_chunked(_CHUNK)
            while True:
                async with asyncio.timeout(self._timeout_s):  # a deadline for each chunk
                    chunk = await anext(chunks, None)
                for raw in splitter.feed(chunk) if chunk is not None else splitter.end():
                    number += 1
                    lines.add(raw, f"{where} line {number}")
                if chunk is None:
                    return lines

        return await self._request("GET", f"/files/{file_id}/content", stream, True)
