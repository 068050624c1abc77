"""A lean HTTP/1.1 client for JSON POSTs over kept-alive connections (asyncio protocols).

Why not aiohttp or httpx: measured through the whole call path, aiohttp costs ~250 us of CPU
per call and the openai SDK 2.5-5 ms (BENCHMARKS.md). A judged benchmark makes tens of
thousands of small calls; on a small machine that CPU, not the server, decides whether 256
calls can really be in flight. This client does only what an OpenAI-compatible chat call
needs - one POST with a JSON body, the reply read whole (Content-Length, chunked, or until
close) - and costs a fraction of that. It speaks http:// and https:// (TLS via asyncio), sends
no Accept-Encoding (so replies come uncompressed), follows no redirects and uses no proxy,
like the aiohttp session it replaces (which ignores proxy variables by default too).
aiohttp remains available as `--option llm.transport=aiohttp`.
"""

from __future__ import annotations

import asyncio
import ssl
from dataclasses import dataclass
from typing import cast
from urllib.parse import urlsplit

_MAX_HEADER_BYTES = 64 * 1024
_MAX_BODY_BYTES = 256 * 1024 * 1024


class ProtocolError(Exception):
    """The server's reply is not valid HTTP/1.x (or was cut short)."""


class ConnectionClosed(ConnectionError):
    """The connection closed before a complete reply arrived."""

    def __init__(self, message: str, received_any: bool) -> None:
        super().__init__(message)
        self.received_any = received_any


@dataclass
class Reply:
    status: int
    headers: dict[str, str]  # lower-cased names; a repeated header keeps its last value
    body: bytes


class _Connection(asyncio.Protocol):
    """One TCP connection; answers one request at a time (no pipelining)."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self._buffer = bytearray()
        self._future: asyncio.Future[Reply] | None = None
        self._head: tuple[int, dict[str, str]] | None = None
        self._body_start = 0
        self._keep_alive = True

    # -- asyncio callbacks ---------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # Not isinstance-checked: uvloop's transports do not subclass asyncio.Transport.
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        if self._future is None or self._future.done():
            return  # bytes nobody asked for: the next request will fail to parse them
        try:
            reply = self._parse(eof=False)
        except ProtocolError as exc:
            self._fail(exc)
            return
        if reply is not None:
            self._future.set_result(reply)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        future = self._future
        if future is None or future.done():
            return
        try:
            reply = self._parse(eof=True)
        except ProtocolError as err:
            future.set_exception(err)
            return
        if reply is not None:
            future.set_result(reply)
            return
        received_any = bool(self._buffer) or self._head is not None
        reason = f": {exc}" if exc else ""
        future.set_exception(ConnectionClosed(f"connection closed{reason}", received_any))

    # -- request -------------------------------------------------------------------------------
    def send(self, request: bytes) -> asyncio.Future[Reply]:
        assert self.transport is not None
        self._buffer.clear()
        self._head = None
        self._keep_alive = True
        self._future = asyncio.get_running_loop().create_future()
        self.transport.write(request)
        return self._future

    @property
    def reusable(self) -> bool:
        return not self.closed and self._keep_alive

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    def _fail(self, exc: Exception) -> None:
        if self._future is not None and not self._future.done():
            self._future.set_exception(exc)
        self.close()

    # -- parsing -------------------------------------------------------------------------------
    def _parse(self, eof: bool) -> Reply | None:
        buf = self._buffer
        if self._head is None:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                if len(buf) > _MAX_HEADER_BYTES:
                    raise ProtocolError("response headers too large")
                if eof and buf:
                    raise ProtocolError("connection closed inside the response headers")
                return None
            self._head = _parse_head(bytes(buf[:end]))
            self._body_start = end + 4
            status, headers = self._head
            if headers.get("connection", "").lower() == "close":
                self._keep_alive = False
        status, headers = self._head
        body = memoryview(buf)[self._body_start :]
        if status in (204, 304) or 100 <= status < 200:
            return Reply(status, headers, b"")
        if "chunked" in headers.get("transfer-encoding", "").lower():
            decoded = _dechunk(bytes(body))
            if decoded is None:
                if eof:
                    raise ProtocolError("connection closed inside a chunked body")
                return None
            return Reply(status, headers, decoded)
        length_text = headers.get("content-length")
        if length_text is not None:
            try:
                length = int(length_text)
            except ValueError:
                raise ProtocolError(f"bad Content-Length {length_text!r}") from None
            if length > _MAX_BODY_BYTES:
                raise ProtocolError("response body too large")
            if len(body) >= length:
                return Reply(status, headers, bytes(body[:length]))
            if eof:
                raise ProtocolError(f"body cut short: {len(body)} of {length} bytes")
            return None
        # Neither length nor chunked: the body runs until the server closes.
        self._keep_alive = False
        return Reply(status, headers, bytes(body)) if eof else None


def _parse_head(head: bytes) -> tuple[int, dict[str, str]]:
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1."):
        raise ProtocolError(f"not an HTTP/1.x status line: {lines[0][:80]!r}")
    try:
        status = int(parts[1])
    except ValueError:
        raise ProtocolError(f"bad status code {parts[1][:20]!r}") from None
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    return status, headers


def _dechunk(body: bytes) -> bytes | None:
    """The decoded body of a complete chunked encoding, or None while it is incomplete."""
    out = bytearray()
    pos = 0
    while True:
        eol = body.find(b"\r\n", pos)
        if eol < 0:
            return None
        size_text = body[pos:eol].split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            raise ProtocolError(f"bad chunk size {size_text[:20]!r}") from None
        pos = eol + 2
        if size == 0:
            # Then optional trailer lines, and an empty line ends the message.
            rest = body[pos:]
            return bytes(out) if rest.startswith(b"\r\n") or b"\r\n\r\n" in rest else None
        if len(body) < pos + size + 2:
            return None
        out += body[pos : pos + size]
        pos += size + 2


class Http1Client:
    """Keep-alive connection pool for one origin (scheme://host:port)."""

    def __init__(self, base_url: str, default_headers: dict[str, str]) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {parts.scheme}://{parts.hostname}")
        self.host = parts.hostname
        self.tls = parts.scheme == "https"
        self.port = parts.port or (443 if self.tls else 80)
        self.prefix = parts.path.rstrip("/")
        default_port = 443 if self.tls else 80
        host_header = self.host if self.port == default_port else f"{self.host}:{self.port}"
        if ":" in self.host and not host_header.startswith("["):  # IPv6 literal
            host_header = f"[{self.host}]" + ("" if self.port == default_port else f":{self.port}")
        fixed = {"Host": host_header, "User-Agent": "clineval", **default_headers}
        self._fixed_headers = "".join(f"{k}: {v}\r\n" for k, v in fixed.items())
        self._ssl: ssl.SSLContext | None = ssl.create_default_context() if self.tls else None
        self._idle: list[_Connection] = []

    async def _connect(self) -> _Connection:
        loop = asyncio.get_running_loop()
        _, conn = await loop.create_connection(
            _Connection,
            self.host,
            self.port,
            ssl=self._ssl,
            server_hostname=self.host if self.tls else None,
        )
        return conn

    async def post(self, path: str, body: bytes) -> Reply:
        """POST `body` (JSON) to prefix + path. Raises OSError / ConnectionClosed / ProtocolError.

        A kept-alive connection the server closed while idle fails before any reply byte;
        that request is sent once more on a fresh connection (the usual HTTP client rule).
        """
        head = (
            f"POST {self.prefix}{path} HTTP/1.1\r\n{self._fixed_headers}"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode("latin-1")
        request = head + body
        while self._idle:
            conn = self._idle.pop()
            if conn.closed:
                continue
            try:
                return await self._exchange(conn, request)
            except ConnectionClosed as exc:
                if exc.received_any:
                    raise
        return await self._exchange(await self._connect(), request)

    async def _exchange(self, conn: _Connection, request: bytes) -> Reply:
        try:
            reply = await conn.send(request)
        except BaseException:  # timeouts and cancellation included: the state is unknown
            conn.close()
            raise
        if conn.reusable:
            self._idle.append(conn)
        else:
            conn.close()
        return reply

    def close(self) -> None:
        for conn in self._idle:
            conn.close()
        self._idle.clear()
