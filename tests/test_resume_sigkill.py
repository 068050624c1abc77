"""Kill a real `clineval run` with SIGKILL in the middle, run it again: no finished call is
repeated and the final results equal those of an uninterrupted run.

ClinConsensus on its fixture cases, candidate and judge served by the stub server (slowed down
so that the kill lands mid-run). The stub counts requests per request key, which is what
proves that nothing stored before the kill was asked again.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_process import default_sigint
from llm_stub_server import StubServer
from run_probe import count_stored_calls, stored_stub_keys

from clineval.rundir import RESULTS, read_json
from clineval.store import STORE_FILENAME

KILL_AFTER_CALLS = 60


@pytest.fixture(scope="module")
def stub() -> Iterator[StubServer]:
    with StubServer(latency=0.0) as server:
        yield server


def _command(stub: StubServer, out: Path, concurrency: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "clineval",
        "--quiet",
        "run",
        "clinconsensus",
        "--model",
        f"openai:cand@{stub.base_url}",
        "--judge",
        f"openai:judge@{stub.base_url}",
        "--option",
        "clinconsensus.cases=fixture",
        "--concurrency",
        str(concurrency),
        "--output-dir",
        str(out),
    ]


def _start_slowed_run(stub: StubServer, out: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """The run at concurrency 4 against a stub slowed to 50 ms a call, returned once at least
    KILL_AFTER_CALLS calls are in its store (stderr kept for the caller)."""
    stub.reset()
    stub.script([], default={"do": "ok", "latency": 0.05})
    proc = subprocess.Popen(
        _command(stub, out, 4),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        preexec_fn=default_sigint,
    )
    deadline = time.monotonic() + 120
    while (
        count_stored_calls(out / STORE_FILENAME) < KILL_AFTER_CALLS and time.monotonic() < deadline
    ):
        assert proc.poll() is None, "the run finished before it could be stopped"
        time.sleep(0.02)
    return proc


@pytest.mark.slow
def test_sigkill_mid_run_then_resume(tmp_path: Path, stub: StubServer) -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    # 1. The reference: an uninterrupted run.
    reference = subprocess.run(
        _command(stub, tmp_path / "reference", 32), env=env, capture_output=True, timeout=300
    )
    assert reference.returncode == 0, reference.stderr.decode()[-2000:]
    total_calls = stub.stats()["requests"]
    assert total_calls == 12 * (1 + 30)  # 12 fixture cases: 1 answer + 30 verdicts each

    # 2. The same run, slowed down, killed with SIGKILL once some calls are stored.
    out = tmp_path / "killed"
    store_path = out / STORE_FILENAME
    proc = _start_slowed_run(stub, out, env)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)  # reaps it and closes the stderr pipe
    assert proc.returncode == -signal.SIGKILL
    finished_before_kill = stored_stub_keys(store_path)
    assert KILL_AFTER_CALLS <= len(finished_before_kill) < total_calls
    asked_before_kill = stub.stats()["by_key"]
    assert all(asked_before_kill.get(k) == 1 for k in finished_before_kill)

    # 3. Resume: same command, same output directory.
    stub.script([], default={"do": "ok", "latency": 0.0})
    resumed = subprocess.run(_command(stub, out, 4), env=env, capture_output=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr.decode()[-2000:]
    by_key = stub.stats()["by_key"]
    # No call that had finished (was stored) before the kill was requested again ...
    repeated = {k for k in finished_before_kill if by_key.get(k, 0) != 1}
    assert repeated == set()
    # ... every call was made, and only the few in flight at the kill were made twice.
    assert len(by_key) == total_calls
    in_flight_at_kill = [k for k, n in by_key.items() if n > 1]
    # At most the 4 on the wire (the run's concurrency) plus the answers of the last loop turn
    # still waiting for their group commit.
    assert len(in_flight_at_kill) <= 2 * 4
    assert sum(by_key.values()) == total_calls + len(in_flight_at_kill)

    # 4. The final results equal the uninterrupted run's.
    assert read_json(out / RESULTS) == read_json(tmp_path / "reference" / RESULTS)


@pytest.mark.slow
def test_ctrl_c_stops_promptly_with_a_stopped_manifest_then_resume(
    tmp_path: Path, stub: StubServer
) -> None:
    """SIGINT (Ctrl-C) mid-run: exit 130 within seconds, the manifest says why it stopped,
    every call that finished is in the store, and the resumed run asks none of them again."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    out = tmp_path / "interrupted"
    store_path = out / STORE_FILENAME
    proc = _start_slowed_run(stub, out, env)
    interrupted_at = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    stopped_in = time.monotonic() - interrupted_at
    assert proc.returncode == 130, err.decode()[-2000:]
    assert "aborted" in err.decode()
    assert stopped_in < 10  # in-flight calls are cancelled, not awaited to the end
    manifest = read_json(out / "manifest.json")
    assert manifest["status"].startswith("stopped: KeyboardInterrupt")
    finished = stored_stub_keys(store_path)
    assert len(finished) >= KILL_AFTER_CALLS

    stub.script([], default={"do": "ok", "latency": 0.0})
    resumed = subprocess.run(_command(stub, out, 4), env=env, capture_output=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr.decode()[-2000:]
    by_key = stub.stats()["by_key"]
    assert {k for k in finished if by_key.get(k, 0) != 1} == set()
    assert len(by_key) == 12 * (1 + 30)
    assert read_json(out / "manifest.json")["status"] == "finished"
