"""The progress module: counters a step can have, rates that never round to zero, whole
time-stamped lines at an interval with a heartbeat, --quiet's start and end lines, and one
shared display on a terminal. The real CLI in a log file and in a pty: test_progress_cli.py."""

from __future__ import annotations

import io
import re
import time
from collections.abc import Iterator

import pytest
from rich.console import Console

from clineval import progress
from clineval.concurrency import RunCallState
from clineval.errors import InputError

STAMP = re.compile(r"^\d\d:\d\d:\d\d ")


@pytest.fixture(autouse=True)
def _lines_mode(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test starts without --quiet and with the default interval."""
    monkeypatch.delenv(progress.INTERVAL_ENV, raising=False)
    progress.set_quiet(False)
    yield
    progress.set_quiet(False)


def _err_lines(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return capsys.readouterr().err.splitlines()


def test_a_step_shows_only_the_counters_it_can_have(capsys: pytest.CaptureFixture[str]) -> None:
    """A fit that makes no model call shows no cache hits, retries or judge errors (a tf-idf
    training used to say "judge errors 0"); a judged step shows its judge errors from the
    start; a step of model calls shows cache hits and retries."""
    with progress.step("tf-idf training", 1, unit="model") as fit:
        fit.advance()
    assert progress.counters_of(fit) == {"done": 1, "total": 1}
    end = _err_lines(capsys)[-1]
    for word in ("cache", "retries", "judge", "calls/"):
        assert word not in end

    calls = RunCallState(limit=2)
    with progress.task_progress("judged", 10, calls, counters=("judge_errors",)) as judged:
        assert judged.counts == {"cache_hits": 0, "retries": 0, "judge_errors": 0}
        judged.advance(3, cached=True)
        judged.count("judge_errors")
        judged.count("judge_reasks", 2)  # shown from its first bump on
    assert progress.counters_of(judged) == {
        "done": 3,
        "total": 10,
        "cache_hits": 3,
        "retries": 0,
        "judge_errors": 1,
        "judge_reasks": 2,
    }
    assert judged.unit == "calls"
    end = _err_lines(capsys)[-1]
    assert "cache hits 3 · retries 0 · judge errors 1 · judge reasks 2" in end


@pytest.mark.parametrize(
    "per_second", [1 / 59, 1 / 3601, 0.004, 0.3, 0.998, 1.0, 2.345, 9.96, 47.0, 12345.0, 1e-6]
)
def test_rates_never_round_to_zero(per_second: float) -> None:
    """An LLM finishing an item a minute once read "0.0 calls/s". The text's number, read back
    in its unit, is the rate to two significant figures (the oracle: plain arithmetic)."""
    text = progress.rate_text(per_second, "calls")
    number, unit = re.fullmatch(r"([\d.,]+) calls/(s|min|h)", text).groups()  # type: ignore[union-attr]
    value = float(number.replace(",", ""))
    assert value > 0
    digits = number.replace(",", "").replace(".", "").lstrip("0")
    assert len(digits) == 2 or (value >= 100 and "." not in number)  # two figures, no more
    back = value / {"s": 1, "min": 60, "h": 3600}[unit]
    assert back == pytest.approx(per_second, rel=0.05)


def test_rate_excludes_cache_hits_and_eta_follows() -> None:
    tp = progress.Step("t", total=100)
    tp.advance(40, cached=True)
    assert tp.rate() == 0.0  # nothing was computed in this process yet
    assert tp.eta_seconds() is None
    tp._started -= 10.0  # pretend 10 s have passed
    tp.advance(20)
    assert tp.rate() == pytest.approx(2.0, rel=1e-3)  # 20 made calls / 10 s
    assert tp.eta_seconds() == pytest.approx(40 / 2.0, rel=1e-3)


def test_lines_at_an_interval_with_a_heartbeat(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """stderr captured (a log file, a pipe): whole time-stamped lines, one every interval
    while the step runs, a heartbeat when nothing finished, one end line (the last line was
    once printed twice)."""
    monkeypatch.setenv(progress.INTERVAL_ENV, "0.2")
    description = "clinconsensus judge llamacpp:/a/long/path/to/SmolLM2-135M-Instruct.Q4_1.gguf"
    with progress.task_progress(description, 31, RunCallState(limit=1)) as tp:
        tp.advance(2)
        time.sleep(0.3)  # one line with progress
        time.sleep(0.5)  # then nothing finishes: heartbeats
    lines = _err_lines(capsys)
    assert all(STAMP.match(line) for line in lines), lines
    texts = [line[9:] for line in lines]
    assert texts[0] == f"{description}: started (31 calls)"
    assert texts[1].startswith(f"{description}: 2/31 calls · 0:00 elapsed · ")
    assert "still working" not in texts[1]
    beats = [t for t in texts if "still working, nothing finished for 0:0" in t]
    assert len(beats) >= 1
    assert texts[-1].startswith(f"{description}: done at 2/31 calls in 0:01 · ")
    assert len(texts[-1]) > 80 and "retries 0" in texts[-1]  # never cut at 80 columns
    assert sum("done at" in t for t in texts) == 1
    assert 3 <= len(texts) <= 8  # ~0.8 s at 0.2 s a line, with room for a busy machine


def test_quiet_prints_no_progress(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """--quiet: no progress at all, also past several intervals, also for a step an error
    stopped (the error line stays the only line); the counters are still kept."""
    monkeypatch.setenv(progress.INTERVAL_ENV, "0.1")
    progress.set_quiet(True)
    with progress.step("ner:ncbi CRF predict", 3, unit="documents") as tp:
        tp.advance()
        time.sleep(0.35)
        tp.advance(2)
    with pytest.raises(InputError), progress.step("fetch ncbi", 4, unit="files") as failing:
        failing.advance()
        raise InputError("bad file")
    assert capsys.readouterr().err == ""
    assert progress.counters_of(tp) == {"done": 3, "total": 3}


def test_a_step_that_raises_ends_with_stopped(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(KeyboardInterrupt), progress.step("fetch", 4, unit="files") as tp:
        tp.advance()
        raise KeyboardInterrupt
    assert _err_lines(capsys)[-1][9:] == "fetch: stopped at 1/4 files in 0:00"


def test_a_phase_names_the_next_part_of_a_step(capsys: pytest.CaptureFixture[str]) -> None:
    with progress.step("crf features", 5, unit="documents") as tp:
        tp.advance(5)
        tp.phase("crf L-BFGS", 60, "iterations")
        tp.advance(3)
    texts = [line[9:] for line in _err_lines(capsys)]
    assert texts[0] == "crf features: started (5 documents)"
    assert texts[1].startswith("crf features: done at 5/5 documents in 0:00")
    assert texts[2] == "crf L-BFGS: started (60 iterations)"
    assert texts[3].startswith("crf L-BFGS: done at 3/60 iterations in 0:00")


@pytest.mark.parametrize("raw", ["0", "-1", "soon", "nan", "inf"])
def test_a_bad_interval_is_an_input_error(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv(progress.INTERVAL_ENV, raw)
    with pytest.raises(InputError, match=progress.INTERVAL_ENV):
        progress.interval_seconds()
    monkeypatch.setenv(progress.INTERVAL_ENV, " 2.5 ")
    assert progress.interval_seconds() == 2.5


def test_bars_share_one_display_for_nested_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a terminal two open steps (a track inside a task, parallel CRF trainings) share one
    rich display: a second display of its own raised rich's LiveError."""
    screen = io.StringIO()
    monkeypatch.setattr(progress, "console", Console(file=screen, force_terminal=True, width=120))
    assert progress.mode() == "bars"
    with progress.step("outer", 2, unit="documents") as outer:
        for _ in progress.track(range(3), 3, "inner", unit="batches"):
            pass
        outer.advance(2)
    text = screen.getvalue()
    assert "outer" in text and "inner" in text and "3/3" in text and "2/2" in text
    assert not STAMP.search(text)  # bars, not lines


def test_track_still_yields_everything() -> None:
    assert list(progress.track(range(5), total=5, description="x")) == [0, 1, 2, 3, 4]
