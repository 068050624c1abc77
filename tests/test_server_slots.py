"""Serving capacity: clineval sends a local server no more calls than it has slots (the wait
for a slot is not timed), reads what a server says of its capacity (llama.cpp /props, vLLM
/metrics) and warns when --concurrency cannot be served, and `--dry-run` estimates the time
from the server times of stored calls."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from llm_stub_server import StubServer
from test_llm_faults import FAST, ask, make_ctx

from clineval.cli import main
from clineval.models.http_chat import HTTPChatModel
from clineval.models.http_transport import make_transport
from clineval.models.llamacpp_server import LlamaCppServer, LlamaCppSettings
from clineval.models.server_capacity import (
    Capacity,
    capacity_warnings,
    parse_vllm_metrics,
    probe,
)


def test_calls_wait_for_a_slot_untimed(tmp_path: Path) -> None:
    """8 calls, --concurrency 8, 2 slots, 0.5 s per reply and a 0.8 s timeout: never more than
    2 on the wire, and none times out although the last is answered after ~2 s (its wait for
    a slot is not counted). Before, all 8 were sent at once into the server's queue."""
    with StubServer(latency=0.5) as server:
        ctx = make_ctx(tmp_path, f"openai:m@{server.base_url}", concurrency=8)

        async def run() -> None:
            transport = make_transport("aiohttp", None, pool_size=8)
            model = HTTPChatModel(
                label="llamacpp:m",
                model_name="m",
                base_urls=(server.base_url,),
                role="candidate",
                transport=transport,
                store=ctx.store,
                state=ctx.runtime.calls,
                policy=FAST,
                timeout_s=0.8,
                server_slots=2,
            )
            try:
                await asyncio.gather(*(model.chat(ask(i)) for i in range(8)))
            finally:
                await transport.aclose()

        asyncio.run(run())
        stats = server.stats()
    assert stats["requests"] == 8 and stats["max_in_flight"] == 2
    assert ctx.runtime.calls.retries() == 0


def test_capacity_messages() -> None:
    two = {"http://a/v1": Capacity(slots=2, source="/props")}
    (line,) = capacity_warnings(two, concurrency=16, timeout_s=120)
    assert line.startswith("warning: --concurrency 16 but http://a decode(s) 2 request(s) at")
    assert "--concurrency 2" in line and "--timeout 120" in line
    assert capacity_warnings(two, concurrency=2, timeout_s=120) == []
    # one replica that says nothing: its capacity is unknown, so no sum is claimed
    assert capacity_warnings({**two, "http://b/v1": None}, 16, 120) == []
    text = (
        'vllm:cache_config_info{block_size="16",num_gpu_blocks="2048"} 1.0\n'
        'vllm:num_requests_waiting{model_name="m"} 3.0\n'
    )
    vllm = parse_vllm_metrics(text)
    assert vllm == Capacity(waiting=3, kv_tokens=32768, source="/metrics")
    (queued,) = capacity_warnings({"http://v/v1": vllm}, 16, 120)
    assert "already queues 3 request(s)" in queued
    assert parse_vllm_metrics("llamacpp:prompt_tokens_total 5\n") is None


@pytest.mark.llm
def test_a_real_llamacpp_server_is_read_and_the_run_warns(
    gguf: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """llama.cpp's own /props says 2 slots; a run with --concurrency 8 against it as an
    openai: server warns once, naming the flag; then a dry run of more cases estimates the
    time from the stored calls' llama.cpp timings."""
    settings = LlamaCppSettings(n_parallel=2, n_ctx_per_slot=2048)
    with LlamaCppServer(gguf, settings) as server:
        assert server.base_url is not None
        found = asyncio.run(probe(server.base_url, None))
        assert found == Capacity(slots=2, source="/props")
        out = tmp_path / "run"
        argv = ["run", "clinconsensus", "--option", "clinconsensus.cases=fixture"]
        argv += ["--model", f"openai:smollm2@{server.base_url}", "-o", str(out)]
        argv += ["--option", "clinconsensus.max_criteria=1", "--max-tokens", "8"]
        argv += ["--option", "clinconsensus.judge_max_tokens=24", "--concurrency", "8"]
        assert main([*argv, "--limit", "1"]) in (0, 1)  # 1: an unparseable verdict is fine
        warnings = [
            r.getMessage() for r in caplog.records if "--concurrency 8 but" in r.getMessage()
        ]
        assert len(warnings) == 1, warnings  # once a run, though candidate and judge open it
        assert "decode(s) 2 request(s) at once (/props)" in warnings[0]
        capsys.readouterr()
        assert main([*argv, "--limit", "3", "--dry-run"]) == 0
        printed = " ".join(capsys.readouterr().out.split())
        assert "time: ~" in printed and "stored call(s) of the same models" in printed
        assert json.loads((out / "manifest.json").read_text())["status"] in ("finished", "failed")


def test_embedded_server_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    """llama.cpp threads = the cores idle at start (its spinning threads stall on a busy core);
    a call without --max-tokens on the in-process server is capped at a quarter of a slot (an
    unbounded looping answer filled the slot and no longer fit into the judge prompts)."""
    from clineval.models import llamacpp_server as ls
    from clineval.models.spec import ModelSpec

    monkeypatch.setattr(ls, "usable_cores", lambda: 2)
    monkeypatch.setattr(ls, "busy_cores", lambda: 0.1)
    assert ls.default_threads() == 2
    monkeypatch.setattr(ls, "busy_cores", lambda: 0.7)
    assert ls.default_threads() == 1
    monkeypatch.setattr(ls, "busy_cores", lambda: 11.2)
    assert ls.default_threads() == 1
    local = ModelSpec.parse("llamacpp:/m.gguf")
    assert ls.default_max_tokens(local, {}) == 1024
    assert ls.default_max_tokens(local, {"llamacpp.n_ctx": "2048"}) == 512
    assert ls.default_max_tokens(ModelSpec.parse("openai:m@http://127.0.0.1:9/v1"), {}) is None
    # a verdict is short: the in-process judge's cap is room for a 200-character explanation
    # (3 x 200 + 64; tests/test_judge_explanation_bound.py) unless the option says otherwise
    from clineval.benchmarks.clinconsensus.common import Options

    remote = ModelSpec.parse("openai:m")
    assert Options.from_config({}).judge_cap(local) == 664
    assert Options.from_config({}).judge_cap(remote) == 1024
    set_to = Options.from_config({"clinconsensus.judge_max_tokens": "64"})
    assert set_to.judge_cap(local) == set_to.judge_cap(remote) == 64


def test_busy_cores_sees_a_spinning_process_now() -> None:
    """A child spinning on one core counts as about one busy core at once (the 1-minute load
    average would take a minute to say so, and as long to forget it: a second run started
    right after a first took 1 thread of 2 on an idle machine). Other work on the machine can
    only add to the figure, so the lower bound holds on a shared machine too."""
    import subprocess
    import sys

    from clineval.models.llamacpp_server import busy_cores, usable_cores

    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        busy = busy_cores(sample_s=1.0)
    finally:
        spinner.kill()
        spinner.wait()
    assert 0.7 <= busy <= usable_cores() + 0.01
