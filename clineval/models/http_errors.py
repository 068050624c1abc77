"""One HTTP attempt of a chat call, judged: the parsed chat.completion, or AttemptFailed with
the kind of failure (rate_limit, server, timeout, connection, bad_request, bad_response) and
whether the retry policy may try again."""

from __future__ import annotations

import functools
from typing import Any
from urllib.parse import urlsplit

import orjson

from clineval.jsonio import JsonProblem, parse_json
from clineval.messages import clip
from clineval.retry import parse_retry_after
from clineval.secrets import redact

# 4xx that say "try again later" (timeout, conflict, too early, rate limit), as the openai SDK.
_RETRYABLE_4XX = {408, 409, 425, 429}


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
def safe_host(url: str) -> str:
    """scheme://host:port of a URL, without user:password or path (safe for messages)."""
    parts = urlsplit(url)
    host = parts.hostname or "?"
    try:
        port = parts.port
    except ValueError:  # a non-numeric port: show none rather than fail while reporting
        port = None
    return f"{parts.scheme}://{host}" + (f":{port}" if port else "")


def snippet(raw: bytes | str, limit: int = 200) -> str:
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    text = " ".join(text.split())
    return redact(text[:limit] + ("..." if len(text) > limit else ""))


def classify_http(status: int, retry_after: str | None, raw: bytes) -> dict[str, Any]:
    """The parsed body of a successful reply, or AttemptFailed with the right kind."""
    if status == 429:
        raise AttemptFailed(
            "rate_limit", f"HTTP 429: {snippet(raw)}", True, parse_retry_after(retry_after)
        )
    if status >= 500:
        raise AttemptFailed(
            "server", f"HTTP {status}: {snippet(raw)}", True, parse_retry_after(retry_after)
        )
    if status in _RETRYABLE_4XX:
        raise AttemptFailed(
            "timeout" if status == 408 else "server",
            f"HTTP {status}: {snippet(raw)}",
            True,
            parse_retry_after(retry_after),
        )
    if status >= 400:
        raise AttemptFailed("bad_request", f"HTTP {status}: {snippet(raw)}", False)
    if status != 200:
        raise AttemptFailed("bad_response", f"unexpected HTTP {status}", True)
    return check_completion(_parse_json_body(raw))


def _parse_json_body(raw: bytes) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        pass
    try:  # what orjson refuses: NaN, Infinity, lone surrogates (repaired), or why not
        return parse_json(raw)
    except JsonProblem as exc:
        problem = f"body is not JSON ({exc.reason}): {snippet(raw)}"
        raise AttemptFailed("bad_response", problem, True) from None


def check_completion(data: Any) -> dict[str, Any]:
    """A chat.completion object with a message, or AttemptFailed("bad_response")."""
    try:
        choice = data["choices"][0]
        message = choice["message"]
        content = message.get("content")
    except (KeyError, IndexError, TypeError, AttributeError):
        raise AttemptFailed(
            "bad_response", f"not a chat completion: {snippet(clip(data))}", True
        ) from None
    if content is not None and not isinstance(content, str):
        raise AttemptFailed("bad_response", "message content is not a string", True)
    return data  # type: ignore[no-any-return]
