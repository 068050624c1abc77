"""Run directories under misuse: damaged stores and manifests, `score` over a missing, empty or
shrunken store, two processes on one directory, and runs refused for bad input.

Real SQLite files (truncated, overwritten with garbage, a torn page), real `python -m clineval`
subprocesses for the lock (one slowed by the stub server, killed with SIGKILL), and the exact
stderr a user sees: one `error:` line, exit 2.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from llm_stub_server import StubServer
from run_probe import count_stored_calls

from clineval.benchmarks.clinconsensus.cases import fixture_path, load_cases
from clineval.cli import main
from clineval.rundir_lock import LOCK_FILENAME
from clineval.store import STORE_FILENAME, RunStore, StoreDamaged

FIXTURE = fixture_path()


# ---- helpers ---------------------------------------------------------------------------------
def _verdicts(path: Path, n_cases: int | None = None) -> Path:
    """A verdicts file for the fixture cases (deterministic, a mix of met and not met)."""
    cases = load_cases(FIXTURE)[:n_cases]
    rows = [
        {"case_id": c.case_id, "criterion_id": r.criterion_id, "criteria_met": (i + j) % 3 != 0}
        for i, c in enumerate(cases)
        for j, r in enumerate(c.rubrics)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _run_args(out: Path, verdicts: Path, *extra: str) -> list[str]:
    return [
        "run",
        "clinconsensus",
        "--model",
        f"predictions:{verdicts}",
        "--cases",
        str(FIXTURE),
        "--output-dir",
        str(out),
        *extra,
    ]


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: "), err
    assert "Traceback" not in err
    return err


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished ClinConsensus run (verdicts file, no model): 12 cases, 360 records."""
    base = tmp_path_factory.mktemp("finished")
    out = base / "run"
    assert main(_run_args(out, _verdicts(base / "verdicts.jsonl"))) == 0
    # The store was closed cleanly: everything is in the main file, nothing in a WAL beside it.
    assert not (out / (STORE_FILENAME + "-wal")).exists()
    return out


@pytest.fixture
def run_copy(finished_run: Path, tmp_path: Path) -> Path:
    """A private copy of the finished run (tests damage it), its verdicts file beside it."""
    out = tmp_path / "run"
    out.mkdir()
    for name in ("manifest.json", "results.json", "samples.jsonl", STORE_FILENAME):
        (out / name).write_bytes((finished_run / name).read_bytes())
    return out


@pytest.fixture
def same_run(finished_run: Path) -> list[str]:
    """The command of the finished run, but for `run_copy`'s directory (a resume there)."""
    return _run_args(finished_run, finished_run.parent / "verdicts.jsonl")


def _resume_in(run: Path, command: list[str]) -> list[str]:
    argv = list(command)
    argv[argv.index("--output-dir") + 1] = str(run)
    return argv


def _outputs(run: Path) -> tuple[bytes, ...]:
    """The bytes of the files a refused command must leave as they were."""
    return tuple((run / n).read_bytes() for n in ("results.json", "samples.jsonl", "manifest.json"))


def _page_of(store: Path, marker: bytes) -> int:
    """Byte offset of the start of the page that holds `marker` (a stored value)."""
    conn = sqlite3.connect(store)
    try:
        page_size = int(conn.execute("PRAGMA page_size").fetchone()[0])
    finally:
        conn.close()
    offset = store.read_bytes().find(marker)
    assert offset > page_size  # in a data page, not the header page
    return offset - offset % page_size


def _overwrite(path: Path, offset: int, data: bytes) -> None:
    with open(path, "r+b") as fh:
        fh.seek(offset)
        fh.write(data)


def _truncate_half(store: Path) -> None:
    os.truncate(store, store.stat().st_size // 2)


def _garbage(store: Path) -> None:
    store.write_bytes(bytes((i * 131 + 7) % 256 for i in range(store.stat().st_size)))


def _torn_page(store: Path) -> None:
    """The header of a page of records overwritten: the file opens, the page does not read."""
    _overwrite(store, _page_of(store, b'"met":'), b"\xff" * 64)


def _text_not_utf8(store: Path) -> None:
    """Bytes inside a stored value replaced by ones that are not UTF-8 (SQLite keeps no
    checksum of page content: only decoding the value finds it)."""
    start = store.read_bytes().find(b'"met":')
    _overwrite(store, start, b"\xff\xfe")


def _value_not_json(store: Path) -> None:
    start = store.read_bytes().find(b'"met":')
    _overwrite(store, start, b"{{")


DAMAGE: dict[str, Callable[[Path], None]] = {
    "truncated": _truncate_half,
    "garbage": _garbage,
    "torn page": _torn_page,
    "text not UTF-8": _text_not_utf8,
    "value not JSON": _value_not_json,
}


# ---- a damaged store -------------------------------------------------------------------------
@pytest.mark.parametrize("damage", list(DAMAGE))
def test_score_of_a_damaged_store_is_one_line_naming_it(
    damage: str, run_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = run_copy / STORE_FILENAME
    DAMAGE[damage](store)
    before = _outputs(run_copy)
    assert main(["score", str(run_copy)]) == 2
    err = _one_error_line(capsys)
    assert f"{store}: the run store is damaged" in err
    assert "`clineval score` cannot recover" in err and "new --output-dir" in err
    assert _outputs(run_copy) == before  # nothing already computed is lost


@pytest.mark.parametrize("damage", ["truncated", "garbage", "torn page"])
def test_resuming_into_a_damaged_store_is_one_line_naming_it(
    damage: str, run_copy: Path, same_run: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    store = run_copy / STORE_FILENAME
    DAMAGE[damage](store)
    before = _outputs(run_copy)
    assert main(_resume_in(run_copy, same_run)) == 2
    err = _one_error_line(capsys)
    assert f"{store}: the run store is damaged" in err and "new --output-dir" in err
    assert _outputs(run_copy) == before


def test_a_torn_page_found_by_a_later_query_is_reported_there(run_copy: Path) -> None:
    """The store opens (the header is intact); the first read of the torn page raises the
    same error, not a bare sqlite3.DatabaseError."""
    store = run_copy / STORE_FILENAME
    _torn_page(store)
    with RunStore(store) as opened:
        assert opened.count_calls() == 0  # reads that miss the torn page work
        with pytest.raises(StoreDamaged, match="database disk image is malformed") as info:
            opened.records("clinconsensus", "verdict:verdicts-file")
    assert info.value.path == str(store)


# ---- a damaged manifest ----------------------------------------------------------------------
MANIFESTS: dict[str, bytes] = {
    "not JSON": b'{"config": {"tasks": ["clinconsensus"',
    "not UTF-8": b'{"config": {"model": "\xff\xfe"}}',
    "a list": b"[1, 2, 3]",
    "no config": b'{"tasks": {}}',
    "config not an object": b'{"config": "clinconsensus"}',
    "config not valid": b'{"config": {"tasks": "clinconsensus", "model": 3}, "tasks": {}}',
}


@pytest.mark.parametrize("content", list(MANIFESTS))
@pytest.mark.parametrize("command", ["score", "run"])
def test_a_damaged_manifest_is_one_line_naming_it(
    content: str,
    command: str,
    run_copy: Path,
    same_run: list[str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    manifest = run_copy / "manifest.json"
    manifest.write_bytes(MANIFESTS[content])
    before = _outputs(run_copy)
    argv = ["score", str(run_copy)] if command == "score" else _resume_in(run_copy, same_run)
    assert main(argv) == 2
    err = _one_error_line(capsys)
    assert f"error: {manifest}:" in err
    if content != "config not valid":
        assert "damaged run manifest" in err and "new --output-dir" in err
    elif command == "score":  # scoring needs the whole config
        assert "the manifest's config is not valid" in err
    else:  # resuming compares the settings that must not change
        assert "this run directory holds a run with model=3" in err
    assert _outputs(run_copy) == before
    assert manifest.read_bytes() == MANIFESTS[content]


@pytest.mark.parametrize("content", ["not JSON", "not UTF-8", "a list", "no config"])
@pytest.mark.parametrize("command", ["report", "compare", "judge-agreement"])
def test_readers_of_a_damaged_manifest_say_so_in_one_line(
    content: str, command: str, run_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = run_copy / "manifest.json"
    manifest.write_bytes(MANIFESTS[content])
    labels = run_copy.parent / "labels.jsonl"
    labels.write_text('{"case_id": "fixture-001", "criterion_id": "x", "met": true}\n')
    argv = {
        "report": ["report", str(run_copy), "-o", str(run_copy.parent / "report.html")],
        "compare": ["compare", str(run_copy), str(run_copy)],
        "judge-agreement": ["judge-agreement", str(run_copy), "--labels", str(labels)],
    }[command]
    assert main(argv) == 2
    err = _one_error_line(capsys)
    assert f"error: {manifest}:" in err and "damaged run manifest" in err


# ---- score over a missing, empty or shrunken store -------------------------------------------
def _remove(store: Path) -> None:
    store.unlink()


def _empty_file(store: Path) -> None:
    store.write_bytes(b"")  # SQLite opens a 0-byte file as an empty database


def _schema_only(store: Path) -> None:
    store.unlink()
    RunStore(store).close()


@pytest.mark.parametrize("emptied", [_remove, _empty_file, _schema_only])
def test_score_refuses_a_missing_or_empty_store_and_keeps_the_results(
    emptied: Callable[[Path], None], run_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _outputs(run_copy)
    emptied(run_copy / STORE_FILENAME)
    for argv in (["score", str(run_copy)], ["score", str(run_copy), "--force"]):
        assert main(argv) == 2
        err = _one_error_line(capsys)
        assert "nothing to score" in err
        assert _outputs(run_copy) == before


def test_score_refuses_poorer_results_unless_forced(
    run_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = run_copy / STORE_FILENAME
    conn = sqlite3.connect(store)
    with conn:
        conn.execute("DELETE FROM records WHERE rowid % 2 = 0")  # an older, smaller store
    conn.close()
    before = _outputs(run_copy)
    assert main(["score", str(run_copy)]) == 2
    err = _one_error_line(capsys)
    assert "holds 180 stored output(s) of clinconsensus" in err and "computed from 360" in err
    assert "--force" in err
    assert _outputs(run_copy) == before

    main(["score", str(run_copy), "--force"])  # asked for: the results are replaced
    capsys.readouterr()
    results = json.loads((run_copy / "results.json").read_text(encoding="utf-8"))
    assert results["clinconsensus"]["judge_errors"] == 180


def test_score_of_an_intact_store_rewrites_the_same_results(
    run_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _outputs(run_copy)
    assert main(["score", str(run_copy)]) == 0
    assert _outputs(run_copy)[:2] == before[:2]  # the manifest notes the re-score
    manifest = json.loads((run_copy / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["tasks"]["clinconsensus"]["stored_records"] == 360


def test_score_of_a_missing_directory_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "no-such-run"
    assert main(["score", str(missing)]) == 2
    _one_error_line(capsys)
    assert not missing.exists()


# ---- a run refused for bad input writes nothing ----------------------------------------------
def test_a_mistyped_predictions_path_leaves_no_manifest_and_the_fix_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    typo = tmp_path / "verdicts.jsonl.typo"
    assert main(_run_args(out, typo)) == 2
    assert f"{typo}: predictions file not found" in _one_error_line(capsys)
    assert not (out / "manifest.json").exists() and not (out / STORE_FILENAME).exists()
    assert main(_run_args(out, _verdicts(tmp_path / "verdicts.jsonl", 4), "--limit", "4")) == 0


def test_a_refused_verdicts_file_does_not_bind_the_run_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file that exists but is bad is only read when the task predicts: the manifest is
    written by then, but no output is stored, so the corrected command is not refused as
    "another model"."""
    out = tmp_path / "run"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"case_id": "fixture-001"\n', encoding="utf-8")
    assert main(_run_args(out, bad, "--limit", "4")) == 2
    assert f"{bad}:1:" in _one_error_line(capsys)
    good = _verdicts(tmp_path / "good.jsonl", 4)
    assert main(_run_args(out, good, "--limit", "4")) == 0
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["config"]["model"] == f"predictions:{good}"
    # Once outputs are stored, another model is still refused.
    assert main(_run_args(out, bad, "--limit", "4")) == 2
    assert "refusing to resume" in _one_error_line(capsys)


def test_missing_cases_file_leaves_the_run_directory_untouched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    verdicts = _verdicts(tmp_path / "verdicts.jsonl", 2)
    args = _run_args(out, verdicts)
    args[args.index(str(FIXTURE))] = str(tmp_path / "no-such-cases.jsonl")
    assert main(args) == 2
    assert "no-such-cases.jsonl" in _one_error_line(capsys)
    assert not out.exists() or sorted(p.name for p in out.iterdir()) == [LOCK_FILENAME]


def test_tcm_predictions_file_fixed_after_a_refusal_runs(
    data_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """TCM-SD binds its prediction settings (model included) in the store: a bad predictions
    file must not bind them before a prediction is stored."""
    if not (data_root / "tcm-sd" / "zy-bert" / "syndrome_vocab.txt").is_file():
        pytest.skip("TCM-SD label files not available")
    from clineval.benchmarks.tcm_sd.synthetic import write_synthetic

    root = tmp_path / "tcm"
    write_synthetic(root, seed=1, data_dir=data_root, scale=0.02)
    test_split = root / "tcm-sd" / "test.synthetic.json"
    ids = [json.loads(line)["user_id"] for line in test_split.read_text("utf-8").splitlines()]
    bad, good = tmp_path / "bad.jsonl", tmp_path / "good.jsonl"
    bad.write_text("".join(json.dumps({"id": i}) + "\n" for i in ids), encoding="utf-8")
    good.write_text(
        "".join(json.dumps({"id": i, "label": None}) + "\n" for i in ids), encoding="utf-8"
    )
    out = tmp_path / "run"
    argv = ["run", "tcm-sd", "--data-dir", str(root), "--output-dir", str(out), "--model"]
    assert main([*argv, f"predictions:{bad}"]) == 2
    assert f"{bad}:1:" in _one_error_line(capsys)
    assert main([*argv, f"predictions:{good}"]) == 0


# ---- merge -----------------------------------------------------------------------------------
def test_merge_names_a_damaged_shard_store_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    verdicts = _verdicts(tmp_path / "verdicts.jsonl")
    shards = [tmp_path / "s1", tmp_path / "s2"]
    for i, shard in enumerate(shards, start=1):
        assert main(_run_args(shard, verdicts, "--shard", f"{i}/2")) == 0
    _torn_page(shards[1] / STORE_FILENAME)
    out = tmp_path / "merged"
    assert main(["merge", *map(str, shards), "--output-dir", str(out)]) == 2
    err = _one_error_line(capsys)
    assert f"{shards[1] / STORE_FILENAME}: the run store is damaged" in err
    assert not out.exists()


def test_merge_takes_the_output_lock_and_scores_under_it(tmp_path: Path) -> None:
    """merge holds OUT's lock and re-scores into OUT (which takes the lock again in the same
    process): it must not refuse itself."""
    verdicts = _verdicts(tmp_path / "verdicts.jsonl")
    shards = [tmp_path / "s1", tmp_path / "s2"]
    for i, shard in enumerate(shards, start=1):
        assert main(_run_args(shard, verdicts, "--shard", f"{i}/2")) == 0
    out = tmp_path / "merged"
    assert main(["merge", *map(str, shards), "--output-dir", str(out)]) == 0
    whole = tmp_path / "whole"
    assert main(_run_args(whole, verdicts)) == 0
    merged = json.loads((out / "results.json").read_text(encoding="utf-8"))["clinconsensus"]
    single = json.loads((whole / "results.json").read_text(encoding="utf-8"))["clinconsensus"]
    assert merged["cacs@7"] == single["cacs@7"]
    assert (out / LOCK_FILENAME).is_file()


# ---- two processes on one run directory ------------------------------------------------------
@pytest.fixture(scope="module")
def stub() -> Iterator[StubServer]:
    with StubServer(latency=0.0) as server:
        yield server


def _llm_command(stub: StubServer, out: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "clineval",
        "run",
        "clinconsensus",
        "--model",
        f"openai:cand@{stub.base_url}",
        "--judge",
        f"openai:judge@{stub.base_url}",
        "--option",
        "clinconsensus.cases=fixture",
        "--option",
        "clinconsensus.max_criteria=2",
        "--concurrency",
        "1",
        "--output-dir",
        str(out),
        *extra,
    ]


N_CALLS = 12 * (1 + 2)  # 12 fixture cases: one answer and two verdicts each


def _start(command: list[str], stderr: int | None = subprocess.PIPE) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        command,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.DEVNULL,
        stderr=stderr,
        # SIGINT at its default whatever the test runner's job ignores (nohup, background)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def _start_slowed_run(stub: StubServer, out: Path) -> subprocess.Popen[bytes]:
    """The run against a stub answering in 0.5 s a call, once its first call is stored (it
    holds the run directory's lock then, and has many calls left)."""
    stub.reset()
    stub.script([], default={"do": "ok", "latency": 0.5})
    proc = _start(_llm_command(stub, out), stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while count_stored_calls(out / STORE_FILENAME) < 1 and time.monotonic() < deadline:
        assert proc.poll() is None, "the run ended before it stored a call"
        time.sleep(0.02)
    return proc


@pytest.mark.slow
def test_second_run_is_refused_naming_the_holder_and_a_killed_holder_blocks_nothing(
    tmp_path: Path, stub: StubServer
) -> None:
    out = tmp_path / "run"
    first = _start_slowed_run(stub, out)
    try:
        second = subprocess.run(
            _llm_command(stub, out), capture_output=True, text=True, timeout=120
        )
        assert second.returncode == 2, second.stderr
        lines = second.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), second.stderr
        assert f"another clineval process (pid {first.pid})" in lines[0]
        assert "--wait" in lines[0]
        # --dry-run writes nothing: it runs beside the holder
        plan = subprocess.run(
            [*_llm_command(stub, out), "--dry-run"], capture_output=True, text=True, timeout=120
        )
        assert plan.returncode == 0, plan.stderr
        assert first.poll() is None  # the holder kept running throughout
    finally:
        first.kill()  # SIGKILL: no clean-up of any kind
        first.wait(timeout=30)
    assert first.returncode == -signal.SIGKILL
    # The lock file is still there, naming the dead holder; it blocks nothing.
    assert (out / LOCK_FILENAME).read_text().strip() == str(first.pid)
    stub.script([], default={"do": "ok", "latency": 0.0})
    third = subprocess.run(_llm_command(stub, out), capture_output=True, text=True, timeout=300)
    assert third.returncode == 0, third.stderr
    assert json.loads((out / "manifest.json").read_text())["status"] == "finished"


@pytest.mark.slow
def test_wait_runs_after_the_holder_and_sends_no_call_twice(
    tmp_path: Path, stub: StubServer
) -> None:
    out = tmp_path / "run"
    first = _start_slowed_run(stub, out)
    try:
        second = _start([*_llm_command(stub, out), "--wait"])
        assert second.stderr is not None
        waiting = second.stderr.readline().decode()
        assert f"waiting for clineval (pid {first.pid})" in waiting, waiting
        assert first.poll() is None  # the second started while the first held the lock
        stub.script([], default={"do": "ok", "latency": 0.0})  # let the first finish
        assert first.wait(timeout=300) == 0
        _, rest = second.communicate(timeout=300)
        assert second.returncode == 0, rest.decode()
    finally:
        for proc in (first, second):
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=30)
    stats = stub.stats()
    # Both runs ran to the end, yet every call was sent once: the second resumed a finished
    # run and found every call stored.
    assert stats["requests"] == N_CALLS
    assert len(stats["by_key"]) == N_CALLS and set(stats["by_key"].values()) == {1}
    assert json.loads((out / "manifest.json").read_text())["tasks"]["clinconsensus"][
        "stored_records"
    ] == 12 * (1 + 2)


# ---- a full disk -----------------------------------------------------------------------------
def test_a_run_on_a_full_disk_ends_as_one_line_and_resumes(
    finished_run: Path,
    same_run: list[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """After a --limit 2 run, the store may not grow by one page (SQLite's own SQLITE_FULL,
    with its automatic rollback of the failed commit): one line naming the store, exit 2, a
    manifest that says why the run stopped (not `running`); once there is room the same
    command finishes."""
    connect = RunStore._connect

    def capped(self: RunStore) -> sqlite3.Connection:
        conn = connect(self)
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count={pages}")  # not one page more
        return conn

    run = tmp_path / "run"
    assert main([*_resume_in(run, same_run), "--limit", "2"]) == 0  # something stored first
    monkeypatch.setattr(RunStore, "_connect", capped)
    assert main(_resume_in(run, same_run)) == 2
    err = _one_error_line(capsys)
    assert STORE_FILENAME in err and "disk is full" in err
    status = json.loads((run / "manifest.json").read_text())["status"]
    assert status.startswith("stopped: ") and "disk is full" in status
    monkeypatch.undo()
    assert main(_resume_in(run, same_run)) == 0
    assert (run / "results.json").read_bytes() == (finished_run / "results.json").read_bytes()


def test_score_and_merge_refused_by_the_lock_say_what_to_do(
    run_copy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Another process holds the lock (a real flock, taken by a child): `score` and `merge`
    end in advice they can follow, not a dangling "; or use another directory"."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT); "
            "fcntl.flock(fd, fcntl.LOCK_EX); print('locked', flush=True); sys.stdin.read()",
            str(run_copy / LOCK_FILENAME),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"locked\n"
        shard = tmp_path / "shard"
        shard.mkdir()
        for name in ("manifest.json", STORE_FILENAME):
            (shard / name).write_bytes((run_copy / name).read_bytes())
        manifest = json.loads((shard / "manifest.json").read_text(encoding="utf-8"))
        manifest["config"]["shard"] = "1/1"
        (shard / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
        capsys.readouterr()
        for argv in (["score", str(run_copy)], ["merge", str(shard), "-o", str(run_copy)]):
            assert main(argv) == 2
            err = _one_error_line(capsys)
            assert "is using this run directory; run the command again once it has finished" in err
    finally:
        holder.communicate(timeout=30)


def test_input_found_bad_only_when_predicting_leaves_a_new_directory_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A verdicts file naming an unknown case is read when the task predicts, after the run
    wrote its manifest and created its store: with nothing stored, neither is left behind,
    so the directory the command made is removed again."""
    verdicts = tmp_path / "verdicts.jsonl"
    verdicts.write_text(
        json.dumps({"case_id": "no-such-case", "criterion_id": "c1", "criteria_met": True}) + "\n",
        encoding="utf-8",
    )
    out = tmp_path / "run"
    assert main(_run_args(out, verdicts)) == 2
    assert "unknown case_id 'no-such-case'" in _one_error_line(capsys)
    assert not out.exists()
    # An hf: checkpoint without torch installed (its absence injected) is refused before the
    # run writes anything.
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "torch" else find_spec(name, *a),
    )
    checkpoint = tmp_path / "ckpt"
    checkpoint.mkdir()
    (checkpoint / "config.json").write_text("{}", encoding="utf-8")
    argv = ["run", "clinconsensus", "--model", f"hf:{checkpoint}", "--cases", str(FIXTURE)]
    assert main([*argv, "--output-dir", str(tmp_path / "hf")]) == 2
    assert "torch not installed" in _one_error_line(capsys)
    assert not (tmp_path / "hf").exists()
