"""A bounded verdict explanation: the JSON schema's maxLength, per judge.

SmolLM2 loops inside the explanation string; with the schema as a grammar (llama.cpp) a
maxLength makes it close the string and give its verdict instead of writing to max_tokens with
the JSON unfinished and being re-asked. The default is on for the in-process llama.cpp judge
only; the token cap then leaves room for the whole bounded verdict.
"""

from __future__ import annotations

import asyncio
import json
import urllib.request
from pathlib import Path

import pytest

from clineval.benchmarks.clinconsensus.common import CLINCONSENSUS_OPTIONS, Options
from clineval.benchmarks.clinconsensus.wording import builtin_prompt
from clineval.errors import InputError
from clineval.judge.parse import parse_verdict
from clineval.judge.prompt import VERDICT_SCHEMA, verdict_schema
from clineval.judge.run import FormatLadder, judge_criterion, judge_request, response_format
from clineval.models.http_chat import chat_body
from clineval.models.llamacpp_server import LlamaCppServer, LlamaCppSettings
from clineval.models.llm_base import ChatRequest, ChatResponse
from clineval.models.spec import ModelSpec

LOCAL = ModelSpec.parse("llamacpp:/m.gguf")
REMOTE = ModelSpec.parse("openai:m")


def test_the_schema_bounds_only_the_explanation_and_never_mutates_the_shared_one() -> None:
    before = json.dumps(VERDICT_SCHEMA, sort_keys=True)
    bounded = verdict_schema(40)
    assert bounded["properties"]["explanation"] == {"type": "string", "maxLength": 40}
    assert bounded["properties"]["criteria_met"] == {"type": "boolean"}
    assert bounded["required"] == ["explanation", "criteria_met"]
    assert json.dumps(VERDICT_SCHEMA, sort_keys=True) == before
    assert verdict_schema(None) is VERDICT_SCHEMA
    fmt = response_format("json_schema", 40)
    assert fmt is not None and fmt["json_schema"]["schema"] == bounded
    # the lower ladder levels cannot carry a bound
    assert response_format("json_object", 40) == {"type": "json_object"}
    assert response_format("text", 40) is None


def test_the_bound_and_cap_per_judge() -> None:
    """Hand-computed: 3 tokens a character + 64 (prompt.verdict_token_bound) -> 664 for 200."""
    defaults = Options.from_config({})
    assert defaults.explanation_bound(LOCAL) == 200 and defaults.judge_cap(LOCAL) == 664
    assert defaults.explanation_bound(REMOTE) is None and defaults.judge_cap(REMOTE) == 1024
    unbounded = Options.from_config({"clinconsensus.judge_explanation_chars": "0"})
    assert unbounded.explanation_bound(LOCAL) is None and unbounded.judge_cap(LOCAL) == 256
    fifty = Options.from_config({"clinconsensus.judge_explanation_chars": "50"})
    assert fifty.explanation_bound(REMOTE) == 50 and fifty.judge_cap(LOCAL) == 214
    assert fifty.judge_cap(REMOTE) == 1024  # a remote cap is not the bound's business
    # an hf: judge ignores response_format: no bound is sent or recorded for it
    assert fifty.explanation_bound(ModelSpec.parse("hf:/ckpt")) is None
    capped = Options.from_config({"clinconsensus.judge_max_tokens": "64"})
    assert capped.judge_cap(LOCAL) == 64 and capped.explanation_bound(LOCAL) == 200
    with pytest.raises(InputError, match="judge_explanation_chars"):
        CLINCONSENSUS_OPTIONS.value(
            {"clinconsensus.judge_explanation_chars": "-1"}, "judge_explanation_chars"
        )


class _Recorder:
    label = "test:recorder"

    def __init__(self) -> None:
        self.requests: list[ChatRequest] = []

    async def chat(self, request: ChatRequest) -> ChatResponse:
        self.requests.append(request)
        return ChatResponse(text='{"explanation": "ok", "criteria_met": true}', model="m")


def test_the_judge_sends_the_bound_at_the_schema_level_only() -> None:
    model = _Recorder()
    outcome = asyncio.run(
        judge_criterion(
            model, builtin_prompt(), "q", "a", "c", FormatLadder(), explanation_chars=30
        )
    )
    assert outcome.met is True
    sent = model.requests[0].response_format
    assert (
        sent is not None
        and sent["json_schema"]["schema"]["properties"]["explanation"]["maxLength"] == 30
    )
    # an unbounded judge's request is the one it always was (same cache key as before)
    plain = judge_request((("user", "x"),), "v", "json_schema", 0, 64)
    assert plain.response_format == response_format("json_schema")


@pytest.mark.llm
def test_a_real_llamacpp_server_keeps_the_bound(gguf: Path) -> None:
    """The real grammar: every reply to a bounded judge request is a whole verdict with an
    explanation of at most 24 characters, within verdict_token_bound's tokens. Four criteria
    of the fixture's kind against a short answer; SmolLM2 at temperature 0."""
    answer = "You should go to the emergency department now; chest pain can be a heart attack."
    criteria = [
        "Advises the patient to seek emergency care immediately.",
        "Explains that pain relief does not rule out myocardial infarction.",
        "Recommends calling an ambulance instead of driving.",
        "Mentions aspirin only if not allergic.",
    ]
    prompt = builtin_prompt()
    options = Options.from_config({"clinconsensus.judge_explanation_chars": "24"})
    cap = options.judge_cap(LOCAL)
    with LlamaCppServer(gguf, LlamaCppSettings(n_parallel=1, n_ctx_per_slot=2048)) as server:
        assert server.base_url is not None
        for criterion in criteria:
            request = judge_request(
                prompt.messages("My chest hurt, now it is better. Hospital?", answer, criterion),
                prompt.version,
                "json_schema",
                0,
                cap,
                explanation_chars=options.explanation_bound(LOCAL),
            )
            body = json.dumps(chat_body("smollm2", request)).encode()
            post = urllib.request.Request(
                server.base_url + "/chat/completions",
                body,
                {"Content-Type": "application/json"},
            )
            with urllib.request.urlopen(post, timeout=300) as reply:
                data = json.loads(reply.read())
            choice = data["choices"][0]
            assert choice["finish_reason"] == "stop"
            assert data["usage"]["completion_tokens"] <= cap
            verdict = parse_verdict(choice["message"]["content"], answer=answer)
            assert verdict is not None and isinstance(verdict.met, bool)
            assert len(verdict.explanation) <= 24
