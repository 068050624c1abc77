"""The chat client's happy path against a REAL llama.cpp server (xllamacpp + SmolLM2 GGUF).

SmolLM2-135M is tiny and English-only: these tests check the plumbing (HTTP, json_schema
constrained decoding, caching, usage, what is recorded), never the quality of answers.
Also: usage/cost accounting and the OpenAI base-URL resolution.
"""

from __future__ import annotations

import asyncio
import json
import re
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from clineval.benchmarks.base import RunContext
from clineval.config import RunConfig
from clineval.errors import InputError
from clineval.models.llm import open_chat_model, openai_base_urls
from clineval.models.llm_base import ChatRequest, ChatResponse
from clineval.models.spec import ModelSpec
from clineval.models.usage import load_price_table, run_usage, summarize_usage
from clineval.store import RunStore, stable_hash

VERDICT_SCHEMA = {
    "type": "json_schema",
    "json_schema": {
        "name": "verdict",
        "strict": True,
        "schema": {
            "type": "object",
            "properties": {
                "explanation": {"type": "string", "maxLength": 80},
                "criteria_met": {"type": "boolean"},
            },
            "required": ["explanation", "criteria_met"],
            "additionalProperties": False,
        },
    },
}


def make_ctx(tmp_path: Path, model: str, **config: Any) -> RunContext:
    cfg = RunConfig(tasks=["fixture"], model=model, **config)
    return RunContext(
        config=cfg,
        store=RunStore.in_dir(tmp_path),
        output_dir=tmp_path,
        data_root=None,
        model=ModelSpec.parse(model, tuple(cfg.base_urls)),
    )


def _server_metrics(base_url: str) -> dict[str, float]:
    """llama.cpp's own Prometheus counters: proof of work done (or not) by the server."""
    with urllib.request.urlopen(base_url.removesuffix("/v1") + "/metrics", timeout=10) as resp:
        text = resp.read().decode()
    return {
        m.group(1): float(m.group(2))
        for m in re.finditer(r"^llamacpp:(\w+) ([0-9.e+-]+)$", text, re.MULTILINE)
    }


@pytest.mark.llm
@pytest.mark.slow
def test_llamacpp_chat_schema_cache_usage(tmp_path: Path, gguf: Path) -> None:
    ctx = make_ctx(tmp_path, f"llamacpp:{gguf}", options={"llamacpp.metrics": "1"})
    plain = ChatRequest(
        messages=(("system", "You are terse."), ("user", "Name one colour.")),
        max_tokens=12,
        seed=11,
        template_version="fixture-v1",
    )
    judged = ChatRequest(
        messages=(("user", "Is the sky blue? Reply in JSON."),),
        max_tokens=60,
        seed=11,
        response_format=VERDICT_SCHEMA,
        template_version="fixture-v1",
    )

    async def main() -> tuple[list[ChatResponse], dict[str, float], dict[str, float], str]:
        async with open_chat_model(ctx.model, ctx.runtime, "judge") as model:
            base_url = ctx.runtime.calls.resources[f"llamacpp:{gguf}"]["server"].base_url
            first = [await model.chat(plain), await model.chat(judged)]
            before = _server_metrics(base_url)
            again = [await model.chat(plain), await model.chat(judged)]
            after = _server_metrics(base_url)
        return first + again, before, after, base_url

    (p1, j1, p2, j2), before, after, base_url = asyncio.run(main())

    # A real answer from the real model, and the server spent tokens on the first two calls.
    assert p1.text.strip() and not p1.cached and p1.finish_reason in ("stop", "length")
    assert before["tokens_predicted_total"] >= p1.usage["completion_tokens"]
    # json_schema response_format is honoured (constrained decoding): valid JSON, exact keys.
    verdict = json.loads(j1.text)
    assert set(verdict) == {"explanation", "criteria_met"}
    assert isinstance(verdict["criteria_met"], bool) and isinstance(verdict["explanation"], str)
    # Second round: answered from the store, no work at the server, no HTTP request.
    assert p2.cached and j2.cached and (p2.text, j2.text) == (p1.text, j1.text)
    assert after["tokens_predicted_total"] == before["tokens_predicted_total"]
    assert after["prompt_tokens_total"] == before["prompt_tokens_total"]
    totals = ctx.runtime.calls.totals()
    assert totals["requests"] == 4 and totals["cache_hits"] == 2 and totals["http_attempts"] == 2

    # What the store holds: the request (no URL), usage, temperature, seed, fingerprint.
    rows = {row["key"]: row for row in ctx.store.iter_calls()}
    assert len(rows) == 2
    row = rows[stable_hash(judged.cache_payload(ctx.model.label))]
    assert row["model"] == ctx.model.label
    assert row["request"]["response_format"] == VERDICT_SCHEMA
    assert row["request"]["template_version"] == "fixture-v1"
    assert base_url not in json.dumps(row)  # the (possibly private) server address is not stored
    assert row["response"]["temperature"] == 0.0 and row["response"]["seed"] == 11
    assert row["response"]["system_fingerprint"]
    usage = row["usage"]
    assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    assert usage == j1.usage

    # The server is gone after the context exits (it was bound to this run only).
    with pytest.raises(OSError):
        urllib.request.urlopen(base_url + "/models", timeout=5)

    # A new process on the same run directory (resume): served from the store, no server work.
    ctx.store.close()
    ctx2 = make_ctx(tmp_path, f"llamacpp:{gguf}")

    async def rerun() -> ChatResponse:
        async with open_chat_model(ctx2.model, ctx2.runtime, "judge") as model:
            return await model.chat(judged)

    again = asyncio.run(rerun())
    assert again.cached and again.text == j1.text and again.usage == j1.usage
    assert ctx2.runtime.calls.totals()["http_attempts"] == 0


@pytest.mark.llm
def test_candidate_and_judge_share_one_local_server(tmp_path: Path, gguf: Path) -> None:
    ctx = make_ctx(tmp_path, f"llamacpp:{gguf}")
    request = ChatRequest(messages=(("user", "Say hi."),), max_tokens=4, seed=1)

    async def main() -> tuple[int, ChatResponse, ChatResponse]:
        async with (
            open_chat_model(ctx.model, ctx.runtime, "candidate") as cand,
            open_chat_model(ctx.model, ctx.runtime, "judge") as judge,
        ):
            servers = len(ctx.runtime.calls.resources)
            return servers, await cand.chat(request), await judge.chat(request)

    servers, a, b = asyncio.run(main())
    assert servers == 1
    assert not a.cached and b.cached  # same model + same request = one call
    assert ctx.runtime.calls.resources == {}  # released when the last user left


# ---- usage and cost ---------------------------------------------------------------------------
def test_usage_and_cost_from_store(tmp_path: Path) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(
        json.dumps(
            {
                "openai:big": {"input_per_1m": 2.0, "output_per_1m": 8.0},
                "small": {"input_per_1m": 0.5, "output_per_1m": 1.5},
            }
        )
    )
    with RunStore.in_dir(tmp_path / "run") as store:
        store.put_call("k1", "openai:big", {}, {"text": "a"}, {"prompt_tokens": 1000})
        store.put_call(
            "k2", "openai:big", {}, {"text": "b"}, {"prompt_tokens": 500, "completion_tokens": 250}
        )
        store.put_call(
            "k3",
            "openai:small",
            {},
            {"text": "c"},
            {"prompt_tokens": 2e6, "completion_tokens": 1e6},
        )
        store.put_call("k4", "llamacpp:x.gguf", {}, {"text": "d"}, None)
        summary = run_usage(store, prices)
    big, small, local = (
        summary["models"][m] for m in ("openai:big", "openai:small", "llamacpp:x.gguf")
    )
    assert (big["calls"], big["prompt_tokens"], big["completion_tokens"]) == (2, 1500, 250)
    assert big["estimated_cost"] == pytest.approx((1500 * 2.0 + 250 * 8.0) / 1e6)
    assert small["estimated_cost"] == pytest.approx(2 * 0.5 + 1 * 1.5)  # matched by bare name
    assert local["estimated_cost"] is None and local["calls_without_usage"] == 1
    assert summary["estimated_cost"] == pytest.approx(0.005 + 2.5)
    assert summary["unpriced_models"] == ["llamacpp:x.gguf"]
    assert summary["calls"] == 4 and summary["prompt_tokens"] == 1500 + 2_000_000


def test_no_price_table_means_unknown_cost_not_zero() -> None:
    summary = summarize_usage([("openai:m", {"prompt_tokens": 3, "completion_tokens": 4})], {})
    assert summary["estimated_cost"] is None
    assert summary["models"]["openai:m"]["total_tokens"] == 7


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[1, 2]", "expected"),
        ('{"m": 3}', "must be an object"),
        ('{"m": {"input_per_1m": "1", "output_per_1m": 1}}', "input_per_1m must be a number"),
        ('{"m": {"input_per_1m": 1, "output_per_1m": -1}}', "output_per_1m must be >= 0"),
        ('{"m": {"input_per_1m": 1}}', "output_per_1m must be a number"),
        ('{"m": ', "invalid JSON"),
    ],
)
def test_bad_price_table(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "prices.json"
    path.write_text(content)
    with pytest.raises(InputError, match=re.escape(message)) as info:
        load_price_table(path)
    assert info.value.path == str(path)


def test_base_url_resolution(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(InputError, match="no server address"):
        openai_base_urls(ModelSpec.parse("openai:m"))
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
    assert openai_base_urls(ModelSpec.parse("openai:m")) == ("http://127.0.0.1:1/v1",)
    spec = ModelSpec.parse("openai:m@http://a/v1", ("http://b/v1",))
    assert openai_base_urls(spec) == ("http://a/v1", "http://b/v1")  # explicit URLs win
    with pytest.raises(InputError, match="not http"):
        openai_base_urls(ModelSpec.parse("openai:m", ("127.0.0.1:8000/v1",)))


def test_non_chat_backend_is_input_error(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, "baseline:crf")

    async def main() -> None:
        async with open_chat_model(ctx.model, ctx.runtime):
            pass

    with pytest.raises(InputError, match="not a chat model"):
        asyncio.run(main())


def test_url_credentials_and_api_key_together_is_input_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Basic auth in the URL and a Bearer key cannot both be sent (aiohttp raised ValueError,
    an internal error); the message names neither secret."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fixture-key-0123456789")
    ctx = make_ctx(tmp_path, "openai:m@http://alice:PW-fixture-secret@127.0.0.1:9/v1")

    async def main() -> None:
        async with open_chat_model(ctx.model, ctx.runtime):
            pass

    with pytest.raises(InputError, match="user:password") as info:
        asyncio.run(main())
    assert "PW-fixture-secret" not in str(info.value) and "0123456789" not in str(info.value)


# ---- group commit -----------------------------------------------------------------------------
def test_group_commit_batches_the_calls_that_finish_during_a_commit(tmp_path: Path) -> None:
    """One commit at a time, in a worker thread; whatever arrives meanwhile is the next batch."""
    import threading

    from clineval.models.chat_store import GroupCommit

    class SlowStore:
        def __init__(self) -> None:
            self.store = RunStore.in_dir(tmp_path)
            self.batches: list[list[str]] = []
            self.threads: set[str] = set()
            self.release = threading.Event()

        def put_calls(self, rows: list[tuple[str, str, str, Any, Any]]) -> None:
            self.threads.add(threading.current_thread().name)
            self.batches.append([row[0] for row in rows])
            self.release.wait(5)  # the first commit is held until the others are queued
            self.store.put_calls(rows)

    slow = SlowStore()
    writer = GroupCommit(slow)

    async def main() -> None:
        first = asyncio.ensure_future(writer.put(("a", "m", "{}", {"text": "a"}, None)))
        while not slow.batches:  # the first commit is running in its thread
            await asyncio.sleep(0.005)
        later = [
            asyncio.ensure_future(writer.put((k, "m", "{}", {"text": k}, None))) for k in "bcd"
        ]
        await asyncio.sleep(0.05)
        assert not first.done()  # not answered before its row is committed
        slow.release.set()
        await asyncio.gather(first, *later)

    asyncio.run(main())
    assert slow.batches == [["a"], ["b", "c", "d"]]
    assert threading.current_thread().name not in slow.threads
    assert slow.store.count_calls() == 4
    slow.store.close()


def test_group_commit_writes_a_turns_calls_together(tmp_path: Path) -> None:
    from clineval.models.chat_store import GroupCommit

    store = RunStore.in_dir(tmp_path)
    writer = GroupCommit(store)

    async def main() -> None:
        rows = [
            (f"k{i}", "openai:m", f'{{"q":{i}}}', {"text": str(i)}, {"prompt_tokens": i})
            for i in range(5)
        ]
        await asyncio.gather(*(writer.put(row) for row in rows))

    asyncio.run(main())
    assert store.count_calls() == 5
    assert store.get_call("k3") == {"response": {"text": "3"}, "usage": {"prompt_tokens": 3}}
    assert {c["key"]: c["request"] for c in store.iter_calls()}["k3"] == {"q": 3}
    store.close()

    # A failing commit reaches every caller of that batch; nothing is silently dropped.
    async def failing() -> list[BaseException | None]:
        return await asyncio.gather(
            *(writer.put((f"x{i}", "m", "{}", {}, None)) for i in range(3)), return_exceptions=True
        )

    results = asyncio.run(failing())
    assert all(isinstance(r, Exception) for r in results)
