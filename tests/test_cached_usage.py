"""Cached prompt tokens: kept per call, summed per model in manifest.json["llm_usage"], shown in
the report, priced with `cached_input_per_1m`; `--dry-run` counts shared-prefix tokens. Runs
go through `clineval.cli.main` against the stub server playing a prompt cache."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from llm_stub_server import StubServer

from clineval.benchmarks.clinconsensus.cases import fixture_path
from clineval.cli import main
from clineval.config import RunConfig
from clineval.errors import InputError
from clineval.models.llm_base import ChatRequest
from clineval.models.usage import Price, load_price_table, summarize_usage
from clineval.plan import CallPlan, common_prefix_length, estimate_tokens, plan_summary
from clineval.planner import plan
from clineval.report.html import write_report
from clineval.store import RunStore

FIXTURE = str(fixture_path())


@pytest.fixture(scope="module")
def stub() -> Iterator[StubServer]:
    with StubServer() as server:
        yield server


@pytest.fixture(autouse=True)
def _caching(stub: StubServer) -> None:
    stub.reset()
    stub.script([], default={"do": "ok", "prefix_cache": True})


def _prices(tmp_path: Path, entry: dict[str, float]) -> Path:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"stub-judge": entry}))
    return path


def test_price_table_prices_cached_tokens(tmp_path: Path) -> None:
    table = load_price_table(
        _prices(tmp_path, {"input_per_1m": 2.0, "output_per_1m": 8.0, "cached_input_per_1m": 0.5})
    )
    price = table["stub-judge"]
    assert price == Price(2.0, 8.0, 0.5)
    # 1M prompt tokens of which 600k cached, 100k completion: 0.4*2 + 0.6*0.5 + 0.1*8
    assert price.cost(1_000_000, 100_000, 600_000) == pytest.approx(1.9)
    assert Price(2.0, 8.0).cost(1_000_000, 0, 600_000) == pytest.approx(2.0)  # no cached price


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"input_per_1m": 1, "output_per_1m": 1, "cached_input_per_1m": -1}, "must be >= 0"),
        ({"input_per_1m": 1, "output_per_1m": 1, "cached_input_per_1m": "0.1"}, "must be a num"),
        ({"input_per_1m": 1, "output_per_1m": 1, "cache_input_per_1m": 0.1}, "unknown price"),
    ],
)
def test_bad_cached_price_is_one_line_naming_the_file(
    tmp_path: Path, entry: dict[str, object], message: str
) -> None:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"m": entry}))
    with pytest.raises(InputError, match=message) as info:
        load_price_table(path)
    assert info.value.path == str(path)


def test_summary_counts_cached_tokens_and_their_share() -> None:
    calls = [
        ("openai:j", {"prompt_tokens": 1000, "completion_tokens": 10, "cached_tokens": 900}),
        ("openai:j", {"prompt_tokens": 1000, "completion_tokens": 10}),  # no cache count
        ("openai:j", None),
    ]
    summary = summarize_usage(calls, {"j": Price(1.0, 2.0, 0.1)})
    row = summary["models"]["openai:j"]
    assert row["cached_prompt_tokens"] == 900 and row["calls_reporting_cache"] == 1
    assert row["cached_share"] == 0.45 and summary["cached_share"] == 0.45
    assert row["estimated_cost"] == pytest.approx((1100 * 1.0 + 900 * 0.1 + 20 * 2.0) / 1e6)


def _run(stub: StubServer, out: Path, *extra: str) -> int:
    return main(
        [
            "run",
            "clinconsensus",
            "--model",
            f"openai:stub-candidate@{stub.base_url}",
            "--judge",
            f"openai:stub-judge@{stub.base_url}",
            "--cases",
            FIXTURE,
            "--limit",
            "3",
            "--option",
            "clinconsensus.max_criteria=6",
            "--output-dir",
            str(out),
            *extra,
        ]
    )


# A smoke run judged on 2 criteria: the report must not slice CACS@7 (null for k > N); it
# divided by zero there (a RuntimeWarning, now an error in this test).
@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_manifest_and_report_show_cached_prompt_tokens(tmp_path: Path, stub: StubServer) -> None:
    prices = _prices(
        tmp_path, {"input_per_1m": 2.0, "output_per_1m": 8.0, "cached_input_per_1m": 0.5}
    )
    out = tmp_path / "run"
    assert _run(stub, out, "--price-table", str(prices)) == 0
    usage = json.loads((out / "manifest.json").read_text())["llm_usage"]
    judge = usage["models"]["openai:stub-judge"]
    # The stub served each judge prompt's start from its cache (the rules; within a case also
    # the query and answer) and said so in usage.prompt_tokens_details.cached_tokens.
    with RunStore.in_dir(out) as store:
        stored = [u for m, u in store.call_usage() if m == "openai:stub-judge"]
    assert all(isinstance(u["cached_tokens"], int) for u in stored)
    assert judge["cached_prompt_tokens"] == sum(u["cached_tokens"] for u in stored) > 0
    assert judge["calls_reporting_cache"] == judge["calls"] == 18
    assert judge["cached_share"] == round(judge["cached_prompt_tokens"] / judge["prompt_tokens"], 4)
    assert 0.5 < judge["cached_share"] < 1
    assert stub.stats()["prefill_tokens"] == (
        usage["prompt_tokens"] - usage["cached_prompt_tokens"]
    )
    uncached = judge["prompt_tokens"] - judge["cached_prompt_tokens"]
    expected = uncached * 2.0 + judge["cached_prompt_tokens"] * 0.5
    expected += judge["completion_tokens"] * 8.0
    assert judge["estimated_cost"] == round(expected / 1e6, 6)
    html = write_report(out, out / "report.html").read_text()
    assert 'id="llm-usage"' in html and "cached prompt tokens" in html
    assert f"<td>{judge['cached_prompt_tokens']:,}</td>" in html
    assert f"<td>{judge['cached_share']:.1%}</td>" in html


def test_dry_run_counts_shared_prefix_tokens(tmp_path: Path, stub: StubServer) -> None:
    prices = _prices(
        tmp_path, {"input_per_1m": 2.0, "output_per_1m": 8.0, "cached_input_per_1m": 0.5}
    )
    config = RunConfig.checked(
        tasks=["clinconsensus"],
        model=f"openai:stub-candidate@{stub.base_url}",
        judges=[f"openai:stub-judge@{stub.base_url}"],
        limit=3,
        max_tokens=100,
        price_table=str(prices),
        options={"clinconsensus.max_criteria": "6", "clinconsensus.cases": FIXTURE},
    )
    rows = {r["role"]: r for r in plan(config, tmp_path / "planned")["rows"]}
    assert rows["candidate"]["shared_prefix_tokens"] == 0  # no prefix key
    judge = rows["judge"]
    # answers not made yet: each case's later 5 calls share the prompt up to the criterion,
    # with the answer (counted at --max-tokens 100) inside the shared part
    assert 3 * 5 * 100 < judge["shared_prefix_tokens"] < judge["prompt_tokens"]
    assert judge["cost_low"] < judge["cost_high"]
    assert (
        plan(config, tmp_path / "planned")["shared_prefix_tokens"] == judge["shared_prefix_tokens"]
    )


def test_shared_prefix_tokens_are_the_common_start_of_a_keys_prompts(tmp_path: Path) -> None:
    shared = "规则：" * 50 + "<query>胸痛</query> answer " * 20
    first = ChatRequest(messages=(("user", shared + "<criterion>提及心电图"),), prefix_key="k")
    second = ChatRequest(messages=(("user", shared + "<criterion>建议急诊"),), prefix_key="k")
    other = ChatRequest(messages=(("user", shared + "<criterion>x"),), prefix_key="other")
    keyless = ChatRequest(messages=(("user", shared + "<criterion>y"),))
    with RunStore.in_dir(tmp_path) as store:
        calls = CallPlan(store)
        for request in (first, second, other, keyless):
            calls.add("t", "judge", "openai:j", request)
        (row,) = calls.rows()
    common = shared + "<criterion>"
    assert common_prefix_length(first.messages[0][1], second.messages[0][1]) == len(common)
    # one later call of key "k" shares the prompt up to its criterion; "other" and the keyless
    # call share nothing they could reuse
    assert row.shared_prefix_tokens == estimate_tokens(common) == 190 + (len(common) - 190 + 3) // 4
    priced = plan_summary([row], {"openai:j": Price(2.0, 8.0, 0.5)})["rows"][0]
    # the low end serves the shared starts from a prompt cache: the fewest tokens of them
    assert row.cacheable_tokens_low > 0
    assert priced["cost_low"] == pytest.approx(
        Price(2.0, 8.0, 0.5).cost(row.prompt_tokens_low, row.to_send, row.cacheable_tokens_low)
    )
    assert priced["cost_low"] < Price(2.0, 8.0).cost(row.prompt_tokens_low, row.to_send)


@pytest.mark.llm
@pytest.mark.slow
def test_a_real_llamacpp_server_reports_its_cached_prompt_tokens(
    tmp_path: Path, gguf: Path
) -> None:
    out = tmp_path / "run"
    argv = ["run", "clinconsensus", "--model", f"llamacpp:{gguf}", "--cases", FIXTURE]
    argv += ["--limit", "1", "--max-tokens", "16", "--concurrency", "1"]
    for option in (
        "clinconsensus.max_criteria=3",
        "clinconsensus.judge_max_tokens=8",
        "clinconsensus.judge_retries=0",
        "llamacpp.n_parallel=1",
    ):
        argv += ["--option", option]
    assert main([*argv, "--max-judge-error-rate", "1", "--output-dir", str(out)]) in (0, 1)
    with RunStore.in_dir(out) as store:
        judged = [c for c in store.iter_calls() if c["request"]["response_format"] is not None]
    assert len(judged) == 3
    # one slot, one call at a time: the 2nd and 3rd judge prompts reuse the 1st's prefix
    later = sorted((c["usage"] for c in judged), key=lambda u: u["cached_tokens"])[1:]
    for usage in later:
        assert usage["cached_tokens"] == usage["timings"]["cache_n"] > 0.5 * usage["prompt_tokens"]
        assert usage["timings"]["prompt_n"] == usage["prompt_tokens"] - usage["cached_tokens"]
    row = json.loads((out / "manifest.json").read_text())["llm_usage"]["models"][f"llamacpp:{gguf}"]
    assert row["cached_prompt_tokens"] >= sum(u["cached_tokens"] for u in later)
    assert row["calls_reporting_cache"] == row["calls"] == 4  # the answer and 3 judge calls
