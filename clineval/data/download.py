"""One verified download into the cache: stream, bound, check, then rename into place.

``download_verified`` is the only way bytes from the network become a file of the cache:
  * the body is read in CHUNK-sized pieces into a staging file (clineval.data.cache), so memory
    does not depend on what the server sends;
  * it is bounded: a Content-Length above ``bound.limit`` is refused before the body is read,
    and reading stops at the first byte past the limit (a server sending without end costs at
    most ``limit + CHUNK`` bytes of disk, never memory); exit 2, nothing written;
  * a body shorter than its Content-Length (connection closed early) is a failed attempt;
  * a StreamCheck (clineval.data.digests: sha256 today) sees every byte as it arrives, and the
    staging file is renamed onto the target only when the body is complete and the check
    passed. Otherwise it is deleted: the cache never holds a partial or unverified file;
  * ``gzip_output`` stores the checked bytes gzipped (an upstream file the data root keeps
    compressed): the check is on what the server sent.

Retries (clineval.retry.RetryPolicy, DOWNLOAD_RETRY): at most ``max_retries`` more tries per
file. Connection errors, timeouts, early ends, 5xx, 408 and 429 are retried after an
exponential, jittered backoff, or after the server's Retry-After when it sends one (plus up to
10%); a longer Retry-After than ``max_retry_after_s`` is cut to it. Other 4xx, a body over the
bound and a failed check are final: trying again would fetch the same wrong answer.

Pace (DOWNLOAD_PACE): every window of ``window_s`` seconds of an attempt must bring at least
``min_rate`` bytes a second, so a mirror that trickles a byte a second fails the attempt after
one window ("too slow", retried like a timeout) instead of holding the fetch for days; a whole
attempt therefore lasts at most about ``limit / min_rate + window_s``, scaled by the file's
known size. The body is read with ``read1`` (what one socket read brings), never a blocking
read of a whole chunk, so the clock is looked at after every read.

Redirects are followed to http:// and https:// only (urllib would follow one to ftp://).

Credentials in a URL (``https://user:pass@host/...``) are sent as HTTP basic auth, only to that
host (not forwarded on a redirect), and every message names the URL through secrets.redact.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import http.client
import os
import random
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol

from clineval.data.cache import open_partial
from clineval.data.digests import StreamCheck
from clineval.errors import InputError
from clineval.retry import RetryPolicy, parse_retry_after
from clineval.secrets import redact

CHUNK = 1 << 16
TIMEOUT_S = 60.0  # per socket operation: a server that stops sending fails the attempt
_RETRYABLE_4XX = {408, 429}
_SCHEMES = ("http", "https")


@dataclass(frozen=True, slots=True)
class Pace:
    """The slowest a download may be: at least `min_rate` bytes/s in every `window_s`."""

    min_rate: float
    window_s: float


# 8 KiB/s: a tenth of a slow mobile link, and the largest pinned file (under 4 MB) still
# arrives in ~8 minutes at that rate; a minute per window rides out a stalled TCP connection.
DOWNLOAD_PACE = Pace(min_rate=8192.0, window_s=60.0)


# Downloads retry less often than model calls (a file is one request, not one of thousands)
# but wait as long: the one policy of clineval.retry, with these settings.
DOWNLOAD_RETRY = RetryPolicy(max_retries=2, base_delay_s=1.0, max_delay_s=120.0)
_JITTER = random.Random()


@dataclass(frozen=True, slots=True)
class SizeBound:
    limit: int  # bytes the body may hold
    why: str  # where the limit comes from, for the error message


class _Sink(Protocol):
    def write(self, data: bytes, /) -> int: ...


class _Retryable(Exception):
    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after


def _said(text: object) -> str:
    """What a server or the network said, fit for one error line: redacted, at most ~200
    characters, one line."""
    flat = " ".join(redact(str(text)).split())
    return flat if len(flat) <= 200 else flat[:200] + "..."


def safe_url(url: str) -> str:
    """The URL as messages may show it: no credentials."""
    return redact(url)


def check_http_url(url: str, flag: str, *, base: bool = False) -> None:
    """Refuse a URL that cannot be downloaded from (scheme, host, port), naming the flag.
    `base`: a URL that paths are appended to, so a query or fragment would end up before
    them: refused too, shown only up to the "?" (a query often holds a key)."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:  # "http://[::1" (an unclosed IPv6 bracket), and the like
        raise InputError(f"{flag} {safe_url(url)} is not a valid URL") from None
    problem = None
    if parts.scheme not in _SCHEMES:
        problem = "must start with http:// or https://"
    elif not parts.hostname:
        problem = "has no host"
    else:
        try:
            parts.port  # noqa: B018 - raises ValueError for a port that is not 0..65535
        except ValueError:
            problem = "has an invalid port"
    if problem is not None:
        raise InputError(f"{flag} {safe_url(url)} {problem}")
    if base and ("?" in url or "#" in url):
        before = url.split("?", 1)[0].split("#", 1)[0]
        raise InputError(
            f"{flag} {safe_url(before)}?...: a base URL cannot carry a query string or a fragment"
        )


class _HttpOnlyRedirects(urllib.request.HTTPRedirectHandler):
    """urllib's redirects, but only to http:// and https:// (it also follows ftp://, which
    would fetch with another client, no size header and none of this module's checks)."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: IO[bytes],
        code: int,
        msg: str,
        headers: http.client.HTTPMessage,
        newurl: str,
    ) -> urllib.request.Request | None:
        scheme = urllib.parse.urlsplit(newurl).scheme.lower()
        if scheme not in _SCHEMES:
            raise InputError(
                f"redirected to {safe_url(newurl)}: only http:// and https:// are followed",
                path=safe_url(req.full_url),
            )
        return super().redirect_request(req, fp, code, msg, headers, newurl)


_OPENER = urllib.request.build_opener(_HttpOnlyRedirects())


def _request(url: str, headers: Mapping[str, str] | None = None) -> urllib.request.Request:
    request = _plain_request(url)
    # Unredirected, like the basic auth below: a host's token must not follow a redirect to
    # another (a hub sends downloads on to a CDN).
    for name, value in (headers or {}).items():
        request.add_unredirected_header(name, value)
    return request


def _plain_request(url: str) -> urllib.request.Request:
    parts = urllib.parse.urlsplit(url)
    if parts.username is None and parts.password is None:
        return urllib.request.Request(url, headers={"User-Agent": "clineval-fetch"})
    host = parts.hostname or ""
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    netloc = host if parts.port is None else f"{host}:{parts.port}"
    bare = urllib.parse.urlunsplit(parts._replace(netloc=netloc))
    request = urllib.request.Request(bare, headers={"User-Agent": "clineval-fetch"})
    user = urllib.parse.unquote(parts.username or "")
    password = urllib.parse.unquote(parts.password or "")
    token = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
    # Unredirected: urllib would otherwise copy the header to wherever a redirect points.
    request.add_unredirected_header("Authorization", f"Basic {token}")
    return request


DOWNLOAD_FAILED = "download failed"  # how every failed download's message starts


def download_verified(
    url: str,
    target: Path,
    *,
    staging_root: Path,
    bound: SizeBound,
    check: Callable[[], StreamCheck],
    what: str,
    gzip_output: bool = False,
    retry: RetryPolicy = DOWNLOAD_RETRY,
    headers: Mapping[str, str] | None = None,
    pace: Pace = DOWNLOAD_PACE,
) -> Path:
    """Download `url` onto `target` as described in the module doc; return `target`.

    `check` makes a fresh StreamCheck per attempt; `what` names the file in messages (its path
    relative to the cache); `staging_root` is the cache holding the staging area; `headers`
    (e.g. a hub's Authorization) go to `url`'s host only, never to a redirect."""
    attempts = retry.max_retries + 1
    last = "no attempt made"
    for attempt in range(attempts):
        try:
            return _attempt(
                url, target, staging_root, bound, check(), what, gzip_output, headers, pace
            )
        except _Retryable as exc:
            last = exc.reason
            if attempt + 1 < attempts:
                time.sleep(retry.delay(attempt, exc.retry_after, _JITTER))
    raise InputError(f"{DOWNLOAD_FAILED} after {attempts} attempts: {last}", path=safe_url(url))


def _attempt(
    url: str,
    target: Path,
    staging_root: Path,
    bound: SizeBound,
    check: StreamCheck,
    what: str,
    gzip_output: bool,
    headers: Mapping[str, str] | None,
    pace: Pace,
) -> Path:
    shown = safe_url(url)
    try:
        with _OPENER.open(_request(url, headers), timeout=TIMEOUT_S) as response:
            return _receive(
                response, shown, target, staging_root, bound, check, what, gzip_output, pace
            )
    except urllib.error.HTTPError as exc:
        exc.close()  # its body (an error page) is not read
        if 400 <= exc.code < 500 and exc.code not in _RETRYABLE_4XX:
            raise InputError(f"HTTP {exc.code} {_said(exc.reason)} for {shown}") from None
        after = parse_retry_after(exc.headers.get("Retry-After") if exc.headers else None)
        raise _Retryable(f"HTTP {exc.code} {_said(exc.reason)}", after) from None
    except urllib.error.URLError as exc:
        raise _Retryable(_said(exc.reason)) from None
    except (TimeoutError, ConnectionError, http.client.HTTPException) as exc:
        raise _Retryable(_said(f"{type(exc).__name__}: {exc}")) from None


def _too_large(shown: str, bound: SizeBound) -> InputError:
    return InputError(
        f"response body exceeds {bound.limit:,} bytes ({bound.why}); "
        "download stopped, nothing written to the cache",
        path=shown,
    )


def _content_length(response: http.client.HTTPResponse) -> int | None:
    value = response.headers.get("Content-Length")
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _receive(
    response: http.client.HTTPResponse,
    shown: str,
    target: Path,
    staging_root: Path,
    bound: SizeBound,
    check: StreamCheck,
    what: str,
    gzip_output: bool,
    pace: Pace,
) -> Path:
    declared = _content_length(response)
    if declared is not None and declared > bound.limit:
        raise _too_large(shown, bound)
    fd, partial = open_partial(staging_root, target.name)
    placed = False
    try:
        with os.fdopen(fd, "wb") as raw:
            if gzip_output:
                # mtime 0 and no file name: the same body always gives the same bytes
                with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as packed:
                    received = _copy(response, packed, check, bound, shown, pace)
            else:
                received = _copy(response, raw, check, bound, shown, pace)
            if declared is not None and received < declared:
                raise _Retryable(f"connection closed after {received:,} of {declared:,} bytes")
            problem = check.problem()
            if problem is not None:
                raise InputError(
                    f"checksum mismatch for {what} downloaded from {shown} ({problem}); "
                    "nothing was written",
                    path=target,
                )
            raw.flush()
            os.fsync(raw.fileno())
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(partial, target)  # while still locked: no clean-up can take it
            placed = True
        return target
    except OSError as exc:  # the disk side: reading errors were turned into _Retryable
        raise InputError(f"cannot write to the cache: {exc.strerror or exc}", path=target) from None
    finally:
        if not placed:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(partial)


def _copy(
    response: http.client.HTTPResponse,
    sink: _Sink,
    check: StreamCheck,
    bound: SizeBound,
    shown: str,
    pace: Pace,
) -> int:
    """Copy the body into `sink` through `check`, at most one byte past the bound, at least at
    `pace`; its length."""
    received = 0
    window_start, window_bytes = time.monotonic(), 0
    needed = pace.min_rate * pace.window_s
    while True:
        try:
            # read1: returns after one socket read; read(n) would wait for all n bytes
            chunk = response.read1(min(CHUNK, bound.limit + 1 - received))
        except (OSError, http.client.HTTPException) as exc:  # reset, timeout, bad chunking
            raise _Retryable(_said(f"{type(exc).__name__}: {exc}")) from None
        if not chunk:
            return received
        received += len(chunk)
        if received > bound.limit:
            raise _too_large(shown, bound)
        check.update(chunk)
        sink.write(chunk)
        now = time.monotonic()
        if now - window_start >= pace.window_s:
            if received - window_bytes < needed:
                raise _Retryable(
                    f"too slow: {received - window_bytes:,} bytes in {now - window_start:.0f} s"
                    f" (at least {pace.min_rate:,.0f} bytes/s needed)"
                )
            window_start, window_bytes = now, received
