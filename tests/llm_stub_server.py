"""A scriptable OpenAI-compatible stub server on 127.0.0.1, for fault injection and benchmarks.

It is NOT a model: it answers `/v1/chat/completions` with a canned reply. Its value is that each
request's behaviour can be scripted (429 with Retry-After, 500, a hang past the client timeout,
a truncated or non-JSON body, a dropped connection, a slow answer) and that it counts what it
received, per request key, so a test can prove that a call was (not) repeated.

Run it as a separate process (so the client under test or under benchmark shares no event loop
with it):

    python tests/llm_stub_server.py [--port 0] [--latency 0.1]
    -> prints "STUB_URL http://127.0.0.1:PORT/v1" and serves until killed.

or from Python with `StubServer` (starts that process, reads the URL, controls it over HTTP):

    with StubServer(latency=0.0) as stub:
        stub.script([{"do": "status", "status": 429, "retry_after": "0.1"}], default={"do": "ok"})
        ... point a client at stub.base_url ...
        stub.stats() -> {"requests": 2, "by_key": {...}, "by_behaviour": {...}, ...}

Behaviours (a script is consumed one entry per chat request, then `default` applies):
  {"do": "ok", "latency": s, "content": str}   a chat.completion after `latency` seconds
  {"do": "status", "status": 429, "retry_after": "1", "body": str}   an HTTP error
  {"do": "hang", "seconds": 30}                 no answer for that long (client times out)
  {"do": "truncated"}                           200 with a JSON body cut in the middle
  {"do": "short_body"}                          Content-Length larger than the body, then close
  {"do": "non_json"}                            200 with an HTML body
  {"do": "close"}                               drop the connection without an answer
Without "content", the reply is deterministic in the request: with a `response_format` a JSON
verdict {"explanation": ..., "criteria_met": bool} (bool from the request hash), else a short
text. `"content_by_key": {KEY: text}` in a behaviour overrides the reply per request key.
Control endpoints: POST /_stub/script, GET /_stub/stats, POST /_stub/reset.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

from aiohttp import web


def request_key(body: dict[str, Any]) -> str:
    """What identifies "the same call" at the stub: model, messages and response format."""
    ident = {
        "model": body.get("model"),
        "messages": body.get("messages"),
        "response_format": body.get("response_format"),
    }
    blob = json.dumps(ident, sort_keys=True, ensure_ascii=False).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()[:16]


class StubState:
    def __init__(self, latency: float) -> None:
        self.default: dict[str, Any] = {"do": "ok", "latency": latency}
        self.script: list[dict[str, Any]] = []
        self.requests = 0
        self.by_key: Counter[str] = Counter()
        self.by_behaviour: Counter[str] = Counter()
        self.authorization: Counter[str] = Counter()  # which Authorization headers were seen
        self.in_flight = 0
        self.max_in_flight = 0  # most chat requests open at the same time

    def next_behaviour(self) -> dict[str, Any]:
        return self.script.pop(0) if self.script else self.default


def completion(body: dict[str, Any], key: str, content: str | None) -> dict[str, Any]:
    if content is None:
        if body.get("response_format"):
            met = int(key[:2], 16) % 2 == 0
            content = json.dumps({"explanation": "stub verdict", "criteria_met": met})
        else:
            content = f"stub answer {key[:8]}"
    prompt_chars = sum(len(str(m.get("content", ""))) for m in body.get("messages", []))
    prompt_tokens, completion_tokens = max(1, prompt_chars // 4), max(1, len(content) // 4)
    return {
        "id": f"chatcmpl-{key}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "stub"),
        "system_fingerprint": "stub-fp",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def _content(behaviour: dict[str, Any], key: str) -> str | None:
    by_key = behaviour.get("content_by_key") or {}
    return by_key.get(key, behaviour.get("content"))


async def handle_chat(request: web.Request) -> web.StreamResponse:
    state: StubState = request.app["state"]
    raw = await request.read()
    try:
        body = json.loads(raw)
    except json.JSONDecodeError:
        return web.json_response({"error": {"message": "request is not JSON"}}, status=400)
    key = request_key(body)
    behaviour = state.next_behaviour()
    do = behaviour.get("do", "ok")
    state.requests += 1
    state.by_key[key] += 1
    state.by_behaviour[do] += 1
    state.authorization[request.headers.get("Authorization", "")] += 1
    state.in_flight += 1
    state.max_in_flight = max(state.max_in_flight, state.in_flight)
    try:
        return await _behave(request, state, body, key, behaviour)
    finally:
        state.in_flight -= 1


async def _behave(
    request: web.Request,
    state: StubState,
    body: dict[str, Any],
    key: str,
    behaviour: dict[str, Any],
) -> web.StreamResponse:
    do = behaviour.get("do", "ok")
    if do == "ok":
        latency = float(behaviour.get("latency", 0.0))
        if latency > 0:
            await asyncio.sleep(latency)
        payload = json.dumps(completion(body, key, _content(behaviour, key)))
        return web.Response(text=payload, content_type="application/json")
    if do == "status":
        headers = {}
        if "retry_after" in behaviour:
            headers["Retry-After"] = str(behaviour["retry_after"])
        text = behaviour.get("body", json.dumps({"error": {"message": "stub error"}}))
        return web.Response(
            status=int(behaviour["status"]),
            text=text,
            headers=headers,
            content_type="application/json",
        )
    if do == "hang":
        await asyncio.sleep(float(behaviour.get("seconds", 3600)))
        return web.Response(text="{}", content_type="application/json")
    if do == "truncated":
        full = json.dumps(completion(body, key, _content(behaviour, key)))
        return web.Response(text=full[: len(full) // 2], content_type="application/json")
    if do == "non_json":
        return web.Response(text="<html><body>Bad Gateway</body></html>", content_type="text/html")
    if do in ("short_body", "close"):
        resp = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
        if do == "short_body":
            resp.content_length = 4096
            await resp.prepare(request)
            await resp.write(b'{"choices": [{"mess')
        assert request.transport is not None
        request.transport.close()
        return resp
    return web.json_response({"error": {"message": f"unknown behaviour {do!r}"}}, status=400)


async def handle_script(request: web.Request) -> web.Response:
    state: StubState = request.app["state"]
    spec = await request.json()
    state.script = list(spec.get("script", []))
    if "default" in spec:
        state.default = dict(spec["default"])
    return web.json_response({"ok": True})


async def handle_stats(request: web.Request) -> web.Response:
    state: StubState = request.app["state"]
    return web.json_response(
        {
            "requests": state.requests,
            "by_key": dict(state.by_key),
            "by_behaviour": dict(state.by_behaviour),
            "authorization": dict(state.authorization),
            "script_left": len(state.script),
            "max_in_flight": state.max_in_flight,
        }
    )


async def handle_reset(request: web.Request) -> web.Response:
    state: StubState = request.app["state"]
    state.script = []
    state.requests = 0
    state.by_key.clear()
    state.by_behaviour.clear()
    state.authorization.clear()
    state.max_in_flight = 0
    return web.json_response({"ok": True})


def make_app(latency: float) -> web.Application:
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app["state"] = StubState(latency)
    app.router.add_post("/v1/chat/completions", handle_chat)
    app.router.add_post("/_stub/script", handle_script)
    app.router.add_get("/_stub/stats", handle_stats)
    app.router.add_post("/_stub/reset", handle_reset)
    return app


async def _serve(port: int, latency: float) -> None:
    runner = web.AppRunner(make_app(latency), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port, backlog=4096)
    await site.start()
    actual = runner.addresses[0][1]
    print(f"STUB_URL http://127.0.0.1:{actual}/v1", flush=True)
    await asyncio.Event().wait()


class StubServer:
    """The stub in its own process; control helpers are synchronous (urllib)."""

    def __init__(self, latency: float = 0.0, startup_timeout_s: float = 30.0) -> None:
        self.latency = latency
        self.startup_timeout_s = startup_timeout_s
        self.proc: subprocess.Popen[str] | None = None
        self.base_url = ""
        self.root = ""

    def start(self) -> StubServer:
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--latency", str(self.latency)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()  # the server prints its URL once it listens
        if not line.startswith("STUB_URL "):
            self.close()
            raise RuntimeError(f"stub server did not start: {line!r}")
        self.base_url = line.split()[1]
        self.root = self.base_url.removesuffix("/v1")
        return self

    def _post(self, path: str, obj: Any) -> Any:
        req = urllib.request.Request(
            self.root + path,
            data=json.dumps(obj).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=10) as resp:
            return json.loads(resp.read())

    def script(
        self, behaviours: list[dict[str, Any]], default: dict[str, Any] | None = None
    ) -> None:
        spec: dict[str, Any] = {"script": behaviours}
        if default is not None:
            spec["default"] = default
        self._post("/_stub/script", spec)

    def reset(self) -> None:
        """Forget counts and script; back to answering "ok" after the start-up latency."""
        self._post("/_stub/reset", {})
        self.script([], default={"do": "ok", "latency": self.latency})

    def stats(self) -> dict[str, Any]:
        with urllib.request.urlopen(self.root + "/_stub/stats", timeout=10) as resp:
            return json.loads(resp.read())  # type: ignore[no-any-return]

    def close(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            if self.proc.stdout is not None:
                self.proc.stdout.close()
            self.proc = None

    def __enter__(self) -> StubServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


def main() -> None:
    parser = argparse.ArgumentParser(description="OpenAI-compatible stub server (127.0.0.1)")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before each answer")
    args = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(args.port, args.latency))


if __name__ == "__main__":
    main()
