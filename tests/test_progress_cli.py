"""Progress and the end of a run as a user meets them: the real CLI with stderr in a log file
(whole time-stamped lines, heartbeats while a model thinks), with --quiet, and in a real
terminal (a pty: bars, no lines); then the compact results table, its notes and next commands.

A SYNTHETIC TCM-SD fixture (`clineval data synth tcm-sd`) and the scriptable stub server stand
in for the data and the model: the stub answers each call after a set latency, so a step of
three calls lasts long enough for several intervals of CLINEVAL_PROGRESS_INTERVAL.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_inprocess import clineval_inprocess
from llm_stub_server import StubServer

from clineval.cli import main
from clineval.cli_output import print_results, stdout
from clineval.progress import INTERVAL_ENV

STAMP = re.compile(r"^\d\d:\d\d:\d\d ")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def stub() -> Iterator[StubServer]:
    with StubServer(latency=0.0) as server:
        yield server


@pytest.fixture(scope="module")
def tcm_data(data_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not (data_root / "tcm-sd" / "zy-bert" / "syndrome_vocab.txt").is_file():
        pytest.skip("TCM-SD label files not available")
    out = tmp_path_factory.mktemp("tcm-synthetic")
    argv = ["data", "synth", "tcm-sd", "--out", str(out), "--scale", "0.05", "--seed", "3"]
    assert main(["--quiet", *argv, "--data-dir", str(data_root)]) == 0
    return out


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", INTERVAL_ENV)}
    env.update(PYTHONUNBUFFERED="1", **extra)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return env


def _llm_run(tcm_data: Path, stub: StubServer, out: Path, *flags: str) -> list[str]:
    return [
        sys.executable, "-m", "clineval", *flags, "run", "tcm-sd",
        "--model", f"openai:cand@{stub.base_url}", "--data-dir", str(tcm_data),
        "--limit", "3", "--concurrency", "1", "--output-dir", str(out),
    ]  # fmt: skip


def _in_log(command: list[str], tmp_path: Path, **env: str) -> tuple[int, str, str]:
    """Run with stdout and stderr redirected to files, as a batch job's log."""
    with (tmp_path / "out.log").open("w") as out, (tmp_path / "err.log").open("w") as err:
        code = subprocess.run(command, stdout=out, stderr=err, env=_env(**env), timeout=300)
    return (
        code.returncode,
        (tmp_path / "out.log").read_text("utf-8"),
        (tmp_path / "err.log").read_text("utf-8"),
    )


def test_a_log_file_gets_whole_lines_and_heartbeats(
    tcm_data: Path, stub: StubServer, tmp_path: Path
) -> None:
    """Each call takes 0.9 s: between finished items the log still gets a line every
    interval, saying that nothing finished for how long (once 59 s of nothing). Rates do not
    round to zero, the step has no judge counter (it makes no judge call), its end line comes
    once, and stdout ends with the compact table, the run directory and the next commands."""
    stub.reset()
    stub.script([], default={"do": "ok", "latency": 0.9})
    out = tmp_path / "run"
    code, stdout_text, err = _in_log(
        _llm_run(tcm_data, stub, out), tmp_path, **{INTERVAL_ENV: "0.25"}
    )
    assert code == 0, err[-2000:]
    lines = err.splitlines()
    assert lines and all(STAMP.match(line) for line in lines), err
    texts = [line[9:] for line in lines]
    steps = [t for t in texts if t.startswith("tcm-sd: ")]
    assert steps[0] == "tcm-sd: started (3 calls)"
    periodic = [t for t in steps[1:-1] if " elapsed · " in t]
    assert len(periodic) >= 4  # ~2.7 s of calls at a line every 0.25 s (a busy machine: fewer)
    assert any("still working, nothing finished for 0:0" in t for t in periodic)
    assert [t for t in steps if " done at " in t] == [steps[-1]]  # the last line, once
    assert steps[-1].startswith("tcm-sd: done at 3/3 calls in 0:0")
    # the stub's canned reply names no syndrome: counted as invalid, shown once it happens
    assert re.search(
        r" · \d[\d.]* calls/(s|min) · cache hits 0 · retries 0 · invalid 3$", steps[-1]
    )
    assert not any("judge" in t or "0.0 calls" in t for t in texts)

    assert re.search(r"^tcm-sd \(fixture\)\s+0\.\d{4}\s+0\.\d{4}", stdout_text, re.MULTILINE)
    assert "tcm-sd: SYNTHETIC fixture" in stdout_text
    assert f"run directory: {out}" in stdout_text
    assert f"clineval report {out} -o {out / 'report.html'}" in stdout_text
    assert f"clineval score {out}" in stdout_text
    assert "self-judged" not in stdout_text  # no judge at all


def test_quiet_log_has_no_progress(tcm_data: Path, stub: StubServer, tmp_path: Path) -> None:
    stub.reset()
    stub.script([], default={"do": "ok", "latency": 0.4})
    code, stdout_text, err = _in_log(
        _llm_run(tcm_data, stub, tmp_path / "run", "--quiet"), tmp_path, **{INTERVAL_ENV: "0.1"}
    )
    assert code == 0, err[-2000:]
    assert err == ""
    assert "run directory:" in stdout_text  # the results are no progress: printed as always


def _in_pty(command: list[str], env: dict[str, str], columns: int = 120) -> tuple[int, str]:
    """Run in a real terminal of `columns` columns; everything it wrote, ANSI codes removed."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    proc = subprocess.Popen(
        command, stdin=slave, stdout=slave, stderr=slave, env=_env(TERM="xterm", **env)
    )
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.5)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        elif proc.poll() is not None:
            break
    os.close(master)
    code = proc.wait(timeout=60)
    return code, ANSI.sub("", b"".join(chunks).decode("utf-8", "replace").replace("\r", "\n"))


def test_a_terminal_gets_bars_and_the_wide_table(tcm_data: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    command = [
        sys.executable, "-m", "clineval", "run", "tcm-sd", "--model", "baseline:tfidf",
        "--data-dir", str(tcm_data), "--output-dir", str(out),
    ]  # fmt: skip
    code, screen = _in_pty(command, {INTERVAL_ENV: "0.1"})
    assert code == 0, screen[-2000:]
    assert "━" in screen  # a bar
    assert re.search(r"tcm-sd tf-idf training on [\d,]+ records .*1/1 model", screen)
    assert re.search(r"tcm-sd tfidf predict .*1/1 batches", screen)
    assert not any(STAMP.match(line) for line in screen.splitlines())  # no log lines
    # 120 columns: value and interval side by side, one line per task
    assert re.search(r"^tcm-sd \(fixture\)\s+0\.\d{4} \[0\.\d{4}, 0\.\d{4}\]", screen, re.M)

    quiet = [*command[:3], "--quiet", *command[3:-1], str(tmp_path / "quiet")]
    code, screen = _in_pty(quiet, {INTERVAL_ENV: "0.1"})
    assert code == 0, screen[-2000:]
    assert "━" not in screen and not any(STAMP.match(line) for line in screen.splitlines())
    assert re.search(r"^tcm-sd \(fixture\)\s+0\.\d{4} \[", screen, re.M)  # the results


def test_a_bad_interval_is_one_error_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(INTERVAL_ENV, raising=False)
    done = clineval_inprocess("tasks", env={INTERVAL_ENV: "often"}, quiet=False)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"error: ${INTERVAL_ENV}='often': expected a number of seconds above 0"
    ]


def _ner_results(n: int) -> dict[str, dict[str, float]]:
    """NER-shaped results with stored intervals, as a task that stores them would write."""
    names = ("ncbi", "bc5cdr", "biored", "chia")[:n]
    results: dict[str, dict[str, float]] = {}
    for i, name in enumerate(names):
        metrics: dict[str, object] = {"n_documents": 100 + i}
        for j, key in enumerate(("token_macro_f1", "span_partial_f1", "span_exact_f1")):
            value = 0.5 + 0.1 * i + 0.01 * j
            metrics[key] = value
            metrics[f"{key}_ci"] = [value - 0.04, value + 0.03]
        results[f"ner:{name}"] = metrics  # type: ignore[assignment]
    return results


@pytest.mark.parametrize(("width", "stacked"), [(100, False), (80, True)])
def test_the_ner_suite_fits_its_console(
    width: int, stacked: bool, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Four NER tasks: one table of tasks x headline metrics (once 4 tables, 77 lines). At
    100 columns a line per task; at 80 (rich's width for a file) the interval under its value."""
    monkeypatch.setattr(stdout, "width", width)
    print_results(_ner_results(4))
    lines = capsys.readouterr().out.splitlines()
    assert max(len(line) for line in lines) <= width
    header = lines[0].split()
    assert header == ["task", "token_macro_f1", "span_partial_f1", "span_exact_f1"]
    rows = [line for line in lines if line.startswith("ner:")]
    assert [r.split()[0] for r in rows] == ["ner:ncbi", "ner:bc5cdr", "ner:biored", "ner:chia"]
    first = "0.5000 [0.4600, 0.5300]"
    assert (first in rows[0]) is not stacked
    if stacked:
        assert (
            rows[0].split()[1] == "0.5000" and "[0.4600, 0.5300]" in lines[lines.index(rows[0]) + 1]
        )
    assert len(lines) <= 12


@pytest.mark.slow
def test_the_crf_suite_names_its_parts_in_a_log(data_root: Path, tmp_path: Path) -> None:
    """The NER CRF run with stderr in a file (once: 7 minutes of nothing, then one frame cut
    at 80 columns): a line per named part of each corpus' training, then the compact table."""
    out = tmp_path / "run"
    command = [
        sys.executable, "-m", "clineval", "run", "ner:ncbi", "ner:bc5cdr",
        "--model", "baseline:crf", "--limit", "5", "--data-dir", str(data_root),
        "--output-dir", str(out),
    ]  # fmt: skip
    code, stdout_text, err = _in_log(command, tmp_path, **{INTERVAL_ENV: "2"}, COLUMNS="100")
    assert code == 0, err[-2000:]
    texts = [line[9:] for line in err.splitlines() if STAMP.match(line)]
    assert len(texts) == len(err.splitlines())
    assert texts[0] == "CRF training (bc5cdr, ncbi): started (2 models)"
    assert any(t.startswith("CRF training (bc5cdr, ncbi): done at 2/2 models") for t in texts)
    for corpus in ("ncbi", "bc5cdr"):
        for part in ("feature generation", "feature generation (crfsuite)", "training (L-BFGS)"):
            assert f"ner:{corpus} CRF {part}: started" in "\n".join(texts)
            assert any(t.startswith(f"ner:{corpus} CRF {part}: done at") for t in texts)
        assert any(t.startswith(f"ner:{corpus} CRF predict: done at 5/5 documents") for t in texts)
    results = json.loads((out / "results.json").read_text("utf-8"))
    rows = [line for line in stdout_text.splitlines() if line.startswith("ner:")]
    assert [r.split()[0] for r in rows] == list(results)
    assert f"{results['ner:ncbi']['token_macro_f1']:.4f} [" in rows[0]
    table = stdout_text.split("[95% interval]")[0].splitlines()
    assert len(table) == 4 and max(len(line) for line in table) <= 100  # header, rule, 2 rows


def test_a_self_judged_run_says_so_at_its_end(
    stub: StubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The candidate judging its own answers is said beside the numbers; with another judge
    it is not. The ClinConsensus fixture (flagged fixture) and the stub stand in."""
    stub.reset()
    monkeypatch.setattr(stdout, "width", 100)  # in process: the results console as at COLUMNS=100
    base = [
        "run", "clinconsensus",
        "--model", f"openai:cand@{stub.base_url}", "--option", "clinconsensus.cases=fixture",
        "--option", "clinconsensus.max_criteria=2", "--limit", "2",
    ]  # fmt: skip
    outputs = {}
    for name, extra in (("self", []), ("other", ["--judge", f"openai:judge@{stub.base_url}"])):
        out = tmp_path / name
        done = clineval_inprocess(*base, *extra, "--output-dir", str(out))
        assert done.returncode == 0, done.stderr[-2000:]
        outputs[name] = done.stdout
    assert re.search(r"^clinconsensus \(fixture\)\s+0\.\d{4} \[", outputs["self"], re.M)
    assert (
        "clinconsensus: self-judged: the judge was the candidate model (openai:cand)"
        in outputs["self"]
    )
    assert "self-judged" not in outputs["other"]
    assert "clinconsensus: fixture data" in outputs["other"]
