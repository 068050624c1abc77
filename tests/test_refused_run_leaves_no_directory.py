"""A run refused for its input leaves no directory behind, whichever step finds the input bad:
the checks made before the run directory exists (an unwritable --batch-file-out), or a task's
load, which runs under the directory's lock (a missing --cases file, a missing corpus). A
directory that existed before the command is left in place."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from clineval.cli import main

SYNTHETIC = ["--option", "tcm.data=synthetic", "--limit", "2"]
LOCAL = "openai:fixture@http://127.0.0.1:9/v1"  # never contacted: the runs are refused first


def _refused(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(args) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1, err
    return lines[0]


def test_a_missing_cases_file_leaves_no_run_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "runs" / "cc"
    missing = tmp_path / "nowhere.jsonl"
    line = _refused(["run", "clinconsensus", "--cases", str(missing), "-m", LOCAL, "-o", str(out)],
                    capsys)  # fmt: skip
    assert str(missing) in line and "not found" in line
    assert os.listdir(tmp_path) == []  # neither the run directory nor the parent made for it


def test_a_missing_corpus_leaves_no_run_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty, out = tmp_path / "empty-data-root", tmp_path / "run"
    empty.mkdir()
    line = _refused(["run", "tcm-sd", "--data-dir", str(empty), "-m", "baseline:tfidf",
                     "-o", str(out)], capsys)  # fmt: skip
    assert "test.json" in line
    assert sorted(os.listdir(tmp_path)) == ["empty-data-root"]


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc")
def test_an_unwritable_batch_directory_is_refused_before_the_run_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # /proc takes no new entries, even for root (a read-only mode would not stop root)
    out = tmp_path / "run"
    line = _refused(["run", "tcm-sd", *SYNTHETIC, "-m", LOCAL, "--batch-file-out",
                     "/proc/clineval-batch", "-o", str(out)], capsys)  # fmt: skip
    assert line.startswith("error: /proc/clineval-batch: --batch-file-out: cannot write")
    assert os.listdir(tmp_path) == []


def test_a_directory_that_existed_is_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("the user's own file\n")
    _refused(["run", "clinconsensus", "--cases", str(tmp_path / "nowhere.jsonl"), "-m", LOCAL,
              "-o", str(out)], capsys)  # fmt: skip
    assert (out / "notes.txt").read_text() == "the user's own file\n"
