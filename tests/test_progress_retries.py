"""The progress line's retries and manifest.json's are one counter (RunCallState).

Before, the line counted retries a task reported itself (none did for HTTP retries) and said
"retries 0" beside a manifest that counted 48.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_inprocess import clineval_inprocess
from llm_stub_server import StubServer

from clineval import progress
from clineval.concurrency import RunCallState

FAILURES = 4  # 503s before the stub answers


@pytest.fixture(scope="module")
def stub() -> Iterator[StubServer]:
    with StubServer(latency=0.0) as server:
        yield server


def test_progress_reads_retries_from_the_call_counters() -> None:
    calls = RunCallState(limit=2)
    calls.model_stats("m (judge)").retries = 5  # before the display opened: not this task's
    with progress.task_progress("t", total=2, calls=calls) as tp:
        calls.model_stats("m (judge)").retries += 2
        calls.model_stats("m (candidate)").retries += 1
        tp.advance(2)
    assert progress.counters_of(tp)["retries"] == 3
    assert "retries 3" in tp.summary()
    with pytest.raises(ValueError, match="read from the run's call counters"):
        tp.count("retries")  # a second count of the same thing is refused


def test_the_log_and_manifest_show_the_same_retries(tmp_path: Path, stub: StubServer) -> None:
    stub.reset()
    stub.script([{"do": "status", "status": 503}] * FAILURES)
    out = tmp_path / "run"
    command = [
        "run",
        "clinconsensus",
        "--model",
        f"openai:cand@{stub.base_url}",
        "--option",
        "clinconsensus.cases=fixture",
        "--option",
        "clinconsensus.max_criteria=2",
        "--limit",
        "1",
        "--concurrency",
        "1",
        "--max-retries",
        str(FAILURES),
        "--option",
        "llm.backoff_base_s=0.01",
        "--option",
        "llm.backoff_max_s=0.02",
        "--output-dir",
        str(out),
    ]
    # in process: the line and the manifest are what is compared (stderr is not a terminal
    # here either, so progress is time-stamped lines)
    done = clineval_inprocess(*command, quiet=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert stub.stats()["by_behaviour"] == {"status": FAILURES, "ok": 3}  # 1 answer, 2 verdicts
    manifest = json.loads((out / "manifest.json").read_text("utf-8"))
    assert manifest["llm_calls"]["totals"]["retries"] == FAILURES
    summaries = re.findall(
        r"^\d\d:\d\d:\d\d clinconsensus: done at 3/3 .*$", done.stderr, flags=re.MULTILINE
    )
    assert len(summaries) == 1, done.stderr
    assert f"retries {FAILURES} " in summaries[0]
    assert manifest["tasks"]["clinconsensus"]["progress"]["retries"] == FAILURES
