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
from clineval.plan import CallPlan, PlannedCalls, estimate_tokens, plan_summary, request_tokens
from clineval.runner import plan
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
    summary = plan_summary(rows, {"a": Price(input_per_1m=2.0, output_per_1m=8.0)})
    first = summary["rows"][0]
    assert first["cost_low"] == pytest.approx(2.0)
    assert first["cost_high"] == pytest.approx(2.0 + 1.6)
    # b has no price but nothing to send: the total is still known
    assert summary["cost_low"] == pytest.approx(2.0) and summary["cost_high"] == pytest.approx(3.6)
    assert (summary["to_send"], summary["stored"]) == (10, 5)
    rows[1].to_send = 1
    assert plan_summary(rows, {"a": Price(2.0, 8.0)})["cost_high"] is None


@pytest.fixture(scope="module")
def stub() -> Iterator[StubServer]:
    with StubServer(latency=0.0) as server:
        yield server


def _config(stub: StubServer, crit: int, **extra: Any) -> RunConfig:
    return RunConfig(
        tasks=["clinconsensus"],
        model=f"openai:stub-candidate@{stub.base_url}",
        cases=FIXTURE,
        limit=2,
        max_retries=0,
        options={"clinconsensus.max_criteria": str(crit)},
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
