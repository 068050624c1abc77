"""A scriptable OpenAI-compatible stub server on 127.0.0.1, for fault injection and perf.

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
                                                (a server that quotes the request's
                                                credentials back: in body, "{authorization}"
                                                is its Authorization header, "{credentials}"
                                                the header without its scheme word,
                                                "{userpass}" a Basic header's user:password)
  {"do": "hang", "seconds": 30}                 no answer for that long (client times out)
  {"do": "truncated"}                           200 with a JSON body cut in the middle
  {"do": "short_body"}                          Content-Length larger than the body, then close
  {"do": "non_json"}                            200 with an HTML body
  {"do": "close"}                               drop the connection without an answer
Without "content", the reply is deterministic in the request: with a `response_format` a JSON
verdict {"explanation": ..., "criteria_met": bool} (bool from the request hash), else a short
text. `"content_by_key": {KEY: text}` in a behaviour overrides the reply per request key, and
`"rules": [{"prompt": REGEX, "model": NAME, "content": text}, ...]` by what the request says:
the first rule whose regex is found in the prompt (its messages' contents joined) and whose
model is the request's (each optional) gives the reply (a judge that prefers one answer).
`"finish_reason": "length"` in an "ok" behaviour replaces "stop" (a reply cut at its cap).
`"jitter": j` in an "ok" behaviour scales each latency by a uniform draw in 1 +- j.
`"prefix_cache": true` in an "ok" behaviour plays a server's prompt cache: the prompt's
longest common prefix with the last 256 prompts this stub saw counts as cached
(`usage.prompt_tokens_details.cached_tokens`, 4 characters a token), and stats()
["prefill_tokens"] sums what was not (what llama.cpp's prompt_tokens_total counts).
Stats also count the top-level request fields (`fields`) and list the `prompt_cache_key`
values in arrival order (`cache_keys`).
Control endpoints: POST /_stub/script, GET /_stub/stats, POST /_stub/reset.

The Batch API (OpenAI's /v1/files + /v1/batches, for clineval.models.batch): POST /v1/files
(multipart, purpose=batch), GET /v1/files/ID/content, POST /v1/batches, GET /v1/batches/ID,
GET /v1/batches (the list). A batch moves one status further at each GET of it (validating ->
in_progress -> finalizing -> its end), so a client sees it change while it polls. Its lines
are answered by the same reply function as /v1/chat/completions (the same content for the
same request), so a batch run and a synchronous run store equal answers. What a batch does is
scripted like chat requests (POST /_stub/batch_script {"script": [...], "default": {...}},
one entry per created batch):
  {"end": "completed"}                           every line answered
  {"end": "completed", "error_every": 3}         every 3rd line an HTTP 500 error line
  {"end": "completed", "error_status": 400, "error_every": 1}   a non-retryable error line
  {"end": "expired" | "cancelled", "answered": 0.5}   the first half answered, then it ends
  {"end": "failed"}                              no output at all (errors listed)
  {"steps": 5}                                   polls spent in_progress before the end
  {"garbled": true}                              the output file ends with a non-JSON line
  {"status": "weird"}                            a status the Batch API does not name
  {"forget": true}                               created, then unknown (404) to every look
  {"lose_output": true}                          its output file id unknown (404) when read
  {"cut_output_once": true}                      the first download of its output file stops
                                                halfway (the connection drops)
  {"extra_line": "stray" | "duplicate" | "duplicate_error"}   one more output line: a
                                                custom_id not in the batch, the first line
                                                again, or the first request in the error file
A restart is `reset()`: every file and batch is forgotten (and the counts start again).
stats() adds "batches" (created), "uploads", "batch_lines_by_key" (how often each request
key came in a batch file: a resumed run must not send one twice), "bytes_in" (request
body bytes received on /v1/ routes) and "cut_downloads" (downloads cut halfway).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import hashlib
import json
import random
import re
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any, cast

from clineval.plan import common_prefix_length


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
        self.by_model: Counter[str] = Counter()  # chat requests per body "model"
        self.by_behaviour: Counter[str] = Counter()
        self.authorization: Counter[str] = Counter()  # which Authorization headers were seen
        self.in_flight = 0
        self.max_in_flight = 0  # most chat requests open at the same time
        self.fields: Counter[str] = Counter()  # top-level request body keys
        self.cache_keys: list[str] = []  # prompt_cache_key of each request that sent one
        self.recent_prompts: list[str] = []  # the emulated prompt cache ("prefix_cache")
        self.prefill_tokens = 0  # prompt tokens not served from the emulated cache
        self.rng = random.Random()  # "jitter" draws (each process its own)
        self.bytes_in = 0
        self.reset_batches()

    def reset_batches(self) -> None:
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.batch_plans: dict[str, dict[str, Any]] = {}
        self.batch_script: list[dict[str, Any]] = []
        self.batch_default: dict[str, Any] = {"end": "completed"}
        self.batch_lines_by_key: Counter[str] = Counter()
        self.cut_once: set[str] = set()  # file ids whose next download is cut short
        self.cut_downloads = 0
        self.uploads = 0
        self.batch_api_requests = 0

    def next_behaviour(self) -> dict[str, Any]:
        return self.script.pop(0) if self.script else self.default


def _prompt_text(body: dict[str, Any]) -> str:
    return "".join(str(m.get("content", "")) for m in body.get("messages", []))


def cached_prefix_tokens(state: StubState, body: dict[str, Any]) -> int:
    """Tokens of this prompt already seen at the start of a recent prompt (then remembered)."""
    prompt = _prompt_text(body)
    shared = max((common_prefix_length(prompt, seen) for seen in state.recent_prompts), default=0)
    state.recent_prompts = [*state.recent_prompts[-255:], prompt]
    return shared // 4


def completion(
    body: dict[str, Any], key: str, content: str | None, cached_tokens: int | None = None
) -> dict[str, Any]:
    if content is None:
        if body.get("response_format"):
            met = int(key[:2], 16) % 2 == 0
            content = json.dumps({"explanation": "stub verdict", "criteria_met": met})
        else:
            content = f"stub answer {key[:8]}"
    prompt_chars = sum(len(str(m.get("content", ""))) for m in body.get("messages", []))
    prompt_tokens, completion_tokens = max(1, prompt_chars // 4), max(1, len(content) // 4)
    usage: dict[str, Any] = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    if cached_tokens is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": min(cached_tokens, prompt_tokens)}
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
        "usage": usage,
    }


def _content(behaviour: dict[str, Any], key: str, body: dict[str, Any]) -> str | None:
    by_key = behaviour.get("content_by_key") or {}
    if key in by_key:
        return str(by_key[key])
    for rule in behaviour.get("rules") or ():
        if "model" in rule and rule["model"] != body.get("model"):
            continue
        if "prompt" in rule and not re.search(rule["prompt"], _prompt_text(body)):
            continue
        return str(rule["content"])
    return behaviour.get("content")


_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 429: "Too Many Requests"}


class StubProtocol(asyncio.Protocol):
    """One client connection: HTTP/1.1 requests with Content-Length bodies, kept alive.

    A plain asyncio protocol rather than aiohttp's server: it costs a fraction of the CPU per
    request, so in the throughput benchmark the stub is never what limits the client.
    """

    def __init__(self, state: StubState) -> None:
        self.state = state
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.pending = 0  # requests received and not yet answered on this connection

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # Not isinstance-checked: uvloop's transports do not subclass asyncio.Transport.
        self.transport = cast(asyncio.Transport, transport)

    def connection_lost(self, exc: Exception | None) -> None:
        self.state.in_flight -= self.pending
        self.pending = 0

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            lines = self.buffer[:end].decode("latin-1").split("\r\n")
            method, path = [*lines[0].split(" "), "", ""][:2]
            headers = {}
            for line in lines[1:]:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            length = int(headers.get("content-length", "0") or 0)
            if len(self.buffer) < end + 4 + length:
                return
            body = bytes(self.buffer[end + 4 : end + 4 + length])
            del self.buffer[: end + 4 + length]
            self.handle(method, path, headers, body)

    # -- writing -------------------------------------------------------------------------------
    def write(self, status: int, body: bytes, content_type: str, extra: str = "") -> None:
        if self.transport is None or self.transport.is_closing():
            return
        head = (
            f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}\r\n"
            f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n{extra}\r\n"
        )
        self.transport.write(head.encode("latin-1") + body)

    def json(self, obj: Any, status: int = 200) -> None:
        self.write(status, json.dumps(obj).encode(), "application/json")

    def answer(self, status: int, body: bytes, content_type: str, extra: str = "") -> None:
        """Answer a chat request (counted in flight until now)."""
        if self.pending:
            self.pending -= 1
            self.state.in_flight -= 1
        self.write(status, body, content_type, extra)

    # -- routing -------------------------------------------------------------------------------
    def handle(self, method: str, path: str, headers: dict[str, str], body: bytes) -> None:
        state = self.state
        path, _, _query = path.partition("?")
        if path.startswith("/v1/"):  # what a client sends, not the test's own control calls
            state.bytes_in += len(body)
        if method == "POST" and path == "/v1/chat/completions":
            self.chat(headers, body)
        elif path.startswith("/v1/files") or path.startswith("/v1/batches"):
            self.batch_api(method, path, headers, body)
        elif method == "POST" and path == "/_stub/batch_script":
            spec = json.loads(body)
            state.batch_script = list(spec.get("script", []))
            if "default" in spec:
                state.batch_default = dict(spec["default"])
            if spec.get("hurry"):  # batches already running end at their next look
                for plan in state.batch_plans.values():
                    plan["steps"] = min(int(plan.get("steps", 1)), plan["polls"])
            if spec.get("fix"):  # batches already made stop misbehaving
                for plan in state.batch_plans.values():
                    plan.pop("status", None)
                    plan.pop("garbled", None)
            self.json({"ok": True})
        elif method == "POST" and path == "/_stub/script":
            spec = json.loads(body)
            state.script = list(spec.get("script", []))
            if "default" in spec:
                state.default = dict(spec["default"])
            self.json({"ok": True})
        elif method == "GET" and path == "/_stub/stats":
            self.json(
                {
                    "requests": state.requests,
                    "by_key": dict(state.by_key),
                    "by_model": dict(state.by_model),
                    "by_behaviour": dict(state.by_behaviour),
                    "authorization": dict(state.authorization),
                    "script_left": len(state.script),
                    "max_in_flight": state.max_in_flight,
                    "fields": dict(state.fields),
                    "cache_keys": state.cache_keys,
                    "prefill_tokens": state.prefill_tokens,
                    "batches": len(state.batches),
                    "uploads": state.uploads,
                    "batch_api_requests": state.batch_api_requests,
                    "batch_lines_by_key": dict(state.batch_lines_by_key),
                    "cut_downloads": state.cut_downloads,
                    "bytes_in": state.bytes_in,
                }
            )
        elif method == "POST" and path == "/_stub/reset":
            state.script = []
            state.requests = 0
            state.by_key.clear()
            state.by_model.clear()
            state.by_behaviour.clear()
            state.authorization.clear()
            state.max_in_flight = 0
            state.fields.clear()
            state.cache_keys = []
            state.recent_prompts = []
            state.prefill_tokens = 0
            state.bytes_in = 0
            state.reset_batches()
            self.json({"ok": True})
        else:
            self.json({"error": {"message": f"no route {method} {path}"}}, status=404)

    # -- the Batch API ---------------------------------------------------------------------------
    def batch_api(self, method: str, path: str, headers: dict[str, str], body: bytes) -> None:
        state = self.state
        state.authorization[headers.get("authorization", "")] += 1
        state.batch_api_requests += 1
        parts = path.strip("/").split("/")  # v1 files|batches [ID [content]]
        if method == "POST" and parts == ["v1", "files"]:
            content = _multipart_file(headers.get("content-type", ""), body)
            if content is None:
                self.json({"error": {"message": "no file part"}}, status=400)
                return
            file_id = f"file-{len(state.files) + 1}"
            state.files[file_id] = content
            state.uploads += 1
            self.json({"id": file_id, "object": "file", "bytes": len(content), "purpose": "batch"})
        elif method == "GET" and len(parts) == 4 and parts[1] == "files" and parts[3] == "content":
            if parts[2] not in state.files:
                self.json({"error": {"message": "no such file"}}, status=404)
                return
            content = state.files[parts[2]]
            if parts[2] in state.cut_once:  # half the body, then the connection drops
                state.cut_once.discard(parts[2])
                state.cut_downloads += 1
                assert self.transport is not None
                head = (
                    "HTTP/1.1 200 OK\r\nContent-Type: application/jsonl\r\n"
                    f"Content-Length: {len(content)}\r\n\r\n"
                )
                self.transport.write(head.encode() + content[: len(content) // 2])
                self.transport.close()
                return
            self.write(200, content, "application/jsonl")
        elif method == "POST" and parts == ["v1", "batches"]:
            spec = json.loads(body)
            file_id = spec.get("input_file_id")
            if file_id not in state.files:
                self.json({"error": {"message": "no such file"}}, status=404)
                return
            if spec.get("endpoint") != "/v1/chat/completions":
                self.json({"error": {"message": "bad batch request"}}, status=400)
                return
            batch_id = f"batch_{len(state.batches) + 1}"
            lines = [json.loads(x) for x in state.files[file_id].splitlines() if x.strip()]
            for line in lines:
                state.batch_lines_by_key[line["custom_id"]] += 1
            plan = state.batch_script.pop(0) if state.batch_script else dict(state.batch_default)
            state.batch_plans[batch_id] = {**plan, "lines": lines, "polls": 0}
            state.batches[batch_id] = {
                "id": batch_id,
                "object": "batch",
                "endpoint": "/v1/chat/completions",
                "input_file_id": file_id,
                "completion_window": spec.get("completion_window"),
                "status": "validating",
                "output_file_id": None,
                "error_file_id": None,
                "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
            }
            self.json(state.batches[batch_id])
        elif method == "GET" and parts == ["v1", "batches"]:
            known = [b for i, b in state.batches.items() if not state.batch_plans[i].get("forget")]
            self.json({"object": "list", "data": known})
        elif method == "GET" and len(parts) == 3 and parts[1] == "batches":
            batch = state.batches.get(parts[2])
            if batch is None or state.batch_plans[parts[2]].get("forget"):
                self.json({"error": {"message": "no such batch"}}, status=404)
                return
            self.advance(batch)
            self.json(batch)
        else:
            self.json({"error": {"message": f"no route {method} {path}"}}, status=404)

    def advance(self, batch: dict[str, Any]) -> None:
        """One status further per look (validating, in_progress x steps, finalizing, end)."""
        state = self.state
        plan = state.batch_plans[batch["id"]]
        if batch["status"] in ("completed", "failed", "expired", "cancelled"):
            return
        if "status" in plan:
            batch["status"] = plan["status"]
            return
        plan["polls"] += 1
        steps = int(plan.get("steps", 1))
        end = plan.get("end", "completed")
        if plan["polls"] == 1:
            batch["status"] = "failed" if end == "failed" else "in_progress"
            if end == "failed":
                batch["errors"] = {"data": [{"code": "invalid", "message": "stub: failed"}]}
            return
        if plan["polls"] <= steps:
            return
        if end == "completed" and plan["polls"] == steps + 1:
            batch["status"] = "finalizing"
            return
        lines = plan["lines"]
        share = 1.0 if end == "completed" else float(plan.get("answered", 0.5))
        answered = lines[: int(len(lines) * share)]
        every = int(plan.get("error_every", 0))
        out, errors = [], []
        for n, line in enumerate(answered, start=1):
            body = line["body"]
            key = request_key(body)
            if every and n % every == 0:
                status = int(plan.get("error_status", 500))
                errors.append(
                    {
                        "id": f"batch_req_{n}",
                        "custom_id": line["custom_id"],
                        "response": {
                            "status_code": status,
                            "request_id": f"req_{n}",
                            "body": {"error": {"message": "stub line error"}},
                        },
                        "error": None,
                    }
                )
                continue
            reply = completion(body, key, _content(state.default, key, body))
            out.append(
                {
                    "id": f"batch_req_{n}",
                    "custom_id": line["custom_id"],
                    "response": {"status_code": 200, "request_id": f"req_{n}", "body": reply},
                    "error": None,
                }
            )
        extra = plan.get("extra_line")
        if extra == "stray" and out:  # a custom_id that was not in the batch
            out.append({**out[0], "custom_id": "stray-fixture-id"})
        elif extra == "duplicate" and out:  # a second line for the first request
            out.append(dict(out[0]))
        elif extra == "duplicate_error" and out:  # the first request in the error file too
            error_body = {"error": {"message": "stub line error"}}
            errors.append({**out[0], "response": {"status_code": 500, "body": error_body}})
        for name, rows in (("output_file_id", out), ("error_file_id", errors)):
            if rows:
                file_id = f"file-{len(state.files) + 1}"
                text = "".join(json.dumps(r) + "\n" for r in rows)
                if name == "output_file_id" and plan.get("garbled"):
                    text += "<html>proxy error</html>\n"  # a line that is not JSON
                if not (name == "output_file_id" and plan.get("lose_output")):
                    state.files[file_id] = text.encode()
                if name == "output_file_id" and plan.get("cut_output_once"):
                    state.cut_once.add(file_id)
                batch[name] = file_id
        batch["status"] = end
        batch["request_counts"] = {
            "total": len(lines),
            "completed": len(out),
            "failed": len(errors),
        }

    def chat(self, headers: dict[str, str], raw: bytes) -> None:
        state = self.state
        try:
            body = json.loads(raw)
        except json.JSONDecodeError:
            self.json({"error": {"message": "request is not JSON"}}, status=400)
            return
        key = request_key(body)
        behaviour = state.next_behaviour()
        do = behaviour.get("do", "ok")
        state.requests += 1
        state.by_key[key] += 1
        state.by_model[str(body.get("model"))] += 1
        state.by_behaviour[do] += 1
        state.authorization[headers.get("authorization", "")] += 1
        state.fields.update(body.keys())
        if "prompt_cache_key" in body:
            state.cache_keys.append(str(body["prompt_cache_key"]))
        state.in_flight += 1
        self.pending += 1
        state.max_in_flight = max(state.max_in_flight, state.in_flight)
        loop = asyncio.get_running_loop()
        json_type = "application/json"
        if do == "ok":
            cached = cached_prefix_tokens(state, body) if behaviour.get("prefix_cache") else None
            reply = completion(body, key, _content(behaviour, key, body), cached)
            if "finish_reason" in behaviour:  # e.g. "length": a reply cut at its cap
                reply["choices"][0]["finish_reason"] = behaviour["finish_reason"]
            usage = reply["usage"]
            reused = usage.get("prompt_tokens_details", {}).get("cached_tokens", 0)
            state.prefill_tokens += usage["prompt_tokens"] - reused
            payload = json.dumps(reply).encode()
            latency = float(behaviour.get("latency", 0.0))
            if behaviour.get("jitter"):  # latency x uniform(1 - j, 1 + j): servers vary
                spread = float(behaviour["jitter"])
                latency *= state.rng.uniform(1 - spread, 1 + spread)
            if latency > 0:
                loop.call_later(latency, self.answer, 200, payload, json_type)
            else:
                self.answer(200, payload, json_type)
        elif do == "status":
            extra = ""
            if "retry_after" in behaviour:
                extra = f"Retry-After: {behaviour['retry_after']}\r\n"
            text = behaviour.get("body", json.dumps({"error": {"message": "stub error"}}))
            text = _quote_credentials(text, headers.get("authorization", ""))
            self.answer(int(behaviour["status"]), text.encode(), json_type, extra)
        elif do == "hang":
            loop.call_later(
                float(behaviour.get("seconds", 3600)), self.answer, 200, b"{}", json_type
            )
        elif do == "truncated":
            full = json.dumps(completion(body, key, _content(behaviour, key, body))).encode()
            self.answer(200, full[: len(full) // 2], json_type)
        elif do == "non_json":
            self.answer(200, b"<html><body>Bad Gateway</body></html>", "text/html")
        elif do in ("short_body", "close"):
            assert self.transport is not None
            if do == "short_body":
                self.transport.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    b'Content-Length: 4096\r\n\r\n{"choices": [{"mess'
                )
            self.transport.close()
        else:
            self.answer(400, f"unknown behaviour {do!r}".encode(), "text/plain")


def _quote_credentials(text: str, authorization: str) -> str:
    """`text` with the request's credentials in place of the placeholders in the module doc."""
    _, _, credentials = authorization.partition(" ")
    try:
        userpass = base64.b64decode(credentials, validate=True).decode("utf-8")
    except ValueError:  # binascii.Error and UnicodeDecodeError: not a Basic header
        userpass = ""
    return (
        text.replace("{authorization}", authorization)
        .replace("{credentials}", credentials)
        .replace("{userpass}", userpass)
    )


def _multipart_file(content_type: str, body: bytes) -> bytes | None:
    """The content of the part named "file" of a multipart/form-data body."""
    _, _, boundary = content_type.partition("boundary=")
    if not boundary:
        return None
    for part in body.split(b"--" + boundary.strip('"').encode()):
        head, sep, content = part.partition(b"\r\n\r\n")
        if sep and b'name="file"' in head:
            return content.removesuffix(b"\r\n")
    return None


async def _serve(port: int, latency: float) -> None:
    state = StubState(latency)
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: StubProtocol(state), "127.0.0.1", port, backlog=4096)
    actual = server.sockets[0].getsockname()[1]
    print(f"STUB_URL http://127.0.0.1:{actual}/v1", flush=True)
    async with server:
        await server.serve_forever()


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

    def batch_script(
        self,
        behaviours: list[dict[str, Any]],
        default: dict[str, Any] | None = None,
        hurry: bool = False,
        fix: bool = False,
    ) -> None:
        spec: dict[str, Any] = {"script": behaviours, "hurry": hurry, "fix": fix}
        if default is not None:
            spec["default"] = default
        self._post("/_stub/batch_script", spec)

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
