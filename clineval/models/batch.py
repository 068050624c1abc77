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

The line format is clineval.models.batch_lines, the server's Batch API clineval.models.batch_client.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar

from clineval.concurrency import RunCallState
from clineval.errors import BatchFilesWritten, InputError
from clineval.models.batch_client import LOST, TERMINAL, BatchClient, BatchUnknown, poll_delays
from clineval.models.batch_lines import (
    FILES_META,
    MAX_BYTES,
    MAX_LINES,
    LineOutcome,
    OutputLines,
    request_line,
    split_lines,
)
from clineval.models.chat_store import StoredChatModel
from clineval.models.http_errors import (
    AttemptFailed,
)
from clineval.models.llm_base import ChatError, ChatRequest, request_key
from clineval.retry import RetryPolicy
from clineval.rundir import atomic_write_lines, make_dir
from clineval.secrets import redact
from clineval.store import RunStore

log = logging.getLogger("clineval")


SETTLE_S = 0.2  # a round closes when no call came for this long
META_PREFIX = "batch:"  # run-store meta: one record per batch (or request file) of a model


@dataclass
class BatchSettings:
    poll_s: float = 5.0
    poll_max_s: float = 300.0
    max_lines: int = MAX_LINES
    max_bytes: int = MAX_BYTES
    resubmits: int = 2  # new batches for what a failed / expired / cancelled batch left
    file_out: Path | None = None  # --batch-file-out
    settle_s: float = SETTLE_S


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
