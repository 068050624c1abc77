"""TCM-SD zero-shot over HTTP against the scripted stub server, and the real llama.cpp server."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from llm_stub_server import StubServer

from clineval.benchmarks.tcm_sd.synthetic import write_synthetic
from clineval.cli import main
from clineval.config import RunConfig
from clineval.store import RunStore


@pytest.fixture(scope="module")
def fixture_root(data_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not (data_root / "tcm-sd" / "zy-bert" / "syndrome_vocab.txt").is_file():
        pytest.skip("TCM-SD label files not available")
    out = tmp_path_factory.mktemp("tcm-llm-synthetic")
    write_synthetic(out, seed=3, data_dir=data_root, scale=0.06)
    return out


@pytest.fixture(scope="module")
def stub() -> Any:
    with StubServer(latency=0.0) as server:
        yield server


def _argv(stub: Any, fixture_root: Path, out: Path, limit: int) -> list[str]:
    argv = ["run", "tcm-sd", "--model", f"openai:stub@{stub.base_url}", "--output-dir", str(out)]
    return [*argv, "--data-dir", str(fixture_root), "--limit", str(limit), "--max-retries", "0"]


def _results(out: Path) -> dict[str, Any]:
    return json.loads((out / "results.json").read_text())["tcm-sd"]


@pytest.mark.slow
def test_replies_are_parsed_stored_and_never_asked_twice(
    tmp_path: Path, fixture_root: Path, stub: Any
) -> None:
    stub.reset()
    replies = ["不是气虚血瘀证，而是气滞血瘀证", "我无法判断。", "风痰阻络证"]
    stub.script(
        [{"do": "ok", "content": r} for r in replies],
        default={"do": "ok", "content": "答案：气虚血瘀证"},
    )
    out = tmp_path / "run"
    assert main(_argv(stub, fixture_root, out, 6)) == 0
    assert stub.stats()["requests"] == 6
    with RunStore.in_dir(out) as store:
        records = store.records("tcm-sd", "prediction")
        calls = store.iter_calls()
    statuses = sorted(r["parse"] for r in records.values())
    assert statuses == ["exact", "exact", "exact", "invalid", "invalid", "normalized"]
    assert {r["raw_output"] for r in records.values()} == {*replies, "答案：气虚血瘀证"}
    normalized = [r for r in records.values() if r["parse"] == "normalized"]
    assert normalized[0]["pred"] == "风痰瘀阻证"
    # the prompt lists the 148 labels and the record's chief complaint
    prompt = calls[0]["request"]["messages"][-1][1]
    assert "气虚不摄证" in prompt and "气虚血溢证" in prompt and "主诉：" in prompt
    res = _results(out)
    assert res["n"] == 6 and res["n_invalid"] == 2 and res["invalid_rate"] == pytest.approx(2 / 6)
    # a reply mapped through the normalization table is counted, not silent
    assert res["parse_status"] == {"exact": 3, "invalid": 2, "normalized": 1}
    samples = [json.loads(x) for x in (out / "samples.jsonl").read_text().splitlines()]
    assert all("raw_output" in s for s in samples)
    assert sorted(s["parse"] for s in samples) == statuses
    # rerun: everything comes from the store, the stub sees no request
    assert main(_argv(stub, fixture_root, out, 6)) == 0
    assert stub.stats()["requests"] == 6
    assert _results(out) == res


@pytest.mark.slow
def test_failed_calls_stay_missing_then_resume(
    tmp_path: Path, fixture_root: Path, stub: Any
) -> None:
    stub.reset()
    stub.script([], default={"do": "status", "status": 500})
    out = tmp_path / "run"
    assert main(_argv(stub, fixture_root, out, 3)) == 1  # results written, run incomplete
    res = _results(out)
    assert res["n_missing"] == 3 and res["invalid_rate"] == 1.0
    notes = json.loads((out / "manifest.json").read_text())["tasks"]["tcm-sd"]["llm"]
    assert notes["errors_server"] == 3
    stub.script([], default={"do": "ok", "content": "气虚血瘀证"})
    assert main(_argv(stub, fixture_root, out, 3)) == 0
    assert _results(out)["n_missing"] == 0


@pytest.mark.llm
@pytest.mark.slow
def test_llamacpp_zero_shot_end_to_end(tmp_path: Path, fixture_root: Path, gguf: Path) -> None:
    out = tmp_path / "run"
    argv = ["run", "tcm-sd", "--model", f"llamacpp:{gguf}", "--output-dir", str(out)]
    argv += ["--data-dir", str(fixture_root), "--limit", "1", "--max-tokens", "16"]
    assert main(argv) == 0
    res = _results(out)
    assert res["n"] == 1 and res["n_missing"] == 0
    with RunStore.in_dir(out) as store:
        (record,) = store.records("tcm-sd", "prediction").values()
    assert isinstance(record["raw_output"], str)
    assert record["parse"] in ("exact", "normalized", "found", "invalid")


def test_dry_run_plans_exactly_the_calls_the_run_makes(
    tmp_path: Path, fixture_root: Path, stub: Any
) -> None:
    from clineval.planner import plan

    def planned(out: Path) -> dict[str, Any]:
        config = RunConfig(
            tasks=["tcm-sd"],
            model=f"openai:stub@{stub.base_url}",
            data_dir=str(fixture_root),
            limit=4,
            max_retries=0,
        )
        (row,) = plan(config, out)["rows"]
        return dict(row)

    stub.reset()
    stub.script([], default={"do": "ok", "content": "气虚血瘀证"})
    out = tmp_path / "run"
    before = planned(out)
    assert (before["to_send"], before["stored"], before["role"]) == (4, 0, "candidate")
    assert before["prompt_tokens"] > 4 * 148 * 3  # every prompt lists the 148 labels
    assert not out.exists() and stub.stats()["requests"] == 0
    assert main(_argv(stub, fixture_root, out, 4)) == 0
    assert stub.stats()["requests"] == 4
    # the run sent the planned requests: each is now found in the store by its key
    with sqlite3.connect(out / "store.sqlite") as conn:
        conn.execute("DELETE FROM records WHERE kind = 'prediction'")
    after = planned(out)
    assert (after["to_send"], after["stored"], after["prompt_tokens"]) == (0, 4, 0)
