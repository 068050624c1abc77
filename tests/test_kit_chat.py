"""The kit's `predict_by_chat` on its own, against the stub server: the reply parser gets the
sample's id, unreadable replies are counted as they arrive, and a server that refuses a
response_format is asked once more without it only when the task opts in. (NER and TCM-SD
run on it: their whole runs are in test_ner_llm.py and test_tcm_llm.py.)"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llm_stub_server import StubServer

from clineval.benchmarks import PREDICTION, ChatRequest, RunContext, predict_by_chat
from clineval.config import RunConfig
from clineval.models.spec import ModelSpec
from clineval.store import RunStore

TASK = "kit-chat"
JSON = {"type": "json_object"}


@pytest.fixture(scope="module")
def stub() -> Iterator[StubServer]:
    with StubServer(latency=0.0) as server:
        yield server


def make_ctx(tmp_path: Path, stub: StubServer) -> RunContext:
    model = f"openai:stub@{stub.base_url}"
    return RunContext(
        config=RunConfig(tasks=[TASK], model=model, max_retries=0),
        store=RunStore.in_dir(tmp_path),
        output_dir=tmp_path,
        data_root=None,
        model=ModelSpec.parse(model),
    )


def request(question: str, response_format: dict[str, Any] | None = None) -> ChatRequest:
    return ChatRequest(
        messages=(("user", question),), response_format=response_format, template_version="k1"
    )


def test_the_parser_gets_the_id_and_unreadable_replies_are_counted(
    tmp_path: Path, stub: StubServer
) -> None:
    stub.reset()
    stub.script([], default={"do": "ok", "content": "??", "rules": [
        {"prompt": "capital of France", "content": "Paris"},
    ]})  # fmt: skip
    ctx = make_ctx(tmp_path, stub)
    expected = {"fr": "Paris", "xx": None, "yy": None}
    questions = {"fr": "capital of France?", "xx": "capital of X?", "yy": "capital of Y?"}

    def parse(key: str, text: str) -> dict[str, Any]:
        # the id finds the sample: a parser that needs it (a document, a record) has it
        return {"asked": questions[key], "pred": None if text == "??" else text}

    counters = predict_by_chat(
        ctx,
        TASK,
        [(k, request(q)) for k, q in questions.items()],
        parse,
        invalid=lambda record: record["pred"] is None,
    )
    records = ctx.store.records(TASK, PREDICTION)
    assert records == {k: {"asked": questions[k], "pred": p} for k, p in expected.items()}
    assert counters["done"] == 3 and counters["invalid"] == 2
    # without `invalid=` nothing is counted as invalid; the stored call serves the rerun
    again = predict_by_chat(ctx, TASK, [("xx", request(questions["xx"]))], parse)
    assert "invalid" not in again and again["cache_hits"] == 1
    assert stub.stats()["requests"] == 3


@pytest.mark.parametrize("opted_in", [True, False])
def test_a_refused_response_format_is_asked_again_only_when_opted_in(
    tmp_path: Path, stub: StubServer, opted_in: bool
) -> None:
    stub.reset()
    stub.script([{"do": "status", "status": 400}], default={"do": "ok", "content": "{}"})
    ctx = make_ctx(tmp_path, stub)
    counters = predict_by_chat(
        ctx,
        TASK,
        [("a", request("json please", JSON))],
        lambda key, text: {"text": text},
        format_fallback=opted_in,
    )
    records = ctx.store.records(TASK, PREDICTION)
    if opted_in:
        assert counters["format_fallbacks"] == 1 and "errors_bad_request" not in counters
        assert records == {"a": {"text": "{}"}}
        assert stub.stats()["requests"] == 2
        # the answer is stored under the request that got it: the one without a format
        assert [c["request"].get("response_format") for c in ctx.store.iter_calls()] == [None]
    else:
        assert counters["errors_bad_request"] == 1 and "format_fallbacks" not in counters
        assert records == {} and stub.stats()["requests"] == 1


def test_a_request_without_a_format_is_not_asked_again(tmp_path: Path, stub: StubServer) -> None:
    stub.reset()
    stub.script([{"do": "status", "status": 400}], default={"do": "ok", "content": "late"})
    ctx = make_ctx(tmp_path, stub)
    counters = predict_by_chat(
        ctx, TASK, [("a", request("plain"))], lambda key, text: {"t": text}, format_fallback=True
    )
    assert counters["errors_bad_request"] == 1 and "format_fallbacks" not in counters
    assert ctx.store.records(TASK, PREDICTION) == {} and stub.stats()["requests"] == 1
