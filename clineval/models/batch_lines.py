"""The lines of a batch: request lines as the synchronous path would post them, and the output
lines of the OpenAI Batch API or `vllm run-batch`, each checked (clineval.models.batch)."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from clineval.errors import InputError
from clineval.jsonio import JsonProblem, parse_json
from clineval.models.chat_store import empty_reply_reason
from clineval.models.http_errors import (
    AttemptFailed,
    check_completion,
    classify_http,
    snippet,
)
from clineval.store import RunStore

ENDPOINT = "/v1/chat/completions"
MAX_LINES = 50_000  # OpenAI's limits per batch input file
MAX_BYTES = 200 * 1024 * 1024
FILES_META = "batch_files"  # keys written to request files (--batch-file-out), by file name


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
