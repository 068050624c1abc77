"""Batch mode (clineval.models.batch): ClinConsensus through the Batch API of a local stub
server (tests/llm_stub_server.py: /v1/files + /v1/batches, statuses that change as the client
polls, scripted partial failures, expiry, cancellation, failure) and through request / output
files in vllm run-batch's format. The same stub answers synchronous calls with the same
replies, so a batch run and a synchronous run must give equal results."""

from __future__ import annotations

import json
import logging
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_inprocess import clineval_inprocess
from llm_stub_server import StubServer, completion, request_key
from test_unwritable import PLACES

from clineval.benchmarks.clinconsensus.cases import fixture_path
from clineval.cli import main
from clineval.store import RunStore

FIXTURE = str(fixture_path())
FAST_POLL = ["--option", "llm.batch_poll_s=0.01", "--option", "llm.batch_poll_max_s=0.05"]
N_CASES, N_CRITERIA = 12, 5


@pytest.fixture(scope="module")
def stub() -> Iterator[StubServer]:
    with StubServer() as server:
        yield server


@pytest.fixture(autouse=True)
def _fresh(stub: StubServer) -> None:
    stub.reset()


def _argv(stub: StubServer, out: Path, *extra: str) -> list[str]:
    # a key given twice is refused: the default criteria only when `extra` sets none
    criteria = f"clinconsensus.max_criteria={N_CRITERIA}"
    if any(item.startswith("clinconsensus.max_criteria=") for item in extra):
        criteria = next(item for item in extra if item.startswith("clinconsensus.max_criteria="))
        at = extra.index(criteria)
        extra = extra[: at - 1] + extra[at + 1 :]
    return [
        "--quiet",
        "run",
        "clinconsensus",
        "--model",
        f"openai:cand@{stub.base_url}",
        "--judge",
        f"openai:judge@{stub.base_url}",
        "--cases",
        FIXTURE,
        "--option",
        criteria,
        "--max-retries",
        "2",
        "--output-dir",
        str(out),
        *extra,
    ]


def _run(stub: StubServer, out: Path, *extra: str) -> int:
    return main(_argv(stub, out, *extra))


def _metrics(out: Path) -> dict[str, Any]:
    metrics = json.loads((out / "results.json").read_text())["clinconsensus"]
    metrics.pop("usage")  # how the calls were made (batch_calls) differs, by design
    return dict(metrics)


def _samples(out: Path) -> list[str]:
    return sorted((out / "samples.jsonl").read_text().splitlines())


def _answers(out: Path) -> dict[str, str]:
    with RunStore.in_dir(out) as store:
        return {c["key"]: c["response"]["text"] for c in store.iter_calls()}


@pytest.fixture(scope="module")
def sync_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The synchronous run every batch run is compared with."""
    out = tmp_path_factory.mktemp("sync") / "run"
    with StubServer() as server:
        assert _run(server, out) == 0
        assert server.stats()["requests"] == N_CASES * (1 + N_CRITERIA)
    return out


def _same_as_sync(out: Path, sync_run: Path) -> None:
    assert _metrics(out) == _metrics(sync_run)
    assert _samples(out) == _samples(sync_run)
    assert _answers(out) == _answers(sync_run)  # the same calls, keys and replies


# ---- the server round trip ----------------------------------------------------------------
def test_a_batch_run_equals_the_synchronous_run_in_two_rounds(
    tmp_path: Path, stub: StubServer, sync_run: Path
) -> None:
    out = tmp_path / "run"
    assert _run(stub, out, "--batch", *FAST_POLL) == 0
    stats = stub.stats()
    assert stats["requests"] == 0  # no synchronous call
    assert stats["batches"] == 2 and stats["uploads"] == 2  # answers, then judge calls
    assert len(stats["batch_lines_by_key"]) == N_CASES * (1 + N_CRITERIA)
    assert set(stats["batch_lines_by_key"].values()) == {1}
    _same_as_sync(out, sync_run)
    usage = json.loads((out / "manifest.json").read_text())["llm_usage"]
    assert usage["batch_calls"] == usage["calls"] == N_CASES * (1 + N_CRITERIA)
    # a rerun is answered by the store: nothing submitted again
    stub.reset()
    assert _run(stub, out, "--batch", *FAST_POLL) == 0
    assert stub.stats()["batches"] == 0 and stub.stats()["requests"] == 0


def test_the_body_of_a_batch_line_is_the_synchronous_request(
    tmp_path: Path, stub: StubServer
) -> None:
    out = tmp_path / "files"
    assert _run(stub, out / "run", "--batch-file-out", str(out / "req")) == 0
    line = json.loads((out / "req").glob("*.jsonl").__next__().read_text().splitlines()[0])
    assert line["method"] == "POST" and line["url"] == "/v1/chat/completions"
    stub.reset()
    assert _run(stub, tmp_path / "sync", "--option", "clinconsensus.max_criteria=1") == 0
    # the stub keys a request by its body: the batch body is one it was sent synchronously
    assert request_key(line["body"]) in stub.stats()["by_key"]


def test_limits_split_a_round_and_dry_run_counts_batches_and_lines(
    tmp_path: Path, stub: StubServer, sync_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    limit = ["--option", "llm.batch_max_lines=5"]
    assert _run(stub, out, "--batch", "--dry-run", *limit) == 0
    printed = " ".join(capsys.readouterr().out.split())
    assert "candidate openai:cand: 12 request lines in 3 batch(es)" in printed
    assert "judge openai:judge: 60 request lines in 12 batch(es)" in printed
    assert stub.stats()["batches"] == 0 and not out.exists()
    assert _run(stub, out, "--batch", *FAST_POLL, *limit) == 0
    assert stub.stats()["batches"] == 3 + 12
    _same_as_sync(out, sync_run)


@pytest.mark.parametrize(
    ("script", "batches"),
    [
        ([{"end": "completed"}, {"end": "completed", "error_every": 3}], 3),  # 500 lines
        ([{"end": "expired", "answered": 0.5}], 3),  # half answered, the rest sent again
        ([{"end": "cancelled", "answered": 0.25}], 3),
        ([{"end": "failed"}], 3),  # nothing answered: all sent again
        ([{"end": "completed", "steps": 6}], 2),  # a long in_progress
        ([{"end": "completed", "lose_output": True}], 3),  # its output file unknown: resent
        # a download cut halfway is read again from the start: no line counted twice
        ([{"end": "completed", "cut_output_once": True}], 2),
    ],
    ids=["error-lines", "expired", "cancelled", "failed", "slow", "output-lost", "output-cut"],
)
def test_partial_failures_are_sent_again_and_the_results_stay_equal(
    tmp_path: Path,
    stub: StubServer,
    sync_run: Path,
    script: list[dict[str, Any]],
    batches: int,
) -> None:
    stub.batch_script(script, default={"end": "completed"})
    out = tmp_path / "run"
    assert _run(stub, out, "--batch", *FAST_POLL) == 0
    stats = stub.stats()
    assert stats["batches"] == batches and stats["requests"] == 0
    _same_as_sync(out, sync_run)
    calls = json.loads((out / "manifest.json").read_text())["llm_calls"]["totals"]
    if script[-1].get("error_every"):
        assert calls["retries"] == N_CASES * N_CRITERIA // 3  # a failed attempt each
    assert stats["cut_downloads"] == (1 if script[-1].get("cut_output_once") else 0)


def test_resending_is_bounded_then_the_calls_are_errors(tmp_path: Path, stub: StubServer) -> None:
    stub.batch_script([], default={"end": "failed"})
    out = tmp_path / "run"
    code = _run(stub, out, "--batch", *FAST_POLL, "--option", "llm.batch_resubmits=1")
    assert code == 1  # the candidate errors fail the task; nothing else was asked
    assert stub.stats()["batches"] == 2  # the first batch and one resubmission, no more
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["llm_calls"]["by_model"]["openai:cand (candidate)"]["errors"] == {
        "server": N_CASES
    }


def test_a_non_retryable_error_line_is_a_call_error_at_once(
    tmp_path: Path, stub: StubServer
) -> None:
    stub.batch_script([{"end": "completed", "error_every": 4, "error_status": 400}])
    out = tmp_path / "run"
    assert _run(stub, out, "--batch", *FAST_POLL) == 1  # 3 candidate errors
    by_model = json.loads((out / "manifest.json").read_text())["llm_calls"]["by_model"]
    assert by_model["openai:cand (candidate)"]["errors"] == {"bad_request": 3}
    assert (
        stub.stats()["batch_lines_by_key"] and max(stub.stats()["batch_lines_by_key"].values()) == 1
    )  # never sent again


def test_batch_cost_at_batch_prices_beside_the_list_price(tmp_path: Path, stub: StubServer) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(
        json.dumps(
            {
                "cand": {"input_per_1m": 2.0, "output_per_1m": 8.0, "batch_discount": 0.5},
                "judge": {
                    "input_per_1m": 1.0,
                    "output_per_1m": 4.0,
                    "batch_input_per_1m": 0.25,
                    "batch_output_per_1m": 1.0,
                },
            }
        )
    )
    out = tmp_path / "run"
    assert _run(stub, out, "--batch", *FAST_POLL, "--price-table", str(prices)) == 0
    models = json.loads((out / "manifest.json").read_text())["llm_usage"]["models"]
    cand, judge = models["openai:cand"], models["openai:judge"]
    assert cand["batch_calls"] == N_CASES and judge["batch_calls"] == N_CASES * N_CRITERIA
    assert cand["estimated_cost"] == pytest.approx(cand["estimated_cost_list"] / 2, abs=1e-6)
    assert judge["estimated_cost"] == pytest.approx(judge["estimated_cost_list"] / 4, abs=1e-6)


def test_a_batched_model_without_a_batch_price_warns_on_the_run_and_the_dry_run(
    tmp_path: Path, stub: StubServer, caplog: pytest.LogCaptureFixture
) -> None:
    """Priced at list, a batch run's cost is what the Batch API would not charge: said before
    the run (and by --dry-run), naming the price table and the model."""
    prices = tmp_path / "prices.json"
    prices.write_text(
        json.dumps(
            {
                "cand": {"input_per_1m": 2.0, "output_per_1m": 8.0, "batch_discount": 0.5},
                "judge": {"input_per_1m": 1.0, "output_per_1m": 4.0},
            }
        )
    )
    expected = f"warning: {prices}: openai:judge has no batch price"
    argv = _argv(stub, tmp_path / "planned", "--batch", "--price-table", str(prices))
    dry = clineval_inprocess(*argv, "--dry-run", quiet=False)  # argv holds --quiet
    assert dry.returncode == 0, dry.stderr
    assert [line for line in dry.stderr.splitlines() if "batch price" in line] == [
        expected + ', so its batch calls are priced at list prices; add "batch_discount" '
        '(0.5: half price) or "batch_input_per_1m" / "batch_output_per_1m" to its entry'
    ]
    caplog.set_level(logging.WARNING, logger="clineval")
    out = tmp_path / "run"
    assert _run(stub, out, "--batch", *FAST_POLL, "--price-table", str(prices)) == 0
    warned = [r.getMessage() for r in caplog.records if "batch price" in r.getMessage()]
    assert len(warned) == 1 and warned[0].startswith(expected)
    usage = json.loads((out / "manifest.json").read_text())["llm_usage"]["models"]
    assert usage["openai:judge"]["batch_priced"] is False
    assert usage["openai:cand"]["batch_priced"] is True
    # synchronous, the same table is right: nothing to warn of
    caplog.clear()
    assert _run(stub, tmp_path / "sync", "--price-table", str(prices)) == 0
    assert not [r for r in caplog.records if "batch price" in r.getMessage()]


@pytest.mark.parametrize(
    "field", ["batch_output_per_1m", "batch_input_per_1m", "batch_cached_input_per_1m"]
)
def test_any_one_batch_rate_makes_batch_calls_batch_priced(tmp_path: Path, field: str) -> None:
    """`batch_priced` was false (though the cost used the rate) when only the batch output
    price was given. Each rate alone prices the batch calls; the rest stay at list prices."""
    from clineval.models.usage import load_price_table, summarize_usage

    prices = tmp_path / "prices.json"
    list_prices = {"input_per_1m": 2.0, "output_per_1m": 8.0, "cached_input_per_1m": 1.0}
    prices.write_text(json.dumps({"m": {**list_prices, field: 0.5}}))
    usage = {
        "prompt_tokens": 1_000_000,
        "completion_tokens": 1_000_000,
        "cached_tokens": 400_000,  # as the run store keeps it (usage.usage_of)
        "batch": True,
    }
    row = summarize_usage([("openai:m", usage)], load_price_table(str(prices)))["models"][
        "openai:m"
    ]
    rates = {
        "input": 0.5 if field == "batch_input_per_1m" else 2.0,
        "output": 0.5 if field == "batch_output_per_1m" else 8.0,
        "cached": 0.5 if field == "batch_cached_input_per_1m" else 1.0,
    }
    expected = 0.6 * rates["input"] + 1.0 * rates["output"] + 0.4 * rates["cached"]
    assert row["batch_priced"] is True
    assert row["estimated_cost"] == pytest.approx(expected)
    assert row["estimated_cost_list"] == pytest.approx(0.6 * 2.0 + 8.0 + 0.4 * 1.0)


def test_the_api_key_reaches_the_server_and_nothing_else(
    tmp_path: Path, stub: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-test-BATCHSECRET0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    out = tmp_path / "run"
    assert _run(stub, out, "--batch", *FAST_POLL) == 0
    assert stub.stats()["authorization"] == {f"Bearer {secret}": stub.stats()["batch_api_requests"]}
    for path in out.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path


# ---- a kill at any moment ----------------------------------------------------------------
def _batch_records(out: Path) -> dict[str, Any]:
    path = out / "store.sqlite"
    if not path.exists():
        return {}
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
            rows = conn.execute("SELECT key, value FROM meta WHERE key LIKE 'batch:%'").fetchall()
    except sqlite3.Error:
        return {}
    return {k: json.loads(v) for k, v in rows}


@pytest.mark.parametrize(
    "moment", ["answers-batch", "answers-ended", "judge-file-only", "judge-batch"]
)
def test_a_killed_batch_run_resumes_without_a_second_submission(
    tmp_path: Path, stub: StubServer, sync_run: Path, moment: str
) -> None:
    # Slow batches (many polls in progress) so that the kill comes while one runs; for the
    # judge moments the answers' batch ends at once.
    first = [] if moment == "answers-batch" else [{"end": "completed"}]
    stub.batch_script(first, default={"end": "completed", "steps": 100_000})
    out = tmp_path / "run"
    argv = [sys.executable, "-m", "clineval", *_argv(stub, out, "--batch", *FAST_POLL)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.Popen(
        argv,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    want = "batch:openai:cand" if moment.startswith("answers") else "batch:openai:judge"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            records = _batch_records(out).get(want) or {}
            if moment == "judge-file-only" and records:
                break  # its file is uploaded; its batch may not be stored (or made) yet
            if moment == "answers-ended":
                if any(r.get("status") == "completed" for r in records.values()):
                    break  # the answers' batch ended: its lines may not all be stored yet
                time.sleep(0.002)
                continue
            if any(r.get("batch_id") for r in records.values()):
                break
            time.sleep(0.01)
        else:
            pytest.fail(f"no {want} record")
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    # The same command again, the running batches now ending: each request submitted once.
    stub.batch_script([], default={"end": "completed"}, hurry=True)
    assert _run(stub, out, "--batch", *FAST_POLL) == 0
    counts = stub.stats()["batch_lines_by_key"]
    assert len(counts) == N_CASES * (1 + N_CRITERIA) and set(counts.values()) == {1}
    assert stub.stats()["requests"] == 0
    _same_as_sync(out, sync_run)


# ---- offline files (vllm run-batch) ----------------------------------------------------------
def vllm_run_batch(request_file: Path, output_file: Path, *, error_every: int = 0) -> None:
    """What `vllm run-batch -i REQUEST -o OUTPUT` writes (vLLM's BatchRequestOutput: id,
    custom_id, response {status_code, request_id, body}, error), with the stub's replies."""
    rows = []
    for n, raw in enumerate(request_file.read_text().splitlines(), start=1):
        line = json.loads(raw)
        body = line["body"]
        if error_every and n % error_every == 0:
            rows.append(
                {
                    "id": f"vllm-{n:032x}",
                    "custom_id": line["custom_id"],
                    "response": {"status_code": 400, "request_id": f"vllm-batch-{n:032x}"},
                    "error": "stub: bad request",
                }
            )
            continue
        rows.append(
            {
                "id": f"vllm-{n:032x}",
                "custom_id": line["custom_id"],
                "response": {
                    "status_code": 200,
                    "request_id": f"vllm-batch-{n:032x}",
                    "body": completion(body, request_key(body), None),
                },
                "error": None,
            }
        )
    output_file.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_offline_files_round_trip_equals_the_synchronous_run(
    tmp_path: Path, stub: StubServer, sync_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, requests = tmp_path / "run", tmp_path / "requests"
    # round 1: the answers' request file, and a one-line hint
    assert _run(stub, out, "--batch-file-out", str(requests)) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "vllm run-batch -i" in err[0] and "--batch-file-in" in err[0]
    first = sorted(requests.glob("*.jsonl"))
    assert len(first) == 1 and len(first[0].read_text().splitlines()) == N_CASES
    vllm_run_batch(first[0], tmp_path / "out1.jsonl")
    # round 2: answers imported, the judge calls written
    assert (
        _run(
            stub,
            out,
            "--batch-file-in",
            str(tmp_path / "out1.jsonl"),
            "--batch-file-out",
            str(requests),
        )
        == 0
    )
    second = sorted(set(requests.glob("*.jsonl")) - set(first))
    assert len(second) == 1 and len(second[0].read_text().splitlines()) == N_CASES * N_CRITERIA
    vllm_run_batch(second[0], tmp_path / "out2.jsonl")
    assert _run(stub, out, "--batch-file-in", str(tmp_path / "out2.jsonl")) == 0
    assert stub.stats()["requests"] == 0 and stub.stats()["batches"] == 0  # no server used
    _same_as_sync(out, sync_run)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("not json", "not JSON"),
        ('{"custom_id": "nope", "response": null, "error": "x"}', "is not a request this run"),
        ("DUPLICATE", "again (first at"),  # within one file
        ("NO_BODY", "not a chat completion"),
        ('{"response": {"status_code": 200}}', "no custom_id"),
    ],
)
def test_a_bad_output_line_is_one_error_naming_file_and_line_and_loses_nothing(
    tmp_path: Path,
    stub: StubServer,
    capsys: pytest.CaptureFixture[str],
    line: str,
    message: str,
) -> None:
    out, requests = tmp_path / "run", tmp_path / "requests"
    assert _run(stub, out, "--batch-file-out", str(requests)) == 0
    request_file = next(requests.glob("*.jsonl"))
    output = tmp_path / "out.jsonl"
    vllm_run_batch(request_file, output)
    lines = output.read_text().splitlines()
    first = json.loads(lines[0])
    if line == "DUPLICATE":
        line = lines[0]
    elif line == "NO_BODY":
        line = json.dumps({"custom_id": first["custom_id"], "response": {"status_code": 200}})
    lines.insert(2, line)
    output.write_text("\n".join(lines) + "\n")
    with RunStore.in_dir(out) as store:
        before = store.count_calls()
    capsys.readouterr()
    assert _run(stub, out, "--batch-file-in", str(output), "--batch-file-out", str(requests)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {output}:3: ") and message in err[0]
    with RunStore.in_dir(out) as store:
        assert store.count_calls() == before  # nothing stored from a file with a bad line
    # the file fixed, the same command goes on
    del lines[2]
    output.write_text("\n".join(lines) + "\n")
    assert _run(stub, out, "--batch-file-in", str(output), "--batch-file-out", str(requests)) == 0
    with RunStore.in_dir(out) as store:
        assert store.count_calls() == before + N_CASES


def test_error_lines_of_an_output_file_go_into_the_next_request_file(
    tmp_path: Path, stub: StubServer
) -> None:
    out, requests = tmp_path / "run", tmp_path / "requests"
    assert _run(stub, out, "--batch-file-out", str(requests)) == 0
    first = next(requests.glob("*.jsonl"))
    vllm_run_batch(first, tmp_path / "out1.jsonl", error_every=4)  # 3 lines: HTTP 400
    assert (
        _run(
            stub,
            out,
            "--batch-file-in",
            str(tmp_path / "out1.jsonl"),
            "--batch-file-out",
            str(requests),
        )
        == 0
    )
    # a 400 is not retried (as on the synchronous path): 3 candidate errors, 9 cases judged
    second = sorted(set(requests.glob("*.jsonl")) - {first})
    assert len(second[0].read_text().splitlines()) == 9 * N_CRITERIA


def test_the_report_shows_the_batch_calls_and_both_costs(tmp_path: Path, stub: StubServer) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(
        json.dumps(
            {
                "cand": {"input_per_1m": 2, "output_per_1m": 8, "batch_discount": 0.5},
                "judge": {"input_per_1m": 2, "output_per_1m": 8},
            }
        )
    )
    out = tmp_path / "run"
    assert _run(stub, out, "--batch-model", "cand", *FAST_POLL, "--price-table", str(prices)) == 0
    assert stub.stats()["requests"] == N_CASES * N_CRITERIA  # the judge: synchronous
    usage = json.loads((out / "manifest.json").read_text())["llm_usage"]
    assert usage["models"]["openai:cand"]["batch_calls"] == N_CASES
    assert usage["models"]["openai:judge"]["batch_calls"] == 0
    assert usage["estimated_cost_list"] > usage["estimated_cost"]
    assert main(["report", str(out), "-o", str(tmp_path / "r.html")]) == 0
    html = (tmp_path / "r.html").read_text()
    assert "batch calls" in html and "at list prices" in html


def test_another_task_goes_in_one_round_and_equals_its_synchronous_run(
    tmp_path: Path, stub: StubServer, data_root: Path
) -> None:
    """TCM-SD (one chat call per record) in batch mode: one batch for the whole run."""
    from clineval.benchmarks.tcm_sd.synthetic import write_synthetic

    if not (data_root / "tcm-sd" / "zy-bert" / "syndrome_vocab.txt").is_file():
        pytest.skip("TCM-SD label files not available")
    root = tmp_path / "tcm"
    write_synthetic(root, seed=3, data_dir=data_root, scale=0.06)

    def run(out: Path, *extra: str) -> int:
        argv = ["--quiet", "run", "tcm-sd", "--model", f"openai:stub@{stub.base_url}"]
        argv += ["--data-dir", str(root), "--limit", "20", "--concurrency", "2"]
        return main([*argv, "--output-dir", str(out), *extra])

    assert run(tmp_path / "sync") == 0
    assert stub.stats()["requests"] == 20
    stub.reset()
    assert run(tmp_path / "batch", "--batch", *FAST_POLL) == 0
    stats = stub.stats()
    assert stats["requests"] == 0 and stats["batches"] == 1  # not 10 rounds of 2 x 2
    sync, batch = (
        json.loads((tmp_path / d / "results.json").read_text())["tcm-sd"] for d in ("sync", "batch")
    )
    assert sync == batch


@pytest.mark.parametrize(
    ("plan", "message"),
    [
        ({"garbled": True}, "error: batch batch_2 output file line 61: not JSON: <html>"),
        ({"status": "weird"}, "error: batch API http://127.0.0.1:"),
        # the rule of --batch-file-in files: a request of this output, one line each
        (
            {"extra_line": "stray"},
            "error: batch batch_2 output file line 61: custom_id 'stray-fixture-id' is not a "
            "request of batch batch_2",
        ),
        (
            {"extra_line": "duplicate"},
            "error: batch batch_2 output file line 61: custom_id ",
        ),
        (
            {"extra_line": "duplicate_error"},
            "error: batch batch_2 error file line 1: custom_id ",
        ),
    ],
    ids=["garbled", "weird-status", "stray-line", "duplicate-line", "duplicate-error-line"],
)
def test_a_reply_outside_the_batch_api_is_one_error_and_the_run_resumes(
    tmp_path: Path,
    stub: StubServer,
    sync_run: Path,
    capsys: pytest.CaptureFixture[str],
    plan: dict[str, Any],
    message: str,
) -> None:
    stub.batch_script([{"end": "completed"}, plan])  # the judge round's batch misbehaves
    out = tmp_path / "run"
    capsys.readouterr()
    assert _run(stub, out, "--batch", *FAST_POLL) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(message), err
    if "duplicate" in str(plan.get("extra_line")):
        assert err[0].endswith(
            "again (first at batch batch_2 output file line 1): one line per request"
        ), err
    with RunStore.in_dir(out) as store:
        assert store.count_calls() == N_CASES  # the answers are kept
        judge = store.get_meta("batch:openai:judge")
    assert judge["1"]["batch_id"] == "batch_2"  # and the judge batch's id
    if plan.get("status"):  # the server comes right: the same batch is read, not resent
        stub.batch_script([], default={"end": "completed"}, fix=True)
        assert _run(stub, out, "--batch", *FAST_POLL) == 0
        assert stub.stats()["batches"] == 2
        _same_as_sync(out, sync_run)
    # the garbled output stays garbled at the server; nothing was submitted twice
    assert set(stub.stats()["batch_lines_by_key"].values()) == {1}


# ---- a stored batch the server does not know --------------------------------------------------
def _stopped_in_the_judge_round(stub: StubServer, out: Path) -> None:
    """A run stopped (exit 2) with the answers stored and the judge batch's id kept."""
    stub.batch_script([{"end": "completed"}, {"status": "weird"}])
    assert _run(stub, out, "--batch", *FAST_POLL) == 2
    with RunStore.in_dir(out) as store:
        assert store.count_calls() == N_CASES
        assert store.get_meta("batch:openai:judge")["1"]["batch_id"] == "batch_2"


@pytest.mark.parametrize("stored", ["batch id", "file id only"])
def test_a_restarted_server_that_lost_the_batch_gets_it_again_and_the_run_ends(
    tmp_path: Path, stub: StubServer, sync_run: Path, stored: str
) -> None:
    """Every resume stopped on the same HTTP 404. Now the lost batch is a failed one: its
    requests go out once more (one new batch, each line once) and the run finishes with the
    synchronous run's results. "file id only": killed between the upload and the batch's
    creation, the stored file is unknown too."""
    out = tmp_path / "run"
    _stopped_in_the_judge_round(stub, out)
    if stored == "file id only":
        with RunStore.in_dir(out) as store:
            records = store.get_meta("batch:openai:judge")
            records["1"]["batch_id"] = None
            store.set_meta("batch:openai:judge", records)
    stub.reset()  # a restart: every batch and file forgotten
    assert _run(stub, out, "--batch", *FAST_POLL) == 0
    stats = stub.stats()
    assert stats["batches"] == 1 and stats["requests"] == 0
    assert len(stats["batch_lines_by_key"]) == N_CASES * N_CRITERIA
    assert set(stats["batch_lines_by_key"].values()) == {1}  # none sent twice
    _same_as_sync(out, sync_run)
    with RunStore.in_dir(out) as store:
        judge = store.get_meta("batch:openai:judge")
    assert judge["1"]["status"] == "unknown to the server" and judge["2"]["status"] == "completed"


def test_another_base_url_that_never_knew_the_batch_finishes_the_run(
    tmp_path: Path, stub: StubServer, sync_run: Path
) -> None:
    out = tmp_path / "run"
    _stopped_in_the_judge_round(stub, out)
    asked = stub.stats()["batch_api_requests"]
    with StubServer() as other:
        moved = [a.replace(stub.base_url, other.base_url) for a in _argv(stub, out)]
        assert main([*moved, "--batch", *FAST_POLL]) == 0
        stats = other.stats()
    assert stats["batches"] == 1 and set(stats["batch_lines_by_key"].values()) == {1}
    assert len(stats["batch_lines_by_key"]) == N_CASES * N_CRITERIA
    assert stub.stats()["batch_api_requests"] == asked  # the old server was not asked again
    _same_as_sync(out, sync_run)


def test_batches_the_server_keeps_forgetting_are_resent_within_the_bound(
    tmp_path: Path, stub: StubServer
) -> None:
    stub.batch_script([], default={"forget": True})
    out = tmp_path / "run"
    code = _run(stub, out, "--batch", *FAST_POLL, "--option", "llm.batch_resubmits=1")
    assert code == 1  # the candidate errors fail the task
    stats = stub.stats()
    assert stats["batches"] == 2  # the first batch and one resubmission, no more
    assert set(stats["batch_lines_by_key"].values()) == {2}
    by_model = json.loads((out / "manifest.json").read_text())["llm_calls"]["by_model"]
    assert by_model["openai:cand (candidate)"]["errors"] == {"server": N_CASES}


def test_line_splitter_gives_the_lines_whatever_the_chunks() -> None:
    """The streamed reader's lines equal a whole read's, for chunks of every size (a line
    longer than a chunk, a line end split from its \\r, no final line end)."""
    import random

    from clineval.models.batch_lines import LineSplitter

    rng = random.Random(7)
    data = (
        b"".join(
            rng.choice([b"x" * rng.randrange(0, 300), b'{"a": 1}', b""])
            + rng.choice([b"\n", b"\r\n"])
            for _ in range(200)
        )
        + b"tail without end"
    )
    expected = [line.removesuffix(b"\r") for line in data.split(b"\n")]
    for size in (1, 2, 3, 7, 64, 1000, len(data)):
        splitter = LineSplitter()
        got = []
        for start in range(0, len(data), size):
            got += list(splitter.feed(data[start : start + size]))
        got += list(splitter.end())
        assert got == expected, size


def test_output_files_are_streamed_in_small_chunks_with_the_same_results(
    tmp_path: Path, stub: StubServer, sync_run: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The batch output files downloaded in chunks far smaller than a line: the same answers
    as the synchronous run."""
    from clineval.models import batch_client

    monkeypatch.setattr(batch_client, "_CHUNK", 97)
    out = tmp_path / "run"
    assert _run(stub, out, "--batch", *FAST_POLL) == 0
    _same_as_sync(out, sync_run)


@pytest.mark.parametrize(
    "line",
    [
        # vLLM's BatchRequestOutput (run-batch), as the OpenAI Batch API writes it too
        {
            "id": "vllm-1",
            "custom_id": "k",
            "response": {
                "status_code": 200,
                "request_id": "vllm-batch-1",
                "body": {"choices": [{"message": {"content": "hi"}}]},
            },
            "error": None,
        },
        # an older vLLM: the completion itself as the response
        {
            "id": "vllm-1",
            "custom_id": "k",
            "response": {"choices": [{"message": {"content": "hi"}}]},
            "error": None,
        },
    ],
)
def test_both_forms_of_a_vllm_output_line_are_read(line: dict[str, Any]) -> None:
    from clineval.models.batch_lines import parse_output_line

    outcome = parse_output_line(json.dumps(line).encode(), "f:1")
    assert outcome.key == "k" and outcome.completion is not None and outcome.failure is None


def test_error_forms_of_an_output_line_are_failed_attempts() -> None:
    from clineval.models.batch_lines import parse_output_line

    vllm_error = {
        "custom_id": "k",
        "response": {"status_code": 400, "request_id": "r"},
        "error": "bad request",
    }
    openai_error = {
        "custom_id": "k",
        "response": None,
        "error": {"code": "server_error", "message": "boom"},
    }
    rate_limited = {"custom_id": "k", "response": {"status_code": 429, "body": {}}}
    empty = {
        "custom_id": "k",
        "response": {
            "status_code": 200,
            "body": {"choices": [{"message": {"content": " "}, "finish_reason": "length"}]},
        },
    }
    kinds = []
    for line in (vllm_error, openai_error, rate_limited, empty):
        outcome = parse_output_line(json.dumps(line).encode(), "f:1")
        assert outcome.failure is not None
        kinds.append((outcome.failure.kind, outcome.failure.retryable))
    assert kinds == [
        ("bad_request", False),
        ("server", True),
        ("rate_limit", True),
        ("bad_response", True),
    ]


def test_only_the_judge_batched_still_makes_one_judge_round(
    tmp_path: Path, stub: StubServer, sync_run: Path
) -> None:
    """--batch-model judge: the answers are synchronous (one by one), the judge calls wait
    for all of them and go in one batch."""
    out = tmp_path / "run"
    assert _run(stub, out, "--batch-model", "openai:judge", *FAST_POLL) == 0
    stats = stub.stats()
    assert stats["requests"] == N_CASES and stats["batches"] == 1
    _same_as_sync(out, sync_run)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--batch-model", "nobody"], "error: --batch-model 'nobody': not a model of this run"),
        (["--batch-file-in", "/nonexistent/out.jsonl"], "--batch-file-in file not found"),
    ],
)
def test_bad_batch_flags_are_one_line_before_anything_is_written(
    tmp_path: Path,
    stub: StubServer,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    message: str,
) -> None:
    out = tmp_path / "run"
    capsys.readouterr()
    assert _run(stub, out, *extra) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert not out.exists() and stub.stats()["requests"] == 0


# ---- where --batch-file-out writes ------------------------------------------------------------
def test_an_empty_batch_file_out_is_refused_naming_the_flag(
    tmp_path: Path, stub: StubServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """An empty path made a live synchronous run (the flag read as not given)."""
    out = tmp_path / "run"
    capsys.readouterr()
    for empty in ("", "  "):
        assert _run(stub, out, "--batch-file-out", empty) == 2
        err = capsys.readouterr().err.strip().splitlines()
        # the one check of every path flag (cli_groups.path_text), which click names the flag in
        assert len(err) == 1 and err[0].startswith("error: "), err
        assert "'--batch-file-out'" in err[0] and "must not be empty" in err[0], err
    assert not out.exists() and stub.stats()["requests"] == 0


@pytest.mark.parametrize("place", list(PLACES))
def test_batch_file_out_in_an_unwritable_place_is_one_line(
    place: str, tmp_path: Path, stub: StubServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each place tests/test_unwritable.py knows: one `error:` line naming the place, exit 2,
    no temporary file; the places the run can see before it starts are refused before it
    writes anything, the others (a /proc directory) stop it with its calls stored, and the
    same command with a usable directory goes on."""
    base = tmp_path / "places"
    base.mkdir()
    target = PLACES[place](base)
    before = sorted(p.name for p in base.iterdir())
    out = tmp_path / "run"
    capsys.readouterr()
    assert _run(stub, out, "--batch-file-out", str(target)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    assert "--batch-file-out" in err[0] or "cannot write" in err[0], err
    assert sorted(p.name for p in base.iterdir()) == before
    assert stub.stats()["requests"] == 0
    if (out / "manifest.json").exists():  # stopped while it ran: it says so, and resumes
        status = json.loads((out / "manifest.json").read_text())["status"]
        assert status.startswith("stopped: CannotWrite"), status
    assert _run(stub, out, "--batch-file-out", str(tmp_path / "requests")) == 0
    assert len((next((tmp_path / "requests").glob("*.jsonl"))).read_text().splitlines()) == N_CASES


def test_a_full_disk_leaves_no_request_file_and_no_tmp(
    tmp_path: Path,
    stub: StubServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The request file's writes go to /dev/full (the kernel's ENOSPC for every write): the
    run stops with one line naming the file, exit 2, and leaves no 0-byte temporary file;
    with space again the same command writes the file."""
    from clineval import rundir

    real_new_file = rundir.new_file
    requests = tmp_path / "requests"

    def full_disk(folder: Path, prefix: str, suffix: str) -> tuple[int, str]:
        fd, name = real_new_file(folder, prefix, suffix)
        if Path(folder) == requests:
            os.close(fd)
            fd = os.open("/dev/full", os.O_WRONLY)
        return fd, name

    monkeypatch.setattr(rundir, "new_file", full_disk)
    out = tmp_path / "run"
    capsys.readouterr()
    assert _run(stub, out, "--batch-file-out", str(requests)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {requests}/clineval-"), err
    assert err[0].endswith("cannot write: No space left on device"), err
    assert list(requests.iterdir()) == []
    monkeypatch.setattr(rundir, "new_file", real_new_file)
    assert _run(stub, out, "--batch-file-out", str(requests)) == 0
    assert [p.suffix for p in requests.iterdir()] == [".jsonl"]


@pytest.fixture
def small_mounts(tmp_path: Path) -> Iterator[dict[str, Path]]:
    """A read-only file system and a nearly full one (tmpfs of 4 KiB), where this process
    may mount them (root on Linux); else the test is skipped."""
    mounts = {"read-only": tmp_path / "ro", "full": tmp_path / "full"}
    made = []
    try:
        for name, options in (("read-only", "ro,size=4k"), ("full", "size=4k")):
            mounts[name].mkdir()
            done = subprocess.run(
                ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(mounts[name])],
                capture_output=True,
                check=False,
            )
            if done.returncode:
                pytest.skip("cannot mount a tmpfs here (needs root)")
            made.append(mounts[name])
        yield mounts
    finally:
        for path in made:
            subprocess.run(["umount", str(path)], check=False)


@pytest.mark.parametrize("kind", ["read-only", "full"])
def test_batch_file_out_on_a_read_only_or_full_file_system(
    tmp_path: Path,
    stub: StubServer,
    capsys: pytest.CaptureFixture[str],
    small_mounts: dict[str, Path],
    kind: str,
) -> None:
    """Real file systems: one line naming the path and the system's reason, exit 2, nothing
    left on the file system, and the same command with room to write goes on."""
    target = small_mounts[kind] / "requests"
    out = tmp_path / "run"
    capsys.readouterr()
    assert _run(stub, out, "--batch-file-out", str(target)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    reason = "Read-only file system" if kind == "read-only" else "No space left on device"
    assert len(err) == 1 and err[0].startswith(f"error: {target}"), err
    assert err[0].endswith(f"cannot write: {reason}"), err
    leftovers = [p for p in small_mounts[kind].rglob("*") if p.is_file()]
    assert leftovers == []
    assert _run(stub, out, "--batch-file-out", str(tmp_path / "requests")) == 0


def test_offline_retries_are_bounded_over_the_runs_of_a_round_trip(
    tmp_path: Path, stub: StubServer
) -> None:
    out, requests = tmp_path / "run", tmp_path / "requests"
    files = ["--batch-file-out", str(requests), "--max-retries", "1"]
    assert _run(stub, out, *files, "--option", "clinconsensus.max_criteria=1") == 0
    written: list[Path] = []
    outputs: list[str] = []
    for _ in range(4):
        new = sorted(set(requests.glob("*.jsonl")) - set(written))
        if not new:
            break
        written += new
        output = tmp_path / f"out{len(written)}.jsonl"
        rows = []
        for raw in new[0].read_text().splitlines():  # every line a 500: retryable
            line = json.loads(raw)
            body = {"error": {"message": "overloaded"}}
            rows.append(
                {
                    "custom_id": line["custom_id"],
                    "response": {"status_code": 500, "body": body},
                    "error": None,
                }
            )
        output.write_text("".join(json.dumps(r) + "\n" for r in rows))
        outputs += ["--batch-file-in", str(output)]
        code = _run(stub, out, *files, "--option", "clinconsensus.max_criteria=1", *outputs)
    # 1 try + 1 retry, then the answers are errors: two request files, no third
    assert len(written) == 2 and code == 1
    by_model = json.loads((out / "manifest.json").read_text())["llm_calls"]["by_model"]
    assert by_model["openai:cand (candidate)"]["errors"] == {"server": N_CASES}


def test_polls_back_off_from_a_few_seconds_to_the_cap() -> None:
    from itertools import islice

    from clineval.models.batch_client import poll_delays
    from clineval.models.options import LLM_OPTIONS

    first = LLM_OPTIONS.value({}, "batch_poll_s")
    cap = LLM_OPTIONS.value({}, "batch_poll_max_s")
    assert list(islice(poll_delays(first, cap), 9)) == [5, 10, 20, 40, 80, 160, 300, 300, 300]
