"""Extra request fields (`--option llm.extra_body` / `llm.judge_extra_body`): they reach the
server (both HTTP transports), they are part of the call's cache key, a request without them
keeps the key it always had (old run stores still resume), bad values are one line, and for an
hf:PATH model their chat_template_kwargs reach the chat template.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from openai_recorder import RecordingServer

from clineval.benchmarks.base import RunContext
from clineval.cli import main
from clineval.config import RunConfig
from clineval.errors import InputError
from clineval.models.extra_body import extra_body_for, parse_extra_body
from clineval.models.llm import open_chat_model
from clineval.models.llm_base import ChatRequest, request_key
from clineval.models.spec import ModelSpec
from clineval.plan import CallPlan
from clineval.store import RunStore

THINK_OFF = '{"chat_template_kwargs": {"enable_thinking": false}}'


# ---- the cache key --------------------------------------------------------------------------
def test_keys_of_requests_without_extra_fields_are_unchanged() -> None:
    """These keys were computed by the code before extra_body existed: a run store written
    then is still found by a resumed run."""
    plain = ChatRequest(messages=(("user", "你好"),))
    full = ChatRequest(
        messages=(("system", "s"), ("user", "q")),
        temperature=0.7,
        max_tokens=16,
        seed=3,
        response_format={"type": "json_object"},
        template_version="clinconsensus-judge-v1",
    )
    assert request_key(plain, "openai:m")[1] == (
        "3d6aa3c6fd9a5853c1bfa64bedd02163a51a8fe1f89198852ba836af453f4aef"
    )
    assert request_key(full, "hf:/m")[1] == (
        "77e0a4fc9c34215cedff49056714b46608ee007e4000cc62706b005868764ea1"
    )
    assert "extra_body" not in request_key(plain, "openai:m")[0]


def test_extra_fields_are_part_of_the_key() -> None:
    base = ChatRequest(messages=(("user", "q"),))
    keys = {
        request_key(base, "openai:m")[1],
        request_key(ChatRequest(messages=base.messages, extra_body={"top_k": 20}), "openai:m")[1],
        request_key(ChatRequest(messages=base.messages, extra_body={"top_k": 40}), "openai:m")[1],
    }
    assert len(keys) == 3


def test_roles_and_merging() -> None:
    options = {"llm.extra_body": '{"top_k": 20, "min_p": 0.1}', "llm.judge_extra_body": THINK_OFF}
    assert extra_body_for(options, "candidate") == {"top_k": 20, "min_p": 0.1}
    assert extra_body_for(options, "judge") == {
        "top_k": 20,
        "min_p": 0.1,
        "chat_template_kwargs": {"enable_thinking": False},
    }
    assert extra_body_for({}, "judge") is None


# ---- bad values: one line naming the option, before anything is written ---------------------
@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("{top_k: 20}", "not JSON"),
        ("[1, 2]", "must be a non-empty JSON object"),
        ("{}", "must be a non-empty JSON object"),
        ('{"temperature": 0.5}', "temperature: set by clineval from its own flags"),
        ('{"api_key": "x"}', "api_key: looks like a credential"),
        ('{"chat_template_kwargs": true}', "chat_template_kwargs must be a JSON object"),
    ],
)
def test_bad_values_are_one_line(tmp_path: Path, capsys, value: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_extra_body(value)
    out = tmp_path / "run"
    argv = ["run", "clinconsensus", "--model", "openai:m@http://127.0.0.1:9/v1"]
    argv += ["--option", "clinconsensus.cases=fixture", "--option", f"llm.extra_body={value}"]
    assert main([*argv, "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --option llm.extra_body") and message in err, err
    assert "\n" not in err and not out.exists()


# ---- the fields reach the server; the key makes another setting another call ---------------
def _ctx(tmp_path: Path, model: str, options: dict[str, str]) -> RunContext:
    config = RunConfig(tasks=["clinconsensus"], model=model, options=options)
    return RunContext(
        config=config,
        store=RunStore.in_dir(tmp_path),
        output_dir=tmp_path,
        data_root=None,
        model=ModelSpec.parse(model),
    )


@pytest.mark.parametrize("transport", ["aiohttp", "openai"])
def test_fields_reach_the_server_and_key_the_cache(tmp_path: Path, transport: str) -> None:
    request = ChatRequest(messages=(("user", "q"),), max_tokens=8, seed=1)

    async def ask(ctx: RunContext, role: str) -> bool:
        async with open_chat_model(ctx.model, ctx.runtime, role) as model:
            return (await model.chat(request)).cached

    with RecordingServer(lambda body: "ok") as server:
        model = f"openai:m@{server.base_url}"
        options = {
            "llm.transport": transport,
            "llm.extra_body": '{"top_k": 20}',
            "llm.judge_extra_body": THINK_OFF,
        }
        ctx = _ctx(tmp_path, model, options)
        assert asyncio.run(ask(ctx, "judge")) is False
        assert asyncio.run(ask(ctx, "judge")) is True  # the same fields: from the store
        assert asyncio.run(ask(ctx, "candidate")) is False  # other fields: another call
        changed = _ctx(tmp_path, model, {**options, "llm.extra_body": '{"top_k": 40}'})
        assert asyncio.run(ask(changed, "judge")) is False
        plain = _ctx(tmp_path, model, {"llm.transport": transport})
        assert asyncio.run(ask(plain, "judge")) is False
        bodies = list(server.bodies)
    # --dry-run keys a call as its model sends it: with the role's extra fields
    label = ModelSpec.parse(model).label
    assert CallPlan(ctx.store, options).add("t", "judge", label, request) is not None
    assert CallPlan(ctx.store, changed.config.options).add("t", "judge", label, request)
    del options["llm.judge_extra_body"]  # the candidate's fields only: its call is stored too
    assert CallPlan(ctx.store, options).add("t", "judge", label, request) is not None
    options["llm.extra_body"] = '{"top_k": 30}'  # never sent
    assert CallPlan(ctx.store, options).add("t", "judge", label, request) is None
    assert len(bodies) == 4
    judge, candidate, changed_body, plain_body = bodies
    assert judge["top_k"] == 20 and judge["chat_template_kwargs"] == {"enable_thinking": False}
    assert judge["messages"] == [{"role": "user", "content": "q"}] and judge["max_tokens"] == 8
    assert candidate["top_k"] == 20 and "chat_template_kwargs" not in candidate
    assert changed_body["top_k"] == 40
    assert "top_k" not in plain_body and "chat_template_kwargs" not in plain_body


def test_a_run_sends_the_fields_to_the_judge_only(tmp_path: Path, capsys) -> None:
    def reply(body: dict[str, Any]) -> str:
        if "response_format" in body:
            return '{"explanation": "ok", "criteria_met": true}'
        return "fixture answer"

    out = tmp_path / "run"
    with RecordingServer(reply) as server:
        argv = ["run", "clinconsensus", "--model", f"openai:m@{server.base_url}"]
        argv += ["--option", "clinconsensus.cases=fixture", "--limit", "1"]
        argv += ["--option", "clinconsensus.max_criteria=3", "--option", "clinconsensus.k=2"]
        argv += ["--option", f"llm.judge_extra_body={THINK_OFF}", "-o", str(out)]
        assert main(argv) == 0, capsys.readouterr().err
        bodies = list(server.bodies)
    judged = [b for b in bodies if "response_format" in b]
    answered = [b for b in bodies if "response_format" not in b]
    assert len(judged) == 3 and len(answered) == 1
    assert all(b["chat_template_kwargs"] == {"enable_thinking": False} for b in judged)
    assert "chat_template_kwargs" not in answered[0]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["config"]["options"]["llm.judge_extra_body"] == THINK_OFF
    # Stored verdicts are reused by key on resume: other extra fields would mix the answers to
    # two different requests in one run, so the resume is refused (nothing is sent).
    other = [a if a != f"llm.judge_extra_body={THINK_OFF}" else 'llm.judge_extra_body={"k": 5}'
             for a in argv]  # fmt: skip
    with RecordingServer(reply) as server:
        assert main(other) == 2
        assert "llm.judge_extra_body" in capsys.readouterr().err
        assert list(server.bodies) == []


# ---- hf:PATH: chat_template_kwargs reach apply_chat_template -------------------------------
THINKING_TEMPLATE = (
    "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<assistant>"
    "{% if enable_thinking is defined and enable_thinking is false %}<think></think>{% endif %}"
    "{% endif %}"
)


def test_hf_chat_template_kwargs(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from test_hf_chat import build_chat_checkpoint

    checkpoint = build_chat_checkpoint(tmp_path / "tiny", THINKING_TEMPLATE)
    request = ChatRequest(messages=(("user", "问"),), max_tokens=2, seed=0)

    async def prompt_tokens(options: dict[str, str], role: str) -> int:
        ctx = _ctx(tmp_path / "run", f"hf:{checkpoint}", options)
        async with open_chat_model(ctx.model, ctx.runtime, role) as model:
            return int((await model.chat(request)).usage["prompt_tokens"])

    plain = asyncio.run(prompt_tokens({}, "judge"))
    off = asyncio.run(prompt_tokens({"llm.judge_extra_body": THINK_OFF}, "judge"))
    assert off == plain + len("<think></think>")  # one byte-level token per character
    assert asyncio.run(prompt_tokens({"llm.judge_extra_body": THINK_OFF}, "candidate")) == plain
    with pytest.raises(InputError, match="takes only chat_template_kwargs"):
        asyncio.run(prompt_tokens({"llm.extra_body": '{"top_k": 20}'}, "judge"))
    with pytest.raises(InputError, match="tokenize are set by clineval"):
        bad = '{"chat_template_kwargs": {"tokenize": true}}'
        asyncio.run(prompt_tokens({"llm.extra_body": bad}, "judge"))
