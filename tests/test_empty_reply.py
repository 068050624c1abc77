"""A 200 reply without usable content (content null, "" or whitespace) is a failed call:
retried within the bounded budget, then ChatError("bad_response"), and never stored, so a
rerun asks again. Before, it was stored like an answer and served from the cache forever.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from cli_inprocess import Done, clineval_inprocess
from llm_stub_server import StubServer, completion
from run_probe import stored_stub_keys

from clineval.benchmarks.base import RunContext
from clineval.config import RunConfig
from clineval.models.chat_store import StoredChatModel
from clineval.models.llm import RetryPolicy, open_chat_model
from clineval.models.llm_base import ChatError, ChatRequest, ChatResponse
from clineval.models.spec import ModelSpec
from clineval.store import STORE_FILENAME, RunStore

EMPTY = [None, "", " \n\t "]  # content null, empty, only whitespace
FAST = RetryPolicy(max_retries=3, base_delay_s=0.01, max_delay_s=0.02)


class ScriptedServer:
    """A real HTTP server on 127.0.0.1 whose chat replies carry the given contents in turn
    (the last one repeats); the shared stub cannot send `"content": null`."""

    def __init__(self, contents: list[str | None]) -> None:
        self.contents = list(contents)
        self.requests = 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.requests += 1
                content = owner.contents.pop(0) if len(owner.contents) > 1 else owner.contents[0]
                reply = completion(body, "k" * 16, "placeholder")
                reply["choices"][0]["message"]["content"] = content
                raw = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> ScriptedServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def make_ctx(tmp_path: Path, model: str) -> RunContext:
    cfg = RunConfig(tasks=["fixture"], model=model)
    return RunContext(
        config=cfg,
        store=RunStore.in_dir(tmp_path),
        output_dir=tmp_path,
        data_root=None,
        model=ModelSpec.parse(model),
    )


ASK = ChatRequest(messages=(("user", "question"),), seed=7, template_version="t1")


def ask(ctx: RunContext, transport: str, retry: RetryPolicy = FAST) -> ChatResponse:
    async def go() -> ChatResponse:
        async with open_chat_model(
            ctx.model, ctx.runtime, retry=retry, transport=transport
        ) as model:
            return await model.chat(ASK)

    return asyncio.run(go())


@pytest.mark.parametrize("transport", ["aiohttp", "openai"])
def test_empty_replies_are_retried_then_the_answer_is_stored(
    tmp_path: Path, transport: str
) -> None:
    with ScriptedServer([*EMPTY, "the answer"]) as server:
        ctx = make_ctx(tmp_path, f"openai:m@{server.base_url}")
        assert ask(ctx, transport).text == "the answer"
        assert server.requests == 4
    totals = ctx.runtime.calls.totals()
    assert totals["retries"] == 3 and totals["errors"] == {}
    assert ctx.store.count_calls() == 1


@pytest.mark.parametrize("transport", ["aiohttp", "openai"])
@pytest.mark.parametrize("content", EMPTY)
def test_an_empty_reply_to_the_end_is_a_failure_never_stored(
    tmp_path: Path, transport: str, content: str | None
) -> None:
    with ScriptedServer([content]) as server:
        ctx = make_ctx(tmp_path, f"openai:m@{server.base_url}")
        with pytest.raises(ChatError) as info:
            ask(ctx, transport, RetryPolicy(1, 0.01, 0.02))
        assert server.requests == 2  # the first try and one retry: the budget bounds it
    assert info.value.kind == "bad_response"
    assert "empty reply" in str(info.value) and "finish_reason='stop'" in str(info.value)
    assert ctx.store.count_calls() == 0
    assert ctx.runtime.calls.totals()["errors"] == {"bad_response": 1}


def test_an_empty_answer_stored_before_is_asked_again(tmp_path: Path) -> None:
    """A run store written before empty replies were refused: the rerun heals it."""
    with ScriptedServer(["the answer"]) as server:
        ctx = make_ctx(tmp_path, f"openai:m@{server.base_url}")
        from clineval.models.llm_base import request_key as key_of

        request_json, key = key_of(ASK, ctx.model.label)
        ctx.store.put_calls([(key, ctx.model.label, request_json, {"text": ""}, {})])
        assert ask(ctx, "aiohttp").text == "the answer"
        assert server.requests == 1
    assert ctx.store.get_call(key)["response"]["text"] == "the answer"  # type: ignore[index]


class _SilentBackend(StoredChatModel):
    """A non-HTTP backend (as the in-process one) whose generation came out empty."""

    async def _complete(self, request: ChatRequest) -> dict[str, Any]:
        return completion({"messages": []}, "k" * 16, "   ")


def test_a_backend_without_retries_gets_no_empty_answer_stored(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, "openai:m@http://127.0.0.1:9/v1")
    model = _SilentBackend(
        label="m", model_name="m", role="candidate", store=ctx.store, state=ctx.runtime.calls
    )
    with pytest.raises(ChatError, match="bad_response: m: empty reply"):
        asyncio.run(model.chat(ASK))
    assert ctx.store.count_calls() == 0


# ---- a whole run: the judge's (or the candidate's) empty reply, then a rerun -----------------
@pytest.fixture(scope="module")
def stub() -> Iterator[StubServer]:
    with StubServer(latency=0.0) as server:
        yield server


def _run(stub: StubServer, out: Path) -> Done:
    """The run in process: what is checked is what is sent and stored, not the process."""
    return clineval_inprocess(
        *("run", "clinconsensus", "--model", f"openai:cand@{stub.base_url}"),
        *("--option", "clinconsensus.cases=fixture", "--limit", "1"),
        *("--option", "clinconsensus.max_criteria=1"),  # one answer and one verdict
        *("--max-retries", "2", "--max-judge-error-rate", "1"),
        *("--option", "llm.backoff_base_s=0.01", "--option", "llm.backoff_max_s=0.02"),
        *("--output-dir", str(out)),
    )


@pytest.mark.parametrize("who", ["judge", "candidate"])
def test_an_empty_reply_fails_that_call_and_a_rerun_sends_it_again(
    tmp_path: Path, stub: StubServer, who: str
) -> None:
    stub.reset()
    # The candidate's answer first (unless it is the one that fails), then empty replies only.
    first = [] if who == "candidate" else [{"do": "ok"}]
    stub.script(first, default={"do": "ok", "content": ""})
    out = tmp_path / "run"
    done = _run(stub, out)
    results = json.loads((out / "results.json").read_text("utf-8"))["clinconsensus"]
    failed = [k for k, n in stub.stats()["by_key"].items() if n == 3]  # first try + 2 retries
    assert len(failed) == 1, stub.stats()
    if who == "judge":
        assert done.returncode == 0, done.stderr[-2000:]
        assert results["judge_errors"] == 1
    else:
        assert done.returncode == 1, done.stderr[-2000:]
        assert results["candidate_errors"] == 1
    assert failed[0] not in set(stored_stub_keys(out / STORE_FILENAME))

    stub.reset()  # a good server now
    rerun = _run(stub, out)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    by_key = stub.stats()["by_key"]
    assert by_key[failed[0]] == 1  # exactly the failed call was sent again ...
    # ... and besides it only the verdict that could not be asked without the answer
    assert sum(by_key.values()) == (1 if who == "judge" else 2)
    results = json.loads((out / "results.json").read_text("utf-8"))["clinconsensus"]
    assert results["judge_errors"] == 0


def test_dry_run_counts_an_empty_stored_answer_as_a_call_to_send(tmp_path: Path) -> None:
    """--dry-run and the run agree: an empty answer kept by an older store will be sent."""
    from clineval.models.llm_base import request_key as key_of
    from clineval.plan import CallPlan

    ctx = make_ctx(tmp_path, "openai:m@http://127.0.0.1:9/v1")
    request_json, key = key_of(ASK, ctx.model.label)
    ctx.store.put_calls([(key, ctx.model.label, request_json, {"text": "  "}, {})])
    calls = CallPlan(ctx.store)
    assert calls.add("t", "candidate", ctx.model.label, ASK) is None
    ctx.store.put_calls([(key, ctx.model.label, request_json, {"text": "an answer"}, {})])
    assert calls.add("t", "candidate", ctx.model.label, ASK) is not None
    (row,) = calls.rows()
    assert (row.to_send, row.stored) == (1, 1)
