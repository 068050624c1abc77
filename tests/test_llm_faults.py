"""Fault handling of the OpenAI-compatible client against a scripted stub server on 127.0.0.1.

Each fault has an expected number of HTTP requests at the stub (first try + retries) and an
expected ChatError kind; every loop is bounded by `max_retries`.
"""

from __future__ import annotations

import asyncio
import random
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llm_stub_server import StubServer

from clineval.benchmarks.base import RunContext
from clineval.config import RunConfig
from clineval.models.llm import RetryPolicy, open_chat_model, parse_retry_after
from clineval.models.llm_base import ChatError, ChatRequest, ChatResponse
from clineval.models.spec import ModelSpec
from clineval.store import RunStore

FAST = RetryPolicy(max_retries=3, base_delay_s=0.01, max_delay_s=0.05)
TRANSPORTS = ["aiohttp", "openai"]


@pytest.fixture(scope="module")
def stub() -> Iterator[StubServer]:
    with StubServer(latency=0.0) as server:
        yield server


@pytest.fixture(autouse=True)
def _fresh_stub(stub: StubServer) -> None:
    stub.reset()


def make_ctx(tmp_path: Path, model: str, **config: Any) -> RunContext:
    cfg = RunConfig(tasks=["fixture"], model=model, **config)
    store = RunStore.in_dir(tmp_path)
    return RunContext(
        config=cfg,
        store=store,
        output_dir=tmp_path,
        data_root=None,
        model=ModelSpec.parse(model, tuple(cfg.base_urls)),
    )


def ask(i: int = 0) -> ChatRequest:
    return ChatRequest(messages=(("user", f"question {i}"),), seed=7, template_version="t1")


async def _one(ctx: RunContext, request: ChatRequest, **kw: Any) -> ChatResponse:
    async with open_chat_model(
        ctx.model, ctx.runtime, "judge", retry=kw.pop("retry", FAST), **kw
    ) as m:
        return await m.chat(request)


def run_one(ctx: RunContext, request: ChatRequest | None = None, **kw: Any) -> ChatResponse:
    return asyncio.run(_one(ctx, request or ask(), **kw))


def error_of(ctx: RunContext, **kw: Any) -> ChatError:
    with pytest.raises(ChatError) as info:
        run_one(ctx, **kw)
    return info.value


def stats_of(ctx: RunContext) -> dict[str, Any]:
    return ctx.runtime.calls.totals()


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_500_twice_then_ok_retries_twice(tmp_path: Path, stub: StubServer, transport: str) -> None:
    stub.script([{"do": "status", "status": 500}, {"do": "status", "status": 503}])
    ctx = make_ctx(tmp_path, f"openai:m@{stub.base_url}")
    response = run_one(ctx, transport=transport)
    assert response.text.startswith("stub answer")
    assert stub.stats()["requests"] == 3
    totals = stats_of(ctx)
    assert totals["retries"] == 2 and totals["http_attempts"] == 3
    assert ctx.store.count_calls() == 1


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_server_error_forever_stops_after_max_retries(
    tmp_path: Path, stub: StubServer, transport: str
) -> None:
    stub.script([], default={"do": "status", "status": 500})
    ctx = make_ctx(tmp_path, f"openai:m@{stub.base_url}")
    err = error_of(ctx, transport=transport, retry=RetryPolicy(2, 0.01, 0.02))
    assert err.kind == "server"
    assert stub.stats()["requests"] == 3  # first try + 2 retries, then it gives up
    assert ctx.store.count_calls() == 0  # a failure is never cached


def test_429_honours_retry_after(tmp_path: Path, stub: StubServer) -> None:
    stub.script([{"do": "status", "status": 429, "retry_after": "0.4"}])
    ctx = make_ctx(tmp_path, f"openai:m@{stub.base_url}")
    started = time.monotonic()
    run_one(ctx)
    waited = time.monotonic() - started
    # The backoff alone would be ~0.01 s; the server asked for 0.4 s and got at least that.
    assert waited >= 0.4
    assert stub.stats()["requests"] == 2
    assert stats_of(ctx)["retries"] == 1


def test_429_forever_is_rate_limit(tmp_path: Path, stub: StubServer) -> None:
    stub.script([], default={"do": "status", "status": 429, "retry_after": "0"})
    ctx = make_ctx(tmp_path, f"openai:m@{stub.base_url}")
    err = error_of(ctx)
    assert err.kind == "rate_limit"
    assert stub.stats()["requests"] == FAST.max_retries + 1


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_bad_request_fails_at_once(tmp_path: Path, stub: StubServer, transport: str) -> None:
    body = '{"error": {"message": "response_format json_schema is not supported"}}'
    stub.script([{"do": "status", "status": 400, "body": body}])
    ctx = make_ctx(tmp_path, f"openai:m@{stub.base_url}")
    err = error_of(ctx, transport=transport)
    assert err.kind == "bad_request"
    assert "json_schema is not supported" in str(err)  # the server's reason reaches the caller
    assert stub.stats()["requests"] == 1
    assert stats_of(ctx)["retries"] == 0


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_hang_past_timeout(tmp_path: Path, stub: StubServer, transport: str) -> None:
    stub.script([], default={"do": "hang", "seconds": 30})
    ctx = make_ctx(tmp_path, f"openai:m@{stub.base_url}", timeout_s=0.3)
    err = error_of(ctx, transport=transport, retry=RetryPolicy(1, 0.01, 0.01))
    assert err.kind == "timeout"
    assert stub.stats()["requests"] == 2


def test_hang_once_then_ok(tmp_path: Path, stub: StubServer) -> None:
    stub.script([{"do": "hang", "seconds": 30}])
    # 1 s: room for the second (normal) answer even on a loaded machine.
    ctx = make_ctx(tmp_path, f"openai:m@{stub.base_url}", timeout_s=1.0)
    assert run_one(ctx).text.startswith("stub answer")
    assert stub.stats()["requests"] == 2


@pytest.mark.parametrize(
    ("behaviour", "kinds"),
    [
        ("truncated", {"bad_response"}),
        ("non_json", {"bad_response"}),
        # A body cut short of its Content-Length: the SDK reports it as a connection error.
        ("short_body", {"bad_response", "connection"}),
    ],
)
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_malformed_bodies(
    tmp_path: Path, stub: StubServer, transport: str, behaviour: str, kinds: set[str]
) -> None:
    stub.script([], default={"do": behaviour})
    ctx = make_ctx(tmp_path, f"openai:m@{stub.base_url}")
    err = error_of(ctx, transport=transport, retry=RetryPolicy(2, 0.01, 0.01))
    assert err.kind in kinds
    assert stub.stats()["requests"] == 3


def test_truncated_once_then_ok(tmp_path: Path, stub: StubServer) -> None:
    stub.script([{"do": "truncated"}, {"do": "non_json"}])
    ctx = make_ctx(tmp_path, f"openai:m@{stub.base_url}")
    assert run_one(ctx).text.startswith("stub answer")
    assert stub.stats()["requests"] == 3


def test_dropped_connection(tmp_path: Path, stub: StubServer) -> None:
    stub.script([], default={"do": "close"})
    ctx = make_ctx(tmp_path, f"openai:m@{stub.base_url}")
    err = error_of(ctx, retry=RetryPolicy(1, 0.01, 0.01))
    assert err.kind in ("connection", "bad_response")
    assert stub.stats()["requests"] == 2


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_connection_refused(tmp_path: Path, transport: str) -> None:
    ctx = make_ctx(tmp_path, f"openai:m@http://127.0.0.1:{_closed_port()}/v1")
    err = error_of(ctx, transport=transport)
    assert err.kind == "connection"
    totals = stats_of(ctx)
    assert totals["http_attempts"] == FAST.max_retries + 1
    assert totals["errors"] == {"connection": 1}


def test_dead_replica_is_avoided(tmp_path: Path, stub: StubServer) -> None:
    dead = f"http://127.0.0.1:{_closed_port()}/v1"
    ctx = make_ctx(tmp_path, "openai:m", base_urls=[dead, stub.base_url], concurrency=1)

    async def main() -> list[ChatResponse]:
        async with open_chat_model(ctx.model, ctx.runtime, retry=FAST) as model:
            return await asyncio.gather(*(model.chat(ask(i)) for i in range(10)))

    assert len(asyncio.run(main())) == 10
    assert stub.stats()["requests"] == 10  # every call reached the live replica
    # After its first refusal the dead replica rests: one call at a time, so only the first
    # call to it paid a retry (round-robin alone would send every second call there).
    totals = stats_of(ctx)
    assert totals["http_attempts"] - 10 == totals["retries"] <= 1


def _spread(tmp_path: Path, latencies: tuple[float, float], calls: int) -> tuple[int, int]:
    with StubServer(latency=latencies[0]) as a, StubServer(latency=latencies[1]) as b:
        ctx = make_ctx(tmp_path, "openai:m", base_urls=[a.base_url, b.base_url], concurrency=8)

        async def main() -> None:
            async with open_chat_model(ctx.model, ctx.runtime, retry=FAST) as model:
                await asyncio.gather(*(model.chat(ask(i)) for i in range(calls)))

        asyncio.run(main())
        return a.stats()["requests"], b.stats()["requests"]


def test_load_spread_over_replicas(tmp_path: Path) -> None:
    a, b = _spread(tmp_path / "even", (0.05, 0.05), 40)
    assert a + b == 40 and min(a, b) >= 14  # equal replicas share the load
    slow, fast = _spread(tmp_path / "skewed", (0.4, 0.02), 60)
    # Least-in-flight: the slow replica holds its requests longer, so it is picked less often.
    assert slow + fast == 60 and fast >= 3 * slow


def test_one_concurrency_limit_for_all_models_of_a_run(tmp_path: Path) -> None:
    with StubServer(latency=0.3) as server:
        ctx = make_ctx(tmp_path, f"openai:cand@{server.base_url}", concurrency=3)
        judge = ModelSpec.parse(f"openai:judge@{server.base_url}")

        async def main() -> None:
            async with (
                open_chat_model(ctx.model, ctx.runtime, "candidate", retry=FAST) as cand,
                open_chat_model(judge, ctx.runtime, "judge", retry=FAST) as jud,
            ):
                calls = [cand.chat(ask(i)) for i in range(6)] + [jud.chat(ask(i)) for i in range(6)]
                await asyncio.gather(*calls)

        asyncio.run(main())
        stats = server.stats()
    assert stats["requests"] == 12
    assert stats["max_in_flight"] == 3  # never more than the run's one limit, candidate + judge


def test_identical_concurrent_requests_are_sent_once(tmp_path: Path, stub: StubServer) -> None:
    stub.script([], default={"do": "ok", "latency": 0.2})
    ctx = make_ctx(tmp_path, f"openai:m@{stub.base_url}")

    async def main() -> list[ChatResponse]:
        async with open_chat_model(ctx.model, ctx.runtime, retry=FAST) as model:
            return await asyncio.gather(*(model.chat(ask(1)) for _ in range(5)))

    responses = asyncio.run(main())
    assert {r.text for r in responses} == {responses[0].text}
    assert stub.stats()["requests"] == 1


def test_failure_is_shared_by_identical_waiters(tmp_path: Path, stub: StubServer) -> None:
    stub.script([], default={"do": "status", "status": 400})
    ctx = make_ctx(tmp_path, f"openai:m@{stub.base_url}")

    async def main() -> list[BaseException | ChatResponse]:
        async with open_chat_model(ctx.model, ctx.runtime, retry=FAST) as model:
            return await asyncio.gather(
                *(model.chat(ask(1)) for _ in range(3)), return_exceptions=True
            )

    results = asyncio.run(main())
    assert all(isinstance(r, ChatError) and r.kind == "bad_request" for r in results)
    assert stub.stats()["requests"] == 1


def test_api_key_never_stored_or_in_errors(
    tmp_path: Path, stub: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "sk-fixture-SECRET-0123456789abcdef"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    ctx = make_ctx(tmp_path, f"openai:m@{stub.base_url}")
    run_one(ctx, ask(1))
    stub.script([], default={"do": "status", "status": 401, "body": f"bad key {key}"})
    errors = [error_of(ctx)]
    stub.script([], default={"do": "status", "status": 500, "body": f"Bearer {key}"})
    errors.append(error_of(ctx, retry=RetryPolicy(1, 0.01, 0.01)))
    ctx.store.close()
    # The key was sent (the server needs it) ...
    assert stub.stats()["authorization"].get(f"Bearer {key}", 0) >= 1
    # ... but it is in no stored byte and in no error message.
    for path in tmp_path.iterdir():
        assert key.encode() not in path.read_bytes(), path.name
    for err in errors:
        assert key not in str(err) and key not in repr(err.args)
    assert [e.kind for e in errors] == ["bad_request", "server"]


def test_retry_after_parsing() -> None:
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(" 0.25 ") == 0.25
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    when = "Sun, 06 Nov 1994 08:49:37 GMT"  # RFC 9110's example date
    assert parse_retry_after(when, now=784111767.0) == 10.0
    assert parse_retry_after(when, now=784111787.0) == 0.0  # a date in the past: no wait


def test_backoff_is_jittered_exponential_and_capped() -> None:
    policy = RetryPolicy(max_retries=10, base_delay_s=1.0, max_delay_s=8.0)
    rng = random.Random(0)
    for i, ceiling in enumerate([1, 2, 4, 8, 8, 8]):
        delays = [policy.delay(i, None, rng) for _ in range(200)]
        assert all(ceiling / 2 <= d <= ceiling for d in delays)
        assert max(delays) - min(delays) > ceiling / 4  # really jittered
    # Retry-After wins when larger, capped at max_retry_after_s, plus at most 10%.
    assert all(5.0 <= policy.delay(0, 5.0, rng) <= 5.5 for _ in range(100))
    assert all(120.0 <= policy.delay(0, 1e6, rng) <= 132.0 for _ in range(100))


def test_cancelled_sender_does_not_cancel_identical_waiters(
    tmp_path: Path, stub: StubServer
) -> None:
    stub.script([], default={"do": "ok", "latency": 0.3})
    ctx = make_ctx(tmp_path, f"openai:m@{stub.base_url}")

    async def main() -> tuple[BaseException | ChatResponse, ChatResponse]:
        async with open_chat_model(ctx.model, ctx.runtime, retry=FAST) as model:
            impatient = asyncio.ensure_future(asyncio.wait_for(model.chat(ask(1)), 0.1))
            await asyncio.sleep(0.01)
            patient = await model.chat(ask(1))  # joins the impatient caller's request
            return (await asyncio.gather(impatient, return_exceptions=True))[0], patient

    first, second = asyncio.run(main())
    assert isinstance(first, TimeoutError)
    assert second.text.startswith("stub answer") and not second.cached
    assert ctx.store.count_calls() == 1


def test_run_state_survives_several_event_loops(tmp_path: Path, stub: StubServer) -> None:
    # Tasks may call asyncio.run once for answers and once for verdicts: the run's limit and
    # counters must work in each loop (an asyncio.Semaphore is bound to one loop).
    stub.script([], default={"do": "ok", "latency": 0.2})
    ctx = make_ctx(tmp_path, f"openai:m@{stub.base_url}", concurrency=2)

    async def batch(offset: int) -> None:
        async with open_chat_model(ctx.model, ctx.runtime, retry=FAST) as model:
            await asyncio.gather(*(model.chat(ask(offset + i)) for i in range(6)))

    asyncio.run(batch(0))
    asyncio.run(batch(100))
    stats = stub.stats()
    assert stats["requests"] == 12 and stats["max_in_flight"] == 2
    assert stats_of(ctx)["requests"] == 12
