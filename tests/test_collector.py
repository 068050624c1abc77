"""clineval.collector: the collector's thresholds raised inside `bulk_work` (what `execute`
runs under), never lowered, and put back after, an error included."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from clineval import runner
from clineval.collector import THRESHOLDS, bulk_work


@pytest.fixture(autouse=True)
def _kept() -> Iterator[None]:
    before = gc.get_threshold()
    yield
    gc.set_threshold(*before)


def test_raised_inside_and_restored_after() -> None:
    gc.set_threshold(700, 10, 10)
    with bulk_work():
        assert gc.get_threshold() == THRESHOLDS
        assert THRESHOLDS[0] > 700
    assert gc.get_threshold() == (700, 10, 10)


def test_a_higher_threshold_of_the_process_is_kept_and_an_error_restores() -> None:
    gc.set_threshold(10**6, 5, 50)
    with pytest.raises(ValueError), bulk_work():
        assert gc.get_threshold() == (10**6, THRESHOLDS[1], max(50, THRESHOLDS[2]))
        raise ValueError("stops the work")
    assert gc.get_threshold() == (10**6, 5, 50)


def test_overlapping_blocks_restore_after_the_last_one() -> None:
    # two runs in threads: the first to end must not put the defaults back under the other
    gc.set_threshold(700, 10, 10)
    first, second = bulk_work(), bulk_work()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert gc.get_threshold() == THRESHOLDS
    second.__exit__(None, None, None)
    assert gc.get_threshold() == (700, 10, 10)


def test_execute_runs_under_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # execute's first step loads the tasks: what the thresholds are there is what it runs under
    seen: list[tuple[int, int, int]] = []

    def load(ctx: object) -> list[object]:
        seen.append(gc.get_threshold())
        raise RuntimeError("enough")

    monkeypatch.setattr(runner, "make_context", lambda *args: None)
    monkeypatch.setattr(runner, "_load_tasks", load)
    gc.set_threshold(700, 10, 10)
    with pytest.raises(RuntimeError):
        runner.execute(None, tmp_path, None, predict=False)  # type: ignore[arg-type]
    assert seen == [THRESHOLDS] and gc.get_threshold() == (700, 10, 10)
