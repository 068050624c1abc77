"""Chat calls through a batch interface: the OpenAI Batch API (`/v1/files` + `/v1/batches`, as
OpenAI and the servers that copy it offer) or request / output files for `vllm run-batch`.

`BatchChatModel` is a StoredChatModel: every call goes through the run store first (stored
calls are free, identical calls share one answer), and a call that is not stored waits in a
round. A round closes when no new call has come for a moment (`SETTLE_S`): the calls a task
issues at once (every candidate answer; then every judge call whose answer exists) form one
round. Its requests become input lines

    {"custom_id": KEY, "method": "POST", "url": "/v1/chat/completions", "body": BODY}

KEY = the call's run-store key, BODY = exactly the body the synchronous path posts
(HTTPChatModel._body): a reply is stored as the same call either way, so batch and synchronous
runs share one cache and resume each other. A round is split so that no file has more than
`max_lines` lines or `max_bytes` bytes (OpenAI: 50,000 requests, 200 MB).

Online, each file is uploaded (`purpose=batch`) and a batch created (`completion_window` 24h);
the file id and then the batch id go into the run store (meta `batch:LABEL:N`) the moment the
server returns them. Before a request is sent, the stored batches are looked at: a request
already in a batch (running or finished) is never submitted again, its answer is read from
that batch; an uploaded file whose batch id was lost (killed between the two requests) is
found again in the server's batch list by its input file id. Batches are polled with a
backoff that starts at `poll_s` and doubles to `poll_max_s`; each status change is logged with
its request counts. A finished batch's output and error files are read line by line: an answer
is stored as a normal call; an error line is a failed attempt judged like the synchronous
path's (clineval.models.http_errors.classify_http: 429 / 5xx / garbled / empty replies retried,
other 4xx not), retried in the next batch within `--max-retries`, then the call's ChatError. A
batch that failed, expired or was cancelled, or that the server no longer knows (HTTP 404 for
a stored batch or file: a restarted server, another --base-url), has the requests it did not
answer sent again in a new batch, at most `resubmits` times, then they are call errors.

Offline (`--batch-file-out DIR`): a round's lines are written to DIR (their keys noted in the
run store) and the run stops with BatchFilesWritten (a one-line hint for `vllm run-batch`). A
later run with `--batch-file-in OUT...` reads those outputs first (`read_outputs`: every line
checked, an error is `FILE:LINE: ...` before anything is stored) and answers its calls from
them; what they do not answer goes into the next request file (or, with `--batch`, online).

A server's reply that is not what the Batch API documents (no id, a status it does not name, an
output line that is not JSON) is an InputError naming the server and what was wrong: the run
stops with every finished call stored and every batch id kept, so the same command resumes.
Secrets: the API key goes in a header only; no URL, key or header is stored or logged.

Long module: the line format, the server client and the model that uses them change together
(a field of the output format is read in one place, whichever way the lines arrive).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import re
import secrets
from collections.abc import Awaitable, Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar, TypeVar

import orjson

from clineval.concurrency import RunCallState
from clineval.errors import BatchFilesWritten, InputError
from clineval.jsonio import JsonProblem, parse_json
from clineval.models.chat_store import StoredChatModel, empty_reply_reason
from clineval.models.http_errors import (
    AttemptFailed,
    check_completion,
    classify_http,
    safe_host,
    snippet,
)
from clineval.models.llm_base import ChatError, ChatRequest, request_key
from clineval.retry import RetryPolicy
from clineval.rundir import atomic_write_lines, make_dir
from clineval.secrets import redact
from clineval.store import RunStore

log = logging.getLogger("clineval")
T = TypeVar("T")

ENDPOINT = "/v1/chat/completions"
MAX_LINES = 50_000  # OpenAI's limits per batch input file
MAX_BYTES = 200 * 1024 * 1024
TERMINAL = frozenset({"completed", "failed", "expired", "cancelled"})
# The end of a stored batch that the server does not know (HTTP 404): treated as failed.
LOST = "unknown to the server"
STATUSES = TERMINAL | {"validating", "in_progress", "finalizing", "cancelling"}
SETTLE_S = 0.2  # a round closes when no call came for this long
_CHUNK = 1 << 20  # bytes of an output file read at a time
META_PREFIX = "batch:"  # run-store meta: one record per batch (or request file) of a model
FILES_META = "batch_files"  # keys written to request files (--batch-file-out), by file name


@dataclass
class BatchSettings:
    poll_s: float = 5.0
    poll_max_s: float = 300.0
    max_lines: int = MAX_LINES
    max_bytes: int = MAX_BYTES
    resubmits: int = 2  # new batches for what a failed / expired / cancelled batch left
    file_out: Path | None = None  # --batch-file-out
    settle_s: float = SETTLE_S


def poll_delays(first: float, cap: float) -> Iterator[float]:
    """Waits between two looks at a running batch: `first`, doubled each time, at most
    `cap` (a batch takes minutes to hours: polling fast for ever would be rude)."""
    delay = first
    while True:
        yield min(delay, cap)
        delay = min(cap, delay * 2)


# ---- lines -------------------------------------------------------------------------------------
def request_line(key: str, body: dict[str, Any]) -> bytes:
    line = {"custom_id": key, "method": "POST", "url": ENDPOINT, "body": body}
    return orjson.dumps(line) + b"\n"


def split_lines(lines: list[bytes], max_lines: int, max_bytes: int) -> list[list[bytes]]:
    """Consecutive groups of at most `max_lines` lines and `max_bytes` bytes each."""
    groups: list[list[bytes]] = []
    current: list[bytes] = []
    size = 0
    for line in lines:
        if len(line) > max_bytes:
            raise InputError(f"a batch request line of {len(line)} bytes exceeds {max_bytes}")
        if current and (len(current) >= max_lines or size + len(line) > max_bytes):
            groups.append(current)
            current, size = [], 0
        current.append(line)
        size += len(line)
    if current:
        groups.append(current)
    return groups


@dataclass
class LineOutcome:
    """One output line: the chat.completion, or the failed attempt it stands for."""

    key: str
    completion: dict[str, Any] | None = None
    failure: AttemptFailed | None = None


def parse_output_line(raw: bytes, where: str) -> LineOutcome:
    """An output / error file line of the Batch API or of `vllm run-batch` (both
    `{"custom_id", "response": {"status_code", "body"}, "error"}`; an older vLLM wrote the
    completion itself as `response`). InputError(`where: ...`) when the line is malformed."""
    try:
        obj = parse_json(raw)
    except JsonProblem:
        raise InputError(f"{where}: not JSON: {snippet(raw, 80)}") from None
    if not isinstance(obj, dict):
        raise InputError(f"{where}: not a JSON object")
    key = obj.get("custom_id")
    if not isinstance(key, str) or not key:
        raise InputError(f"{where}: no custom_id")
    response, error = obj.get("response"), obj.get("error")
    if isinstance(response, dict):
        wrapped = "status_code" in response or "body" in response
        status = response.get("status_code", 200) if wrapped else 200
        body = response.get("body") if wrapped else response
        if not isinstance(status, int) or isinstance(status, bool):
            raise InputError(f"{where}: response.status_code is not an integer")
        if status == 200 and error is None:
            try:
                completion = check_completion(body)
            except AttemptFailed as exc:
                raise InputError(f"{where}: {exc.message}") from None
            empty = empty_reply_reason(completion)
            if empty is not None:  # a failed attempt, as on the synchronous path
                return LineOutcome(key, failure=AttemptFailed("bad_response", empty, True))
            return LineOutcome(key, completion=completion)
        raw_body = orjson.dumps(body if body is not None else error)
        try:
            classify_http(status if status != 200 else 500, None, raw_body)
        except AttemptFailed as failure:
            return LineOutcome(key, failure=failure)
        raise InputError(f"{where}: status {status} and an error at once")  # pragma: no cover
    if response is None and error is not None:
        message = f"batch line error: {snippet(orjson.dumps(error))}"
        return LineOutcome(key, failure=AttemptFailed("server", message, True))
    raise InputError(f"{where}: neither a response object nor an error")


class OutputLines:
    """The lines of ONE output, checked by the one rule of both ways answers arrive (a
    `--batch-file-in` file; the output and error files of one server batch): every line is a
    well-formed output line (parse_output_line), its custom_id is a request of that output
    (`known`: what this run directory wrote to request files, or the batch's own requests),
    and no custom_id has two lines. InputError naming the line (`where`) otherwise."""

    def __init__(self, known: Collection[str], not_known: str) -> None:
        self._known = known
        self._not_known = not_known  # what an unknown custom_id is not, for its message
        self.outcomes: dict[str, LineOutcome] = {}
        self._where: dict[str, str] = {}

    def add(self, raw: bytes, where: str) -> None:
        if not raw.strip():
            return
        outcome = parse_output_line(raw, where)
        if outcome.key not in self._known:
            raise InputError(f"{where}: custom_id {outcome.key[:80]!r} is not {self._not_known}")
        first = self._where.get(outcome.key)
        if first is not None:
            raise InputError(
                f"{where}: custom_id {outcome.key[:16]}... again (first at {first}): "
                "one line per request"
            )
        self._where[outcome.key] = where
        self.outcomes[outcome.key] = outcome

    def join(self, other: OutputLines) -> None:
        """`other`'s lines as part of this output (a batch's error file after its output
        file): a custom_id in both is a second line for one request."""
        for key, outcome in other.outcomes.items():
            if key in self._where:
                raise InputError(
                    f"{other._where[key]}: custom_id {key[:16]}... again (first at "
                    f"{self._where[key]}): one line per request"
                )
            self._where[key] = other._where[key]
            self.outcomes[key] = outcome


class LineSplitter:
    """Lines (split at \\n, a trailing \\r dropped) of bytes that arrive in chunks of any
    size: a file read or an HTTP body streamed, never held whole."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, chunk: bytes) -> Iterator[bytes]:
        scanned = len(self._buffer)  # the part already searched holds no line end
        self._buffer += chunk
        start = 0
        while (end := self._buffer.find(b"\n", max(start, scanned))) >= 0:
            yield bytes(self._buffer[start:end]).removesuffix(b"\r")
            start = end + 1
        del self._buffer[:start]

    def end(self) -> Iterator[bytes]:
        if self._buffer:
            yield bytes(self._buffer).removesuffix(b"\r")
            self._buffer.clear()


def read_output_file(path: str | Path, known: Collection[str]) -> OutputLines:
    """One `--batch-file-in` file, line by line (never read whole: a file of a large round
    is hundreds of MB), by OutputLines' rule."""
    lines = OutputLines(known, "a request this run directory wrote (--batch-file-out)")
    try:
        with open(path, "rb") as fh:
            for number, raw in enumerate(fh, start=1):
                lines.add(raw.rstrip(b"\r\n"), f"{path}:{number}")
    except OSError as exc:
        raise InputError(f"--batch-file-in {path}: {exc.strerror or exc}") from None
    return lines


def read_outputs(paths: Iterable[str | Path], known: set[str]) -> dict[str, LineOutcome]:
    """Every line of the output files `paths` (--batch-file-in), validated before any is
    used (OutputLines: a known custom_id, a well-formed response, one line per request in
    a file). InputError `FILE:LINE: ...` at the first bad line. A request written again
    after an error line (a retry) has a line in two files: an answer wins over an error."""
    outcomes: dict[str, LineOutcome] = {}
    for path in paths:
        for key, outcome in read_output_file(path, known).outcomes.items():
            earlier = outcomes.get(key)
            if earlier is None or earlier.completion is None:
                outcomes[key] = outcome
    return outcomes


def written_keys(store: RunStore) -> set[str]:
    """Keys this run directory wrote to request files (--batch-file-out), every round."""
    files = store.get_meta(FILES_META) or {}
    return {key for keys in files.values() for key in keys}


# ---- the server --------------------------------------------------------------------------------
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


# ---- the model ---------------------------------------------------------------------------------
@dataclass
class _Pending:
    request: ChatRequest
    future: asyncio.Future[dict[str, Any]]
    attempts: int = 0  # failed attempts so far (error lines), bounded by max_retries
    resent: int = 0  # times sent again after a batch left it unanswered
    seen: set[str] = field(default_factory=set)  # batch records already read for it


def _safe_name(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", label).strip("_") or "model"


class BatchChatModel(StoredChatModel):
    """A chat model whose calls go out in batches (see the module doc)."""

    batched = True
    usage_marks: ClassVar[Mapping[str, Any]] = MappingProxyType({"batch": True})

    def __init__(
        self,
        *,
        label: str,
        model_name: str,
        role: str,
        store: RunStore,
        state: RunCallState,
        body_of: Callable[[ChatRequest], dict[str, Any]],
        client: BatchClient | None,
        settings: BatchSettings,
        policy: RetryPolicy,
        imported: dict[str, LineOutcome] | None = None,
    ) -> None:
        super().__init__(label=label, model_name=model_name, role=role, store=store, state=state)
        self._body_of = body_of
        self._client = client
        self._settings = settings
        self._policy = policy
        self._imported = imported or {}
        self._pending: dict[str, _Pending] = {}
        self._flusher: asyncio.Task[None] | None = None
        self._last_call = 0.0
        self.lines_sent = 0
        self.batches_created = 0

    # -- the calls -----------------------------------------------------------------------------
    async def _complete(self, request: ChatRequest) -> dict[str, Any]:
        _, key = request_key(request, self.label)
        imported = self._imported.pop(key, None)
        loop = asyncio.get_running_loop()
        item = _Pending(request, loop.create_future())
        if imported is not None:  # --batch-file-in: the answer came with the run
            if imported.completion is not None:
                return imported.completion
            assert imported.failure is not None
            # The attempts made so far are the request files the call was written to: the
            # bound holds over every run of an offline round trip, however often a file is
            # imported again.
            written = self._store.get_meta(FILES_META) or {}
            item.attempts = sum(key in keys for keys in written.values()) - 1
            self._failed(item, imported.failure)
            if item.future.done():
                return await item.future
        self._pending[key] = item
        self._last_call = loop.time()
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush())
        return await item.future

    def _failed(self, item: _Pending, failure: AttemptFailed) -> bool:
        """Count a failed attempt; True when the call may be tried again, else its future
        gets the ChatError (as the synchronous path raises it after its retries)."""
        item.attempts += 1
        if failure.retryable and item.attempts <= self._policy.max_retries:
            self.stats.retries += 1
            return True
        self.stats.errors[failure.kind] += 1
        tries = f" after {item.attempts} attempts" if item.attempts > 1 else ""
        message = redact(f"{self.label}{tries} (batch): {failure.message}")
        if not item.future.done():
            item.future.set_exception(ChatError(failure.kind, message))
        return False

    async def _flush(self) -> None:
        loop = asyncio.get_running_loop()
        while self._pending:
            wait = self._settings.settle_s - (loop.time() - self._last_call)
            if wait > 0:
                await asyncio.sleep(wait)
                continue
            items, self._pending = self._pending, {}
            try:
                await self._round(items)
            except asyncio.CancelledError:
                for item in items.values():
                    item.future.cancel()
                raise
            except Exception as exc:  # every caller of the round gets it (exit 2, or the hint)
                for item in (*items.values(), *self._pending.values()):
                    if not item.future.done():
                        item.future.set_exception(exc)
                        item.future.exception()  # the callers re-raise it
                self._pending = {}
                return

    # -- a round -------------------------------------------------------------------------------
    def _records(self) -> dict[str, dict[str, Any]]:
        """This model's stored batch records, oldest first."""
        records = self._store.get_meta(f"{META_PREFIX}{self.label}") or {}
        return dict(sorted(records.items(), key=lambda kv: int(kv[0])))

    def _save(self, number: str, record: dict[str, Any]) -> None:
        records = self._store.get_meta(f"{META_PREFIX}{self.label}") or {}
        records[number] = record
        self._store.set_meta(f"{META_PREFIX}{self.label}", records)

    async def _round(self, items: dict[str, _Pending]) -> None:
        if self._settings.file_out is not None:
            self._write_files(items)
            return
        if self._client is None:
            raise InputError(
                f"{self.label}: {len(items)} request(s) have no line in the --batch-file-in "
                "files; pass --batch-file-out DIR to write them (or --batch to send them)"
            )
        todo = dict(items)
        while todo:
            covering = self._covering(todo)
            new = [key for key in todo if key not in covering]
            if new:
                for number in await self._submit(new, todo):
                    for key in self._records()[number]["keys"]:
                        if key in todo:
                            covering[key] = number
            await self._read_batches(todo, covering)

    def _covering(self, todo: dict[str, _Pending]) -> dict[str, str]:
        """key -> the newest stored batch holding it that this process has not read for it."""
        covering: dict[str, str] = {}
        for number, record in self._records().items():
            if record.get("batch_id") is None and record.get("file_id") is None:
                continue
            for key in record["keys"]:
                item = todo.get(key)
                if item is not None and number not in item.seen:
                    covering[key] = number  # later records win: the newest batch
        return covering

    async def _submit(self, keys: list[str], todo: dict[str, _Pending]) -> list[str]:
        """New batches for `keys`, split by the limits; returns their record numbers."""
        assert self._client is not None
        lines = [request_line(k, self._body_of(todo[k].request)) for k in keys]
        groups = split_lines(lines, self._settings.max_lines, self._settings.max_bytes)
        numbers = []
        start = 0
        for group in groups:
            group_keys = keys[start : start + len(group)]
            start += len(group)
            number = str(max((int(n) for n in self._records()), default=0) + 1)
            name = f"clineval-{_safe_name(self.label)}-{number}.jsonl"
            # Stored as soon as the file id exists: a kill before the batch id is stored
            # leaves a record whose batch is found again by its input file (_finished). A
            # kill before this leaves an uploaded file and no batch: nothing was submitted.
            record: dict[str, Any] = {"keys": group_keys, "file_id": None, "batch_id": None}
            file_id = await self._client.upload(name, b"".join(group))
            record["file_id"] = file_id
            self._save(number, record)
            batch = await self._client.create(file_id)
            record.update(batch_id=batch["id"], status=batch["status"])
            self._save(number, record)
            self.lines_sent += len(group)
            self.batches_created += 1
            log.info("%s: batch %s created (%d requests)", self.label, batch["id"], len(group_keys))
            numbers.append(number)
        return numbers

    async def _read_batches(self, todo: dict[str, _Pending], covering: dict[str, str]) -> None:
        """Wait for the batches in `covering` to end; settle what each answered."""
        by_batch: dict[str, list[str]] = {}
        for key, number in covering.items():
            by_batch.setdefault(number, []).append(key)
        results = await asyncio.gather(*(self._finished(n) for n in by_batch))
        records = self._records()
        for (number, keys), batch in zip(by_batch.items(), results, strict=True):
            outputs = await self._lines_of(batch, frozenset(records[number]["keys"]))
            status = batch["status"]
            for key in keys:
                item = todo[key]
                item.seen.add(number)
                outcome = outputs.get(key)
                if outcome is not None and outcome.completion is not None:
                    del todo[key]
                    if not item.future.done():
                        item.future.set_result(outcome.completion)
                elif outcome is not None:
                    assert outcome.failure is not None
                    if not self._failed(item, outcome.failure):
                        del todo[key]
                else:  # the batch ended without this line (failed / expired / cancelled / lost)
                    item.resent += 1
                    if item.resent > self._settings.resubmits:
                        failure = AttemptFailed(
                            "server", f"batch {batch['id']} {status}, no answer", False
                        )
                        self._failed(item, failure)
                        del todo[key]

    async def _finished(self, number: str) -> dict[str, Any]:
        """The batch of record `number`, polled until it ends (found by its input file when
        the batch id was never stored). A batch (or its stored input file) the server does not
        know ends as LOST: like a failed batch, its requests go out again (_lost)."""
        record = self._records()[number]
        try:
            return await self._poll(number, record)
        except BatchUnknown as exc:
            return self._lost(number, record, str(exc))

    def _lost(self, number: str, record: dict[str, Any], why: str) -> dict[str, Any]:
        """A stored batch the server does not know, ended as a failed batch without output:
        its unanswered requests are sent again within `resubmits` (_read_batches)."""
        name = record.get("batch_id") or record.get("file_id")
        log.warning(
            "%s: the server does not know batch %s (%s); its %d request(s) go out again",
            self.label,
            name,
            why,
            len(record["keys"]),
        )
        record["status"] = LOST
        self._save(number, record)
        return {"id": name, "status": LOST}

    async def _poll(self, number: str, record: dict[str, Any]) -> dict[str, Any]:
        assert self._client is not None
        if record.get("batch_id") is None:
            batch = await self._client.find_by_input(record["file_id"])
            if batch is None:
                batch = await self._client.create(record["file_id"], stored=True)
            record.update(batch_id=batch["id"], status=batch["status"])
            self._save(number, record)
        delays = poll_delays(self._settings.poll_s, self._settings.poll_max_s)
        last = None
        while True:
            batch = await self._client.get(record["batch_id"])
            counts = batch.get("request_counts") or {}
            shown = (batch["status"], counts.get("completed"), counts.get("failed"))
            if shown != last:
                log.info(
                    "%s: batch %s %s (%s of %s done, %s failed)",
                    self.label,
                    batch["id"],
                    batch["status"],
                    counts.get("completed", "?"),
                    counts.get("total", "?"),
                    counts.get("failed", "?"),
                )
                last = shown
            if batch["status"] in TERMINAL:
                break
            await asyncio.sleep(next(delays))
        if record.get("status") != batch["status"]:
            record["status"] = batch["status"]
            self._save(number, record)
        return batch

    async def _lines_of(
        self, batch: dict[str, Any], keys: Collection[str]
    ) -> dict[str, LineOutcome]:
        """The lines of a finished batch's output and error files, streamed, by the rule of
        OutputLines: each a request of the batch (`keys`, its record's), one line each."""
        assert self._client is not None
        if batch["status"] == LOST:  # no lines
            return {}

        def fresh() -> OutputLines:
            return OutputLines(keys, f"a request of batch {batch['id']}")

        found = fresh()
        for field_name in ("output_file_id", "error_file_id"):
            file_id = batch.get(field_name)
            if not isinstance(file_id, str) or not file_id:
                continue
            where = f"batch {batch['id']} {field_name.split('_')[0]} file"
            try:
                lines = await self._client.content_lines(file_id, fresh, where)
            except BatchUnknown as exc:  # its lines are lost: those requests go out again
                log.warning("%s: %s; its requests go out again", self.label, exc)
                continue
            found.join(lines)
        return found.outcomes

    # -- offline files -------------------------------------------------------------------------
    def _write_files(self, items: dict[str, _Pending]) -> None:
        directory = self._settings.file_out
        assert directory is not None
        make_dir(directory)  # every file goes through the one writer (CannotWrite, exit 2)
        keys = list(items)
        lines = [request_line(k, self._body_of(items[k].request)) for k in keys]
        groups = split_lines(lines, self._settings.max_lines, self._settings.max_bytes)
        files = self._store.get_meta(FILES_META) or {}
        paths: list[Path] = []
        start = 0
        for group in groups:
            n = len(files) + 1
            path = directory / f"clineval-{_safe_name(self.label)}-{n:03d}.jsonl"
            # whole or absent: a killed run or a full disk leaves no half file and no tmp
            atomic_write_lines(path, (line.decode("utf-8") for line in group))
            files[path.name] = keys[start : start + len(group)]
            start += len(group)
            self._store.set_meta(FILES_META, files)
            paths.append(path)
        self.lines_sent += len(lines)
        raise BatchFilesWritten(paths, len(lines))
