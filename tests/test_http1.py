"""The lean HTTP/1.1 client against a raw TCP server on 127.0.0.1 that sends scripted bytes:
Content-Length and chunked bodies, bodies split into tiny writes, close-delimited bodies,
kept-alive connections, a kept-alive connection the server closed while idle, and TLS."""

from __future__ import annotations

import asyncio
import shutil
import ssl
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from clineval.models.http1 import ConnectionClosed, Http1Client, ProtocolError, Reply


@dataclass
class Script:
    """One raw reply per request; `close_after` closes the connection after that reply."""

    replies: list[tuple[bytes, bool]]
    requests: list[bytes] = field(default_factory=list)
    connections: int = 0
    piecewise: bool = False  # send replies 3 bytes at a time


async def _serve(script: Script, tls: ssl.SSLContext | None = None) -> asyncio.Server:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        script.connections += 1
        try:
            while script.replies:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.decode("latin-1").split("\r\n"):
                    if line.lower().startswith("content-length:"):
                        length = int(line.split(":", 1)[1])
                body = await reader.readexactly(length)
                script.requests.append(head + body)
                raw, close_after = script.replies.pop(0)
                step = 3 if script.piecewise else len(raw) or 1
                for i in range(0, len(raw), step):
                    writer.write(raw[i : i + step])
                    await writer.drain()
                if close_after:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        writer.close()

    return await asyncio.start_server(handle, "127.0.0.1", 0, ssl=tls)


def _ok(body: bytes, extra: bytes = b"") -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n%s" % (len(body), extra, body)


async def _exchange(
    script: Script, n: int, prefix: str = "/v1", tls: ssl.SSLContext | None = None
) -> list[Reply]:
    server = await _serve(script, tls)
    port = server.sockets[0].getsockname()[1]
    scheme = "https" if tls else "http"
    client = Http1Client(f"{scheme}://127.0.0.1:{port}{prefix}", {"Authorization": "Bearer k"})
    try:
        return [await client.post("/chat/completions", b'{"a": 1}') for _ in range(n)]
    finally:
        client.close()
        server.close()
        await server.wait_closed()


def test_content_length_and_keep_alive() -> None:
    script = Script([(_ok(b'{"x": 1}'), False), (_ok(b'{"x": 2}', b"Retry-After: 3\r\n"), False)])
    replies = asyncio.run(_exchange(script, 2))
    assert [r.body for r in replies] == [b'{"x": 1}', b'{"x": 2}']
    assert replies[1].headers["retry-after"] == "3"
    assert script.connections == 1  # the second request reused the connection
    first = script.requests[0].decode()
    assert first.startswith("POST /v1/chat/completions HTTP/1.1\r\n")
    assert "Host: 127.0.0.1:" in first and "Authorization: Bearer k" in first
    assert first.endswith('Content-Length: 8\r\n\r\n{"a": 1}')


def test_chunked_body_in_tiny_pieces() -> None:
    chunked = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        b'4\r\n{"x"\r\n6;ext=1\r\n: 1234\r\n1\r\n}\r\n0\r\nX-Trailer: t\r\n\r\n'
    )
    script = Script([(chunked, False), (_ok(b"{}"), False)], piecewise=True)
    replies = asyncio.run(_exchange(script, 2))
    assert replies[0].body == b'{"x": 1234}'
    assert replies[1].body == b"{}"
    assert script.connections == 1


def test_close_delimited_body_and_connection_close() -> None:
    no_length = b'HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{"y": true}'
    script = Script([(no_length, True), (_ok(b"{}", b"Connection: close\r\n"), True)])
    script.replies.append((_ok(b"[]"), True))
    replies = asyncio.run(_exchange(script, 3))
    assert [r.body for r in replies] == [b'{"y": true}', b"{}", b"[]"]
    assert script.connections == 3  # neither reply allowed the connection to be reused


def test_idle_connection_closed_by_server_is_replaced() -> None:
    # The server answers, then closes the kept-alive connection (e.g. its idle timeout).
    script = Script([(_ok(b"1"), True), (_ok(b"2"), True)])
    replies = asyncio.run(_exchange(script, 2))
    assert [r.body for r in replies] == [b"1", b"2"]
    assert script.connections == 2


def test_body_cut_short_is_a_protocol_error() -> None:
    cut = b'HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"partial'
    with pytest.raises(ProtocolError, match="cut short"):
        asyncio.run(_exchange(Script([(cut, True)]), 1))


def test_garbage_is_a_protocol_error() -> None:
    with pytest.raises(ProtocolError, match="status line"):
        asyncio.run(_exchange(Script([(b"SSH-2.0-OpenSSH\r\n\r\n", True)]), 1))


def test_close_without_reply_is_connection_closed() -> None:
    with pytest.raises(ConnectionClosed):
        asyncio.run(_exchange(Script([(b"", True)]), 1))


def test_bad_urls() -> None:
    with pytest.raises(ValueError, match="not an http"):
        Http1Client("ftp://host/v1", {})
    client = Http1Client("https://api.example.org/v1/", {})
    assert (client.host, client.port, client.tls, client.prefix) == (
        "api.example.org",
        443,
        True,
        "/v1",
    )


def test_reused_connection_dropped_before_reply_is_retried_once_on_a_new_one() -> None:
    # The server drops the kept-alive connection when the 2nd request arrives (as when its
    # idle timeout races the request): no reply byte came, so the client resends it once.
    script = Script([(_ok(b"1"), False), (b"", True), (_ok(b"2"), False)])
    replies = asyncio.run(_exchange(script, 2))
    assert [r.body for r in replies] == [b"1", b"2"]
    assert script.connections == 2 and len(script.requests) == 3


def _self_signed(tmp_path: Path) -> tuple[Path, Path]:
    """A throw-away certificate for 127.0.0.1 (openssl CLI), as a hosted API's TLS stand-in."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl command not available")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1"),
            *("-addext", "subjectAltName=IP:127.0.0.1"),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


def test_https_with_a_trusted_certificate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cert, key = _self_signed(tmp_path)
    server_tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_tls.load_cert_chain(cert, key)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # trust it the way a user trusts a CA file
    script = Script([(_ok(b'{"tls": 1}'), False), (_ok(b'{"tls": 2}'), False)])
    replies = asyncio.run(_exchange(script, 2, tls=server_tls))
    assert [r.body for r in replies] == [b'{"tls": 1}', b'{"tls": 2}']
    assert script.connections == 1


def test_https_refuses_an_untrusted_certificate(tmp_path: Path) -> None:
    cert, key = _self_signed(tmp_path)
    server_tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_tls.load_cert_chain(cert, key)
    with pytest.raises(ssl.SSLCertVerificationError):
        asyncio.run(_exchange(Script([(_ok(b"{}"), False)]), 1, tls=server_tls))
