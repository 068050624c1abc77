"""Prefix affinity: a call's prefix key picks its replica (clineval.models.replicas), never its
cache key; ClinConsensus judge calls carry their case's key, are judged a window of cases at a
time, and may send the key as `prompt_cache_key` (opt-in). Real stub servers on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from llm_stub_server import StubServer

from clineval.benchmarks.base import RunContext
from clineval.benchmarks.clinconsensus.cases import fixture_path
from clineval.benchmarks.judged_flow import judging_window
from clineval.cli import main
from clineval.config import RunConfig
from clineval.judge.run import judge_prefix_key, judge_request
from clineval.models.llm import RetryPolicy, open_chat_model
from clineval.models.llm_base import ChatRequest, request_key
from clineval.models.replicas import Replica, ReplicaSet, rendezvous_order
from clineval.models.spec import ModelSpec
from clineval.models.usage import usage_of
from clineval.store import RunStore

FIXTURE = str(fixture_path())
URLS = tuple(f"http://replica-{i}.invalid:8000/v1" for i in range(4))


# ---- the replica choice ---------------------------------------------------------------------
def _start(replicas: ReplicaSet, key: str) -> Replica:
    """A key's call enters the model and is placed (as HTTPChatModel does)."""
    replicas.begin(key)
    return replicas.pick(None, key)


def test_a_new_key_goes_to_the_fewest_active_keys_and_stays_whatever_the_load() -> None:
    replicas = ReplicaSet(URLS)
    homes = [_start(replicas, f"case-{i}") for i in range(12)]
    # 12 active cases on 4 replicas: 3 each, however the hash ranks them
    assert sorted(replicas.active_keys().values()) == [3, 3, 3, 3]
    # the first four keys took four different replicas, each its first choice among the
    # replicas with the fewest keys (all of them empty for the first)
    assert len({r.base_url for r in homes[:4]}) == 4
    assert homes[0] is rendezvous_order("case-0", replicas.replicas)[0]
    home = homes[0]
    home.in_flight = 50  # a busy home keeps its key: a move would recompute its prefix
    for _ in range(5):
        replicas.begin("case-0")
        assert replicas.pick(None, "case-0") is home
    assert replicas.active_keys()[home.base_url] == 3  # one key, however many calls
    # keys that are done free their place; a new key takes the replica with the fewest
    for key, replica in zip([f"case-{i}" for i in range(12)], homes, strict=True):
        if replica is homes[1]:
            replicas.end(key)  # each began one call
    assert replicas.active_keys()[homes[1].base_url] == 0
    assert _start(replicas, "case-new") is homes[1]


def test_a_key_that_pauses_comes_back_to_its_home() -> None:
    replicas = ReplicaSet(URLS)
    home = _start(replicas, "case-a")
    replicas.end("case-a")  # between two calls: no call in the model
    assert replicas.active_keys()[home.base_url] == 0
    for i in range(3):  # meanwhile other keys fill the other replicas
        _start(replicas, f"other-{i}")
    assert replicas.active_keys()[home.base_url] == 0  # the paused key's home stayed empty
    _start(replicas, "other-3")  # the fewest active keys: the paused key's home
    assert _start(replicas, "case-a") is home  # and the paused key still goes home
    assert replicas.active_keys()[home.base_url] == 2


def test_keyless_calls_take_the_least_loaded() -> None:
    replicas = ReplicaSet(URLS)
    for r, load in zip(replicas.replicas, (3, 1, 2, 5), strict=True):
        r.in_flight = load
    assert replicas.pick(None, None) is replicas.replicas[1]
    replicas.begin(None)  # keyless calls are not counted as keys
    replicas.end(None)
    assert set(replicas.active_keys().values()) == {0}


def test_the_order_replicas_are_listed_in_does_not_matter() -> None:
    forward, backward = ReplicaSet(URLS), ReplicaSet(tuple(reversed(URLS)))
    keys = [f"case-{i}" for i in range(50)]
    assert [_start(forward, k).base_url for k in keys] == [
        _start(backward, k).base_url for k in keys
    ]


def test_a_replica_that_is_down_moves_only_its_keys_and_they_stay_moved() -> None:
    replicas = ReplicaSet(URLS[:3])
    keys = [f"case-{i}" for i in range(30)]
    before = {k: _start(replicas, k) for k in keys}
    assert sorted(replicas.active_keys().values()) == [10, 10, 10]
    down = replicas.replicas[0]
    down.failed()  # resting after a refused connection
    during = {k: replicas.pick(None, k) for k in keys}
    moved = [k for k in keys if during[k] is not before[k]]
    assert sorted(moved) == sorted(k for k in keys if before[k] is down)
    assert all(during[k] is not down for k in keys)
    assert replicas.active_keys()[down.base_url] == 0
    assert sorted(replicas.active_keys().values()) == [0, 15, 15]  # spread over the others
    down.succeeded()
    assert {k: replicas.pick(None, k) for k in keys} == during  # a moved key stays moved
    # the replica a call just failed on is avoided like a resting one, and the key moves
    key = keys[0]
    failed_on = during[key]
    elsewhere = replicas.pick(failed_on, key)
    assert elsewhere is not failed_on and replicas.pick(None, key) is elsewhere


def test_forgotten_keys_are_only_inactive_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("clineval.models.replicas._KEYS_KEPT", 3)
    replicas = ReplicaSet(URLS)
    active = _start(replicas, "active")
    for i in range(5):
        _start(replicas, f"done-{i}")
        replicas.end(f"done-{i}")
    assert replicas.pick(None, "active") is active  # still remembered (it is active)
    assert sum(replicas.active_keys().values()) == 1


# ---- the cache key does not see the prefix key ----------------------------------------------
# The key this request had before prefix keys existed (computed with the previous commit's
# clineval.models.llm_base): run stores written then must still answer it.
OLD_KEY = "c2df4f706a5eadd516c2f01eacc680ef5d2985f565bac7f6a383afe4a593e8c5"


def _judge_like(prefix_key: str | None) -> ChatRequest:
    return ChatRequest(
        messages=(("system", "You grade."), ("user", "case fixture-001: answer; criterion r01")),
        temperature=0.0,
        max_tokens=64,
        seed=3,
        response_format={"type": "json_object"},
        template_version="clinconsensus-judge-v1",
        prefix_key=prefix_key,
    )


def test_prefix_key_is_routing_only_never_part_of_the_request_key() -> None:
    assert request_key(_judge_like(None), "openai:judge")[1] == OLD_KEY
    assert request_key(_judge_like("any-key"), "openai:judge")[1] == OLD_KEY
    assert _judge_like("a") == _judge_like("b")  # equal requests, whatever their routing
    assert judge_request(_judge_like(None).messages, "v", "json_object", 0, 8, 0, "k").prefix_key
    assert judge_prefix_key("v1", "q", "a") == judge_prefix_key("v1", "q", "a")
    assert judge_prefix_key("v1", "q", "a") != judge_prefix_key("v1", "q", "b")


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_store_written_before_prefix_keys_still_answers(tmp_path: Path) -> None:
    request_json, _ = request_key(_judge_like(None), "openai:judge")
    with RunStore.in_dir(tmp_path) as store:  # a call as an older clineval stored it
        store.put_calls(
            [(OLD_KEY, "openai:judge", request_json, {"text": '{"criteria_met": true}'}, {})]
        )
    nobody = f"http://127.0.0.1:{_closed_port()}/v1"  # nothing listens: a call would fail
    config = RunConfig(tasks=["clinconsensus"], model=f"openai:judge@{nobody}")
    store = RunStore.in_dir(tmp_path)
    ctx = RunContext(config, store, tmp_path, None, ModelSpec.parse(config.model))

    async def ask() -> tuple[str, bool]:
        retry = RetryPolicy(0, 0.01, 0.01)
        async with open_chat_model(ctx.model, ctx.runtime, "judge", retry=retry) as model:
            reply = await model.chat(_judge_like("case-key"))
            return reply.text, reply.cached

    assert asyncio.run(ask()) == ('{"criteria_met": true}', True)
    assert ctx.runtime.calls.totals()["http_attempts"] == 0
    store.close()


# ---- ClinConsensus against real stub servers ------------------------------------------------
@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[StubServer, StubServer, StubServer]]:
    with StubServer() as candidate, StubServer() as j1, StubServer() as j2:
        yield candidate, j1, j2


@pytest.fixture(autouse=True)
def _fresh(servers: tuple[StubServer, StubServer, StubServer]) -> None:
    for server in servers:
        server.reset()


def _run(out: Path, candidate: StubServer, *extra: str) -> int:
    # a key given twice is refused: 5 criteria unless `extra` sets its own
    own = any(item.startswith("clinconsensus.max_criteria=") for item in extra)
    criteria = [] if own else ["--option", "clinconsensus.max_criteria=5"]
    return main(
        [
            "run",
            "clinconsensus",
            "--model",
            f"openai:stub-candidate@{candidate.base_url}",
            "--cases",
            FIXTURE,
            *criteria,
            "--max-retries",
            "0",
            "--output-dir",
            str(out),
            *extra,
        ]
    )


def test_a_cases_judge_calls_go_to_one_replica_of_the_judge_fleet(
    tmp_path: Path, servers: tuple[StubServer, StubServer, StubServer]
) -> None:
    candidate, j1, j2 = servers
    fleet = ["--judge", "openai:stub-judge"]
    fleet += ["--judge-base-url", j1.base_url, "--judge-base-url", j2.base_url]
    options = ["--option", "llm.prompt_cache_key=1", "--concurrency", "2"]
    assert _run(tmp_path / "run", candidate, *fleet, *options) == 0
    keys = [set(j1.stats()["cache_keys"]), set(j2.stats()["cache_keys"])]
    assert len(keys[0] | keys[1]) == 12  # the fixture's 12 cases, one key each
    assert not keys[0] & keys[1]  # no case's calls were split over the two replicas
    assert keys[0] and keys[1]  # and the cases were spread over both
    assert j1.stats()["requests"] + j2.stats()["requests"] == 12 * 5
    assert "prompt_cache_key" not in candidate.stats()["fields"]  # candidate calls: no key


def test_cases_are_judged_a_window_at_a_time(
    tmp_path: Path, servers: tuple[StubServer, StubServer, StubServer]
) -> None:
    candidate, judge, _ = servers
    concurrency = 3
    extra = ["--judge", f"openai:stub-judge@{judge.base_url}", "--concurrency", str(concurrency)]
    assert _run(tmp_path / "run", candidate, *extra, "--option", "llm.prompt_cache_key=1") == 0
    order = judge.stats()["cache_keys"]
    assert len(order) == 60 and len(set(order)) == 12
    spans = {k: (order.index(k), len(order) - 1 - order[::-1].index(k)) for k in set(order)}
    # cases whose calls were under way at the same moment (arrival order at the server)
    most = max(sum(1 for a, b in spans.values() if a <= i <= b) for i in range(len(order)))
    assert most <= 3, order
    assert judging_window(concurrency) == 3


def test_prompt_cache_key_is_opt_in_and_leaves_the_cache_alone(
    tmp_path: Path, servers: tuple[StubServer, StubServer, StubServer]
) -> None:
    candidate, judge, _ = servers
    out = tmp_path / "run"
    extra = ["--judge", f"openai:stub-judge@{judge.base_url}"]
    assert _run(out, candidate, *extra) == 0
    assert "prompt_cache_key" not in judge.stats()["fields"]  # off by default
    with RunStore.in_dir(out) as store:
        calls = store.count_calls()
    # Turning it on changes no stored call's key: the rerun is answered from the store.
    judge.reset()
    assert _run(out, candidate, *extra, "--option", "llm.prompt_cache_key=yes") == 0
    assert judge.stats()["requests"] == 0
    with RunStore.in_dir(out) as store:
        assert store.count_calls() == calls
    # In a new directory the judge calls carry it, one key per case and answer.
    assert _run(tmp_path / "new", candidate, *extra, "--option", "llm.prompt_cache_key=1") == 0
    stats = judge.stats()
    assert stats["fields"]["prompt_cache_key"] == stats["requests"] == 60
    assert len(set(stats["cache_keys"])) == 12
    manifest = json.loads((tmp_path / "new" / "manifest.json").read_text())
    assert manifest["config"]["options"]["llm.prompt_cache_key"] == "1"


def test_a_bad_prompt_cache_key_value_is_one_line(
    tmp_path: Path,
    servers: tuple[StubServer, StubServer, StubServer],
    capsys: pytest.CaptureFixture[str],
) -> None:
    candidate = servers[0]
    assert _run(tmp_path / "run", candidate, "--option", "llm.prompt_cache_key=maybe") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: --option llm.prompt_cache_key='maybe': must be true or false (1/0)"]


def test_usage_of_keeps_what_a_server_reports() -> None:
    openai_like = {
        "usage": {
            "prompt_tokens": 1619,
            "completion_tokens": 9,
            "total_tokens": 1628,
            "prompt_tokens_details": {"cached_tokens": 1611},
        }
    }
    assert usage_of(openai_like) == {
        "prompt_tokens": 1619,
        "completion_tokens": 9,
        "total_tokens": 1628,
        "cached_tokens": 1611,
    }
    llamacpp_like = {
        "usage": {"prompt_tokens": 100, "completion_tokens": 5},
        "timings": {
            "cache_n": 92,
            "prompt_n": 8,
            "prompt_ms": 12.5,
            "predicted_n": 5,
            "predicted_ms": 40.0,
            "prompt_per_second": 640.0,
        },
    }
    assert usage_of(llamacpp_like) == {
        "prompt_tokens": 100,
        "completion_tokens": 5,
        "cached_tokens": 92,  # from timings.cache_n when the usage has no details
        "timings": {
            "prompt_n": 8,
            "prompt_ms": 12.5,
            "predicted_n": 5,
            "predicted_ms": 40.0,
            "cache_n": 92,
        },
    }
    # what a server may garble is left out, never raised: usage is what the server says
    garbled = {
        "usage": {
            "prompt_tokens": float("nan"),
            "completion_tokens": -3,
            "total_tokens": True,
            "prompt_tokens_details": {"cached_tokens": "12"},
        },
        "timings": ["not", "a", "dict"],
    }
    assert usage_of(garbled) == {}
    assert usage_of({"usage": None}) == {} and usage_of({"usage": []}) == {}


def test_keys_of_a_replica_that_is_down_move_to_the_live_one(
    tmp_path: Path, servers: tuple[StubServer, StubServer, StubServer]
) -> None:
    candidate, live, _ = servers
    dead = f"http://127.0.0.1:{_closed_port()}/v1"
    extra = ["--judge", "openai:stub-judge", "--judge-base-url", dead]
    extra += ["--judge-base-url", live.base_url, "--concurrency", "2", "--max-retries", "3"]
    extra += ["--option", "llm.backoff_base_s=0.01", "--option", "llm.prompt_cache_key=1"]
    out = tmp_path / "run"
    assert _run(out, candidate, *extra) == 0
    assert live.stats()["requests"] == 60  # every judge call answered by the live replica
    assert len(set(live.stats()["cache_keys"])) == 12
    calls = json.loads((out / "manifest.json").read_text())["llm_calls"]["totals"]
    # After a refusal the dead replica rests (1, 2, 4 ... s) and its keys move: only a call
    # now and then (when a rest ends) pays a retry, not the ~30 calls whose key it ranks first.
    assert 1 <= calls["retries"] <= 10


def test_cases_spread_evenly_over_the_judge_fleet_by_active_keys(
    tmp_path: Path, servers: tuple[StubServer, StubServer, StubServer]
) -> None:
    """12 cases judged at once on 3 replicas: 4 cases each, every case on one replica (the
    placement counts cases, not requests in flight; before it one replica could get a third
    of another's calls)."""
    candidate, j1, j2 = servers
    fleet = ["--judge", "openai:stub-judge", "--concurrency", "12"]
    for url in (j1.base_url, j2.base_url, candidate.base_url):
        fleet += ["--judge-base-url", url]
    out = tmp_path / "run"
    options = ["--option", "llm.prompt_cache_key=1"]
    # the answers first (and one criterion), so that every case is then judged at once
    assert _run(out, candidate, *fleet, *options, "--option", "clinconsensus.max_criteria=1") == 0
    for server in servers:
        server.reset()
    assert _run(out, candidate, *fleet, *options) == 0
    keys = [server.stats()["cache_keys"] for server in (j1, j2, candidate)]
    assert [len(k) for k in keys] == [16, 16, 16]  # 4 cases x the 4 criteria left, each
    assert [len(set(k)) for k in keys] == [4, 4, 4]
    assert not set(keys[0]) & set(keys[1]) and not set(keys[1]) & set(keys[2])
