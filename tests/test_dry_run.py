"""`clineval run --dry-run`: counts the calls a run would make, sends none, writes nothing.

The strongest check is a round trip: after the real run, the plan finds every call it had
listed in the run store (the store is looked up by the key of the request the plan built), so
the plan builds exactly the requests the run sends.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llm_stub_server import StubServer

from clineval.benchmarks.clinconsensus.cases import fixture_path
from clineval.cli import main
from clineval.config import RunConfig
from clineval.models.llm_base import ChatRequest, request_key
from clineval.models.usage import Price
from clineval.plan import (
    CallPlan,
    PlannedCalls,
    estimate_tokens,
    plan_summary,
    request_token_bounds,
    request_tokens,
    token_bounds,
)
from clineval.planner import plan
from clineval.store import RunStore

FIXTURE = str(fixture_path())


def test_estimate_tokens_by_hand() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("高血压") == 3  # one per CJK character
    assert estimate_tokens("abcd") == 1 and estimate_tokens("abcde") == 2  # 4 per token, up
    assert estimate_tokens("高血压 abc，") == 3 + 1 + 1  # "，" full-width; " abc" = 4 narrow
    request = ChatRequest(messages=(("system", "abcd"), ("user", "胸痛")))
    assert request_tokens(request) == (1 + 4) + (2 + 4)


def test_call_plan_tells_stored_from_new_calls(tmp_path: Path) -> None:
    asked = ChatRequest(messages=(("user", "胸痛三天"),), max_tokens=100)
    new = ChatRequest(messages=(("user", "头痛"),), max_tokens=50)
    unbounded = ChatRequest(messages=(("user", "咳嗽"),))
    with RunStore.in_dir(tmp_path) as store:
        request_json, key = request_key(asked, "openai:m")
        store.put_calls([(key, "openai:m", request_json, {"text": "答"}, None)])
        calls = CallPlan(store)
        stored = calls.add("t", "candidate", "openai:m", asked)
        assert stored is not None and stored["response"]["text"] == "答"
        assert calls.add("t", "candidate", "openai:m", new) is None
        assert calls.add("t", "candidate", "openai:m", unbounded) is None
        # the same request under another model label is another call
        assert calls.add("t", "judge", "openai:j", asked) is None
        calls.add_bounded("t", "judge", "openai:j", new, unknown_tokens=7)
        calls.add_stored("t", "judge", "openai:j", 3)
    candidate, judge = calls.rows()
    assert (candidate.to_send, candidate.stored) == (2, 1)
    assert candidate.prompt_tokens == (2 + 4) + (2 + 4)
    assert candidate.max_completion_tokens == 50 and candidate.unbounded_replies == 1
    assert (judge.to_send, judge.stored, judge.bounded_prompts) == (2, 3, 1)
    assert judge.prompt_tokens == (4 + 4) + (2 + 4 + 7)
    assert judge.max_completion_tokens == 100 + 50


def test_plan_summary_prices_by_hand() -> None:
    rows = [
        PlannedCalls("t", "candidate", "openai:a", 10, 0, 1_000_000, 200_000),
        PlannedCalls("t", "judge", "openai:b", 0, 5, 0, 0),
    ]
    rows[0].prompt_tokens_low, rows[0].prompt_tokens_high = 500_000, 2_000_000
    summary = plan_summary(rows, {"a": Price(input_per_1m=2.0, output_per_1m=8.0)})
    first = summary["rows"][0]
    # low: the fewest prompt tokens and one output token a call; high: the most, and max_tokens
    assert first["cost_low"] == pytest.approx((500_000 * 2.0 + 10 * 8.0) / 1e6)
    assert first["cost_high"] == pytest.approx(4.0 + 1.6)
    # b has no price but nothing to send: the total is still known
    assert summary["cost_low"] == pytest.approx(first["cost_low"])
    assert summary["cost_high"] == pytest.approx(5.6)
    assert (summary["to_send"], summary["stored"]) == (10, 5)
    rows[1].to_send = 1
    assert plan_summary(rows, {"a": Price(2.0, 8.0)})["cost_high"] is None


def test_token_bounds_by_hand() -> None:
    assert token_bounds("") == (0, 0)
    # 12 ASCII characters: at least 1 token per 6, at most 1 per 2
    assert token_bounds("abcdefghijkl") == (2, 6)
    assert token_bounds("abcdefghijklm") == (2, 7)  # the most rounds up
    # 3 CJK characters of 3 UTF-8 bytes: at least 2 tokens per 5 characters, at most a byte each
    assert token_bounds("高血压") == (1, 9)
    # " abc" ASCII (0 .. 2) and 高血压， (4 characters, 12 bytes: 1 .. 12)
    assert token_bounds("高血压 abc，") == (1, 14)
    request = ChatRequest(messages=(("system", "abcdefghijkl"), ("user", "高血压")))
    assert request_token_bounds(request) == (2 + 1, (6 + 8) + (9 + 8))  # framing: 0 .. 8
    low, high = token_bounds("胸痛三天 chest pain for three days")
    assert low < estimate_tokens("胸痛三天 chest pain for three days") < high


def _by_hand_plan(tmp_path: Path) -> PlannedCalls:
    """Three calls of one judge, worked out by hand in the tests below:
    r1 = 600 x "a" + 6 x "X" (prefix key k), r2 = 600 x "a" + 6 x "Y" (key k), r3 = 60 x "b"
    (no key), each max_tokens 10."""
    shared = "a" * 600
    requests = [
        ChatRequest(messages=(("user", shared + "X" * 6),), prefix_key="k", max_tokens=10),
        ChatRequest(messages=(("user", shared + "Y" * 6),), prefix_key="k", max_tokens=10),
        ChatRequest(messages=(("user", "b" * 60),), max_tokens=10),
    ]
    with RunStore.in_dir(tmp_path) as store:
        calls = CallPlan(store)
        for request in requests:
            calls.add("t", "judge", "openai:j", request)
        (row,) = calls.rows()
    return row


def test_cost_range_by_hand(tmp_path: Path) -> None:
    row = _by_hand_plan(tmp_path)
    # fewest: r1, r2 606 // 6 = 101 each, r3 60 // 6 = 10; r2's 600 shared "a"s (100 tokens)
    # a prompt cache could serve; r1 is the model's first call, r3 shares nothing with it
    assert (row.prompt_tokens_low, row.cacheable_tokens_low) == (212, 100)
    # most: 606 / 2 = 303 + 8 framing for r1 and r2, 60 / 2 + 8 = 38 for r3
    assert row.prompt_tokens_high == 2 * 311 + 38
    price = Price(input_per_1m=2.0, output_per_1m=8.0, cached_input_per_1m=0.5)
    priced = plan_summary([row], {"j": price})
    # low: 112 uncached x 2 + 100 cached x 0.5 + 3 output tokens x 8, per million
    assert priced["cost_low"] == pytest.approx((112 * 2.0 + 100 * 0.5 + 3 * 8.0) / 1e6)
    # high: 660 prompt tokens x 2 + 3 x 10 output tokens x 8, per million
    assert priced["cost_high"] == pytest.approx((660 * 2.0 + 30 * 8.0) / 1e6)
    # batched at half price: both ends halve
    half = Price(2.0, 8.0, 0.5, batch_discount=0.5)
    batched = plan_summary([row], {"j": half}, {"openai:j": True})
    assert batched["cost_low"] == pytest.approx(priced["cost_low"] / 2)
    assert batched["cost_high"] == pytest.approx(priced["cost_high"] / 2)
    assert plan_summary([row], {"j": half})["cost_low"] == pytest.approx(priced["cost_low"])


def test_cost_range_of_answers_not_made_yet_and_unbounded_replies(tmp_path: Path) -> None:
    with RunStore.in_dir(tmp_path) as store:
        calls = CallPlan(store)
        # a judge prompt whose answer (up to 50 tokens) does not exist yet
        calls.add_bounded(
            "t",
            "judge",
            "openai:j",
            ChatRequest(messages=(("user", "c" * 12),), max_tokens=10),
            unknown_tokens=50,
        )
        (judge,) = calls.rows()
        # the answer counts as empty at the low end and at its 50 tokens at the high end
        assert (judge.prompt_tokens_low, judge.prompt_tokens_high) == (2, 6 + 8 + 50)
        price = {"j": Price(1.0, 1.0)}
        assert plan_summary([judge], price)["cost_high"] == pytest.approx((64 + 10) / 1e6)
        calls.add("t", "judge", "openai:j", ChatRequest(messages=(("user", "d"),)))
    # a reply without max_tokens has no most
    summary = plan_summary(calls.rows(), price)
    assert summary["rows"][0]["cost_high"] is None and summary["cost_high"] is None
    assert summary["cost_low"] == pytest.approx((2 + 0 + 2) / 1e6)


@pytest.fixture(scope="module")
def stub() -> Iterator[StubServer]:
    with StubServer(latency=0.0) as server:
        yield server


def _config(stub: StubServer, crit: int, verdicts: str | None = None, **extra: Any) -> RunConfig:
    """A ClinConsensus run of the stub (`verdicts`: its clinconsensus.verdicts file)."""
    options = {"clinconsensus.max_criteria": str(crit), "clinconsensus.cases": FIXTURE}
    if verdicts is not None:
        options["clinconsensus.verdicts"] = verdicts
    return RunConfig(
        tasks=["clinconsensus"],
        model=f"openai:stub-candidate@{stub.base_url}",
        limit=2,
        max_retries=0,
        options=options,
        **extra,
    )


def _argv(stub: StubServer, out: Path, crit: int, *extra: str) -> list[str]:
    argv = ["run", "clinconsensus", "--model", f"openai:stub-candidate@{stub.base_url}"]
    argv += ["--cases", FIXTURE, "--limit", "2", "--max-retries", "0", "--output-dir", str(out)]
    return [*argv, "--option", f"clinconsensus.max_criteria={crit}", *extra]


def _rows(summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["role"]: row for row in summary["rows"]}


def test_clinconsensus_plan_before_between_and_after_runs(
    tmp_path: Path, stub: StubServer, capsys: pytest.CaptureFixture[str]
) -> None:
    stub.reset()
    out = tmp_path / "run"
    # Before anything: 2 answers, 2 x 3 judge calls whose prompts hold answers not made yet
    assert main(_argv(stub, out, 3, "--dry-run", "--max-tokens", "300")) == 0
    printed = " ".join(capsys.readouterr().out.split())  # the console wraps long lines
    assert "total: 8 calls to send, 0 already stored" in printed
    assert "6 judge prompts hold answers not made yet" in printed
    assert not out.exists() and stub.stats()["requests"] == 0
    before = _rows(plan(_config(stub, 3, max_tokens=300), out))
    assert (before["candidate"]["to_send"], before["candidate"]["stored"]) == (2, 0)
    assert before["candidate"]["max_completion_tokens"] == 2 * 300
    judge = before["judge"]
    assert (judge["to_send"], judge["bounded_prompts"]) == (6, 6)
    assert judge["max_completion_tokens"] == 6 * 1024  # the judge's default max_tokens

    # A run of the first 2 criteria; then the plan for 3: only the third is left, its prompt
    # exact (the answers are stored)
    assert main(_argv(stub, out, 2, "--max-tokens", "300")) == 0
    sent = stub.stats()["requests"]
    assert sent == 2 + 4
    between = _rows(plan(_config(stub, 3, max_tokens=300), out))
    assert (between["candidate"]["to_send"], between["candidate"]["stored"]) == (0, 2)
    assert (between["judge"]["to_send"], between["judge"]["stored"]) == (2, 4)
    assert between["judge"]["bounded_prompts"] == 0
    # the exact prompts are shorter than the bound that stood in for the answers
    assert between["judge"]["prompt_tokens"] < before["judge"]["prompt_tokens"] / 3
    assert stub.stats()["requests"] == sent  # planning sent nothing

    # The run of 3 makes exactly the 2 calls planned; afterwards nothing is left to send
    assert main(_argv(stub, out, 3, "--max-tokens", "300")) == 0
    assert stub.stats()["requests"] == sent + 2
    after = plan(_config(stub, 3, max_tokens=300), out)
    assert after["to_send"] == 0 and after["stored"] == 2 + 6
    assert after["prompt_tokens"] == 0


def test_plan_finds_calls_stored_without_their_record(tmp_path: Path, stub: StubServer) -> None:
    """A run killed after a call and before its record: the cached call is free."""
    stub.reset()
    out = tmp_path / "run"
    assert main(_argv(stub, out, 1)) == 0
    with sqlite3.connect(out / "store.sqlite") as conn:
        conn.execute("DELETE FROM records")  # as if the records were never written
    summary = _rows(plan(_config(stub, 1), out))
    assert (summary["candidate"]["to_send"], summary["candidate"]["stored"]) == (0, 2)
    # the answers come from the cached calls, so the judge prompts are exact and cached too
    assert (summary["judge"]["to_send"], summary["judge"]["stored"]) == (0, 2)


def test_resume_check_and_non_chat_models(tmp_path: Path, stub: StubServer) -> None:
    stub.reset()
    out = tmp_path / "run"
    assert main(_argv(stub, out, 1)) == 0
    other = RunConfig(**{**_config(stub, 1).model_dump(), "model": "openai:other@http://x/v1"})
    with pytest.raises(Exception, match="refusing to resume"):
        plan(other, out)
    # a verdicts file: no model is called at all
    verdicts = tmp_path / "verdicts.jsonl"
    verdicts.write_text("", encoding="utf-8")
    fresh = tmp_path / "fresh"
    summary = plan(_config(stub, 1, verdicts=str(verdicts)), fresh)
    assert summary["rows"] == [] and summary["to_send"] == 0
    assert not fresh.exists()
    assert math.isclose(summary["prompt_tokens"], 0)


@pytest.mark.llm
@pytest.mark.slow
def test_the_cost_range_holds_the_cost_of_a_real_run(tmp_path: Path, gguf: Path) -> None:
    """The oracle is a real tokenizer: SmolLM2's, in the llama.cpp server that counts every
    prompt and reply (and the prompt tokens it served from its cache). The dry run's range,
    made before anything exists, holds the run's prompt tokens and its cost."""
    import json

    label = f"llamacpp:{gguf}"
    prices = tmp_path / "prices.json"
    price = {"input_per_1m": 1.0, "output_per_1m": 4.0, "cached_input_per_1m": 0.1}
    prices.write_text(json.dumps({label: price}))
    options = {
        "clinconsensus.max_criteria": "3",
        "clinconsensus.judge_max_tokens": "16",
        "clinconsensus.judge_retries": "0",
        "llamacpp.n_parallel": "1",
        "clinconsensus.cases": FIXTURE,
    }
    settings: dict[str, Any] = {
        "tasks": ["clinconsensus"],
        "model": label,
        "limit": 2,
        "max_tokens": 24,
        "concurrency": 1,
        "max_judge_error_rate": 1.0,
        "price_table": str(prices),
        "options": options,
    }
    out = tmp_path / "run"
    summary = plan(RunConfig.checked(**settings), out)
    argv = ["run", "clinconsensus", "--model", label, "--limit", "2"]
    argv += ["--max-tokens", "24", "--concurrency", "1", "--max-judge-error-rate", "1"]
    argv += ["--price-table", str(prices), "--output-dir", str(out)]
    for item in options.items():
        argv += ["--option", "=".join(item)]
    assert main(argv) in (0, 1)
    usage = json.loads((out / "manifest.json").read_text())["llm_usage"]
    assert usage["calls"] == summary["to_send"] == 2 * (1 + 3)
    low = sum(r["prompt_tokens_low"] for r in summary["rows"])
    high = sum(r["prompt_tokens_high"] for r in summary["rows"])
    assert low <= usage["prompt_tokens"] <= high
    assert summary["cost_low"] <= usage["estimated_cost"] <= summary["cost_high"]


def test_a_local_models_answers_are_counted_at_its_real_cap(
    tmp_path: Path, gguf: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without --max-tokens a llamacpp: candidate's replies are capped at a quarter of a slot
    (1,024 tokens of the default 4,096): the plan counts the answers not made yet, inside the
    judge prompts, at that cap, and says that figure (it said 2,048, the figure assumed for
    a server with no cap)."""
    argv = ["run", "clinconsensus", "--option", "clinconsensus.cases=fixture"]
    argv += ["--model", f"llamacpp:{gguf}", "--limit", "2", "-o", str(tmp_path / "run")]
    argv += ["--option", "clinconsensus.max_criteria=3", "--dry-run"]
    assert main(argv) == 0
    printed = " ".join(capsys.readouterr().out.split())
    assert "6 judge prompts hold answers not made yet, counted at 1,024 tokens each" in printed
    assert "2,048" not in printed.split("judge prompts hold")[1]
    config = RunConfig.checked(
        tasks=["clinconsensus"],
        model=f"llamacpp:{gguf}",
        limit=2,
        options={"clinconsensus.cases": "fixture", "clinconsensus.max_criteria": "3"},
    )
    rows = _rows(plan(config, tmp_path / "run"))
    assert rows["candidate"]["max_completion_tokens"] == 2 * 1024
    assert rows["judge"]["bound_tokens"] == 1024
    # --max-tokens is the cap then, for the count and the sentence alike
    assert main([*argv, "--max-tokens", "300"]) == 0
    printed = " ".join(capsys.readouterr().out.split())
    assert "counted at 300 tokens each" in printed
