"""Under --json, stdout is one JSON document whatever happens: a command refused with exit 2
(bad flag, missing file, not a run, unknown task), stopped by Ctrl-C or SIGTERM (130 / 143), or
stopped while it starts, leaves {"status": "error", "error": LINE, "exit_code": N}, LINE being
the one line on stderr. (Success and exit 1 write the command's own document: test_cli_ux.)"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from cli_process import signal_while_starting

from clineval.cli import main


def _document(out: str) -> Any:
    return json.loads(out)  # one document: json.loads refuses anything after it


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "tcm-sd", "-m", "baseline:tfidf", "-o", "{tmp}/r", "--json", "--colour", "red"],
        ["run", "--config", "{tmp}/missing.toml", "--json"],
        ["run", "tcm-sd", "-m", "baseline:tfidf", "-o", "{tmp}/r", "--json", "--limit", "0"],
        ["run", "tcm-sdd", "-m", "baseline:tfidf", "-o", "{tmp}/r", "--json"],
        ["score", "{tmp}", "--json"],
        ["compare", "{tmp}/nothing", "--json"],
        ["tasks", "--json", "--data-dir", "{tmp}/nothing"],
    ],
    ids=["bad flag", "missing file", "bad value", "unknown task", "not a run", "no run", "no data"],
)
def test_every_refusal_is_one_document(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main([arg.replace("{tmp}", str(tmp_path)) for arg in argv])
    captured = capsys.readouterr()
    assert code == 2
    (line,) = captured.err.splitlines()
    assert line.startswith("error: ")
    assert _document(captured.out) == {
        "status": "error",
        "error": line.removeprefix("error: "),
        "exit_code": 2,
    }
    assert not (tmp_path / "r").exists()


def test_without_json_stdout_stays_empty(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["score", str(tmp_path)]) == 2
    assert capsys.readouterr().out == ""


def _stopping_run(stop: str) -> Any:
    def run(*args: Any, **kwargs: Any) -> Any:
        if stop == "SIGTERM":  # the real signal, through the handler main installs
            os.kill(os.getpid(), signal.SIGTERM)
        raise KeyboardInterrupt  # what Ctrl-C raises (SIGINT may be ignored in a CI job)

    return run


@pytest.mark.parametrize(("stop", "code"), [("SIGINT", 130), ("SIGTERM", 143)])
def test_a_stopped_run_is_one_document(
    stop: str,
    code: int,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("clineval.runner.run", _stopping_run(stop))
    argv = ["run", "tcm-sd", "-m", "baseline:tfidf", "-o", str(tmp_path / "r"), "--json"]
    assert main(argv) == code
    captured = capsys.readouterr()
    (line,) = [line for line in captured.err.splitlines() if line.startswith("aborted")]
    assert _document(captured.out) == {"status": "error", "error": line, "exit_code": code}


def test_a_signal_while_starting_is_one_document() -> None:
    proc = signal_while_starting("SIGTERM", "tasks", "--json")
    assert proc.returncode == 143, proc.stderr
    (line,) = proc.stderr.splitlines()
    assert _document(proc.stdout) == {"status": "error", "error": line, "exit_code": 143}
