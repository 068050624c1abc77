"""`clineval run --reuse DIR`: a judge study pays only for the judge calls.

Run A answers the fixture cases with candidate X and judges them with J1; run B judges the
same answers with J2, reusing A. Both talk to the real stub server (tests/llm_stub_server.py),
which counts what each model was asked: B must ask X nothing and J2 everything. A is only
read (every byte of its directory as it was, no file added, and B works when A cannot be
written at all), and B keeps what it reused, so it resumes and re-scores without A.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from llm_stub_server import StubServer

import clineval
from clineval.benchmarks.clinconsensus.cases import fixture_path
from clineval.cli import main
from clineval.config import RunConfig
from clineval.planner import plan
from clineval.store import STORE_FILENAME, RunStore

FIXTURE = str(fixture_path())  # the SYNTHETIC fixture cases
CASES, CRITERIA = 3, 4
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def stub() -> Iterator[StubServer]:
    with StubServer() as server:
        yield server


def _argv(stub: StubServer, out: Path, judge: str, *extra: str) -> list[str]:
    return [
        "run",
        "clinconsensus",
        "--model",
        f"openai:stub-candidate@{stub.base_url}",
        "--judge",
        f"openai:{judge}@{stub.base_url}",
        "--cases",
        FIXTURE,
        "--limit",
        str(CASES),
        "--option",
        f"clinconsensus.max_criteria={CRITERIA}",
        "--output-dir",
        str(out),
        *extra,
    ]


def _snapshot(directory: Path) -> dict[str, str]:
    """Every file under `directory` by relative path -> sha256 of its bytes."""
    return {
        str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def run_a(stub: StubServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Run A: candidate X judged by J1."""
    out = tmp_path_factory.mktemp("reuse") / "run-a"
    stub.reset()
    assert main(["--quiet", *_argv(stub, out, "stub-judge-1")]) == 0
    asked = stub.stats()["by_model"]
    assert asked == {"stub-candidate": CASES, "stub-judge-1": CASES * CRITERIA}
    return out


def _verdict_calls(out: Path, model: str) -> int:
    with RunStore.in_dir(out) as store:
        return sum(1 for m, _ in store.call_usage() if m == model)


def test_a_judge_study_asks_only_the_new_judge(
    stub: StubServer, run_a: Path, tmp_path: Path
) -> None:
    before = _snapshot(run_a)
    out = tmp_path / "run-b"
    stub.reset()
    assert main(["--quiet", *_argv(stub, out, "stub-judge-2", "--reuse", str(run_a))]) == 0
    # the server saw no candidate request and every J2 judge request, once
    assert stub.stats()["by_model"] == {"stub-judge-2": CASES * CRITERIA}
    assert _snapshot(run_a) == before  # not a byte of A changed, no file was added to it
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["config"]["reuse"] == [str(run_a)]
    assert manifest["reused"] == [
        {"path": str(run_a.resolve()), "calls": CASES, "by_model": {"openai:stub-candidate": CASES}}
    ]
    usage = manifest["llm_usage"]["models"]
    # the reused answers were paid for by A: counted apart, not in B's tokens
    assert usage["openai:stub-candidate"]["reused_calls"] == CASES
    assert usage["openai:stub-candidate"]["calls"] == 0
    assert usage["openai:stub-candidate"]["prompt_tokens"] == 0
    assert usage["openai:stub-judge-2"]["calls"] == CASES * CRITERIA
    assert manifest["llm_calls"]["by_model"]["openai:stub-candidate (candidate)"]["reused"] == CASES
    # the report's usage table shows them in their own column
    assert main(["report", str(out), "-o", str(tmp_path / "report.html")]) == 0
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "<th>reused calls</th>" in page
    # B's answers are A's answers, copied into B's store
    with RunStore.in_dir(run_a) as a, RunStore.in_dir(out) as b:
        a_answers = {c["key"]: c["response"]["text"] for c in a.iter_calls()}
        b_candidate = [c for c in b.iter_calls() if c["model"] == "openai:stub-candidate"]
    assert len(b_candidate) == CASES
    assert all(a_answers[c["key"]] == c["response"]["text"] for c in b_candidate)

    # B is whole without A: `score` re-scores from B alone (B's manifest still names A), and
    # a rerun asks nothing
    away = run_a.with_name("run-a-away")
    run_a.rename(away)
    try:
        assert main(["--quiet", "score", str(out)]) == 0
        stub.reset()
        assert main(["--quiet", *_argv(stub, out, "stub-judge-2")]) == 0
        assert stub.stats()["requests"] == 0
        assert main(["--quiet", "score", str(out)]) == 0
    finally:
        away.rename(run_a)


def test_a_rerun_with_reuse_reports_none_of_the_reused_calls_as_its_own(
    stub: StubServer, run_a: Path, tmp_path: Path
) -> None:
    """The same command as A into B, reusing A, with prices: nothing reaches the server, and
    results.json's usage is the manifest's (the same stored calls: every one reused, cost 0),
    not the judge's verdict records priced again."""
    prices = tmp_path / "prices.json"
    entry = {"input_per_1m": 2.5, "output_per_1m": 10.0}
    prices.write_text(json.dumps({"stub-candidate": entry, "stub-judge-1": entry}))
    out = tmp_path / "run-b-same"
    stub.reset()
    argv = _argv(stub, out, "stub-judge-1", "--reuse", str(run_a), "--price-table", str(prices))
    assert main(["--quiet", *argv]) == 0
    assert stub.stats()["requests"] == 0
    manifest = json.loads((out / "manifest.json").read_text())
    usage = json.loads((out / "results.json").read_text())["clinconsensus"]["usage"]
    assert usage == manifest["llm_usage"]
    assert usage["reused_calls"] == CASES + CASES * CRITERIA and usage["calls"] == 0
    assert usage["estimated_cost"] == 0.0 and usage["prompt_tokens"] == 0
    for model in ("openai:stub-candidate", "openai:stub-judge-1"):
        assert usage["models"][model]["calls"] == 0
        assert usage["models"][model]["estimated_cost"] == 0.0
    # a re-score reads the same calls: the same figures
    assert main(["--quiet", "score", str(out)]) == 0
    again = json.loads((out / "results.json").read_text())["clinconsensus"]["usage"]
    assert again == usage


def test_a_batch_judge_study_submits_only_the_judge_lines(
    stub: StubServer, run_a: Path, tmp_path: Path
) -> None:
    """With --batch the answers come from A as well: one batch, of J2's judge lines only."""
    out = tmp_path / "run-b-batch"
    stub.reset()
    fast = ["--option", "llm.batch_poll_s=0.01", "--option", "llm.batch_poll_max_s=0.05"]
    argv = _argv(stub, out, "stub-judge-2", "--reuse", str(run_a), "--batch", *fast)
    assert main(["--quiet", *argv]) == 0
    stats = stub.stats()
    assert stats["requests"] == 0 and stats["batches"] == 1
    assert sorted(stats["batch_lines_by_key"].values()) == [1] * (CASES * CRITERIA)
    reused = json.loads((out / "manifest.json").read_text())["reused"]
    assert [r["calls"] for r in reused] == [CASES]


def test_dry_run_counts_reused_calls_as_free(
    run_a: Path, stub: StubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def config(*reuse: str) -> RunConfig:
        return RunConfig.checked(
            tasks=["clinconsensus"],
            model=f"openai:stub-candidate@{stub.base_url}",
            judges=[f"openai:stub-judge-2@{stub.base_url}"],
            limit=CASES,
            options={"clinconsensus.max_criteria": str(CRITERIA), "clinconsensus.cases": FIXTURE},
            reuse=list(reuse),
        )

    before = _snapshot(run_a)
    without = {r["role"]: r for r in plan(config(), tmp_path / "b")["rows"]}
    summary = plan(config(str(run_a)), tmp_path / "b")
    rows = {r["role"]: r for r in summary["rows"]}
    assert without["candidate"]["to_send"] == CASES and without["candidate"]["reused"] == 0
    assert rows["candidate"]["to_send"] == 0 and rows["candidate"]["reused"] == CASES
    assert summary["reused"] == CASES
    # with the answers known, the judge prompts are counted from them, not from a bound
    assert rows["judge"]["to_send"] == CASES * CRITERIA and rows["judge"]["bounded_prompts"] == 0
    # the Python API takes the directories as paths, one or several
    api = clineval.dry_run(
        "clinconsensus",
        output_dir=tmp_path / "b",
        model=f"openai:stub-candidate@{stub.base_url}",
        judges=f"openai:stub-judge-2@{stub.base_url}",
        limit=CASES,
        options={"clinconsensus.max_criteria": CRITERIA, "clinconsensus.cases": FIXTURE},
        reuse=run_a,
    )
    assert api["reused"] == CASES
    # as the command prints it
    argv = _argv(stub, tmp_path / "b", "stub-judge-2", "--reuse", str(run_a), "--dry-run")
    assert main(argv) == 0
    printed = " ".join(capsys.readouterr().out.split())  # the console wraps long lines
    assert f"0 already stored, {CASES} answered by --reuse directories" in printed
    assert f"+{CASES} reused" in printed
    assert _snapshot(run_a) == before
    assert not (tmp_path / "b").exists()


def _read_only(source: Path, argv: list[str]) -> list[str]:
    """`argv` run where `source` cannot be written: its modes say so, and for root (whom modes
    do not stop) a read-only bind mount in a mount namespace of its own."""
    for path in source.rglob("*"):
        path.chmod(0o444)
    source.chmod(0o555)
    if os.geteuid() != 0:
        return argv
    if shutil.which("unshare") is None or subprocess.run(["unshare", "-m", "true"]).returncode:
        pytest.skip("root without a mount namespace: no way to make a directory read-only")
    src = shlex.quote(str(source))
    script = (
        f"mount --bind {src} {src} && mount -o remount,bind,ro {src} {src} && "
        f"{{ touch {src}/probe 2>/dev/null && echo 'still writable' >&2 && exit 99; }}; "
        f"exec {shlex.join(argv)}"
    )
    return ["unshare", "-m", "sh", "-c", script]


def test_a_read_only_run_directory_can_be_reused(
    stub: StubServer, run_a: Path, tmp_path: Path
) -> None:
    source = tmp_path / "read-only-a"
    shutil.copytree(run_a, source)
    out = tmp_path / "run-b"
    argv = [sys.executable, "-m", "clineval", "--quiet"]
    argv += _argv(stub, out, "stub-judge-2", "--reuse", str(source))
    stub.reset()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    try:
        command = _read_only(source, argv)
        before = _snapshot(source)
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    finally:
        source.chmod(0o755)
    assert done.returncode == 0, done.stderr[-3000:]
    assert stub.stats()["by_model"] == {"stub-judge-2": CASES * CRITERIA}
    assert _snapshot(source) == before


def test_a_source_with_a_live_writer_is_read_beside_it(
    stub: StubServer, run_a: Path, tmp_path: Path
) -> None:
    """A store with its WAL still open (a run writing it, or killed) is read with what the WAL
    holds: a call committed there only is reused too."""
    source = tmp_path / "live-a"
    shutil.copytree(run_a, source)
    writer = sqlite3.connect(source / STORE_FILENAME, isolation_level=None)
    try:
        writer.execute("PRAGMA journal_mode=WAL")
        writer.execute("PRAGMA wal_autocheckpoint=0")  # keep the change in the WAL
        writer.execute("UPDATE calls SET response = json_set(response, '$.text', 'from the WAL')")
        assert (source / f"{STORE_FILENAME}-wal").stat().st_size > 0
        out = tmp_path / "run-b"
        stub.reset()
        assert main(["--quiet", *_argv(stub, out, "stub-judge-2", "--reuse", str(source))]) == 0
    finally:
        writer.close()
    assert stub.stats()["by_model"] == {"stub-judge-2": CASES * CRITERIA}
    with RunStore.in_dir(out) as store:
        texts = {c["response"]["text"] for c in store.iter_calls() if "candidate" in c["model"]}
    assert texts == {"from the WAL"}


def _one_error_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    return lines[0]


def _file(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _empty_database(path: Path) -> Path:
    sqlite3.connect(path).close()
    return path


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda base: base / "nowhere", "no such run directory"),
        (lambda base: base, "not a run directory (no store.sqlite)"),
        (
            lambda base: (base / "file.txt", (base / "file.txt").write_text("x"))[0],
            "not a directory",
        ),
        (
            lambda base: _file(base / STORE_FILENAME, b"not a database at all" * 100).parent,
            "cannot read its run store: file is not a database",
        ),
        (
            lambda base: _empty_database(base / STORE_FILENAME).parent,
            "cannot read its run store: no such table: calls",
        ),
    ],
    ids=["missing", "no store", "a file", "not sqlite", "no calls table"],
)
def test_a_bad_reuse_directory_is_one_line_naming_the_flag(
    make: Callable[[Path], Path],
    message: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    base = tmp_path / "bad"
    base.mkdir()
    bad = make(base)
    out = tmp_path / "out"
    argv = _argv_no_server(out, "--reuse", str(bad))
    assert main(argv) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert line.startswith(f"error: --reuse {bad}: ") and message in line, line
    assert not out.exists()  # refused before anything was written
    assert main([*argv, "--dry-run"]) == 2
    assert message in _one_error_line(capsys.readouterr().err)


def test_reusing_the_output_dir_itself_is_refused(
    run_a: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _snapshot(run_a)
    assert main(_argv_no_server(run_a, "--reuse", str(run_a))) == 2
    assert "this run's own --output-dir" in _one_error_line(capsys.readouterr().err)
    link = run_a.with_name("link-to-a")
    link.symlink_to(run_a)
    assert main(_argv_no_server(run_a, "--reuse", str(link))) == 2
    assert "this run's own --output-dir" in _one_error_line(capsys.readouterr().err)
    assert _snapshot(run_a) == before


def _argv_no_server(out: Path, *extra: str) -> list[str]:
    """A run that would call a server no one listens on: refused before any call."""
    url = "http://127.0.0.1:9/v1"
    return [
        "run",
        "clinconsensus",
        "--model",
        f"openai:stub-candidate@{url}",
        "--judge",
        f"openai:stub-judge-2@{url}",
        "--cases",
        FIXTURE,
        "--limit",
        "1",
        "--output-dir",
        str(out),
        *extra,
    ]
