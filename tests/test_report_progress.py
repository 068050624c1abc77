"""The per-task progress display: counters, rate/ETA arithmetic and --quiet log lines."""

from __future__ import annotations

import logging

import pytest

from clineval import progress


def test_counters_and_quiet_summary(caplog: pytest.LogCaptureFixture) -> None:
    progress.set_quiet(True)
    try:
        with (
            caplog.at_level(logging.INFO, logger="clineval"),
            progress.task_progress("clinconsensus", total=10) as tp,
        ):
            tp.advance(3, cached=True)
            tp.advance(2)
            tp.count("judge_errors")
    finally:
        progress.set_quiet(False)
    assert progress.counters_of(tp) == {
        "done": 5,
        "total": 10,
        "cache_hits": 3,
        "judge_errors": 1,
    }
    last = caplog.records[-1].getMessage()
    assert last.startswith("clinconsensus: 5/10")
    assert "cache hits 3" in last and "judge errors 1" in last


def test_rate_excludes_cache_hits_and_eta_follows() -> None:
    tp = progress.TaskProgress("t", total=100, progress=None)
    tp.advance(40, cached=True)
    assert tp.rate() == 0.0  # nothing was computed in this process yet
    assert tp.eta_seconds() is None
    tp._started -= 10.0  # pretend 10 s have passed
    tp.advance(20)
    assert tp.rate() == pytest.approx(2.0, rel=1e-3)  # 20 made calls / 10 s
    assert tp.eta_seconds() == pytest.approx(40 / 2.0, rel=1e-3)


def test_bar_mode_runs_with_counters() -> None:
    progress.set_quiet(False)
    with progress.task_progress("ner:ncbi", total=3) as tp:
        for _ in range(3):
            tp.advance()
    assert tp.done == 3 and tp.eta_seconds() == 0.0


def test_track_still_yields_everything() -> None:
    assert list(progress.track(range(5), total=5, description="x")) == [0, 1, 2, 3, 4]


def test_without_a_terminal_progress_is_whole_lines(capsys: pytest.CaptureFixture[str]) -> None:
    """stderr captured (a log file, a pipe): whole lines, never a bar cut at 80 columns, so
    the counters at the end of the line survive. (A bar used to be written here: its last
    frame, 80 columns wide, lost the retries and the ETA.)"""
    progress.set_quiet(False)
    description = "clinconsensus judge llamacpp:/a/long/path/to/SmolLM2-135M-Instruct.Q4_1.gguf"
    with progress.task_progress(description, total=31) as tp:
        tp.advance(2)
        tp.count("judge_errors")
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == f"{description}: started (31 items)"
    assert lines[-1].startswith(f"{description}: 2/31 · ")
    assert len(lines[-1]) > 80 and lines[-1].endswith(" · ETA 0:00")
    assert "judge errors 1" in lines[-1]
