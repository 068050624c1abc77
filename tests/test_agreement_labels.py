"""judge-agreement labels: `labeler` must be a string; one (labeler, case, criterion) label
line is counted once (an identical copy is reported, a contradicting one is an error naming
both lines). Before, any labeler value was str()-ed and a copied line was counted twice."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_clinconsensus_agreement import _scored_run, _write

from clineval.benchmarks.clinconsensus.cases import fixture_path, load_cases
from clineval.cli import main


@pytest.fixture
def run(tmp_path: Path) -> Path:
    judge = np.zeros(120)
    judge[::2] = 1.0  # met, not met, met, ...
    return _scored_run(tmp_path, judge)


def _label(i: int, met: bool, **extra: Any) -> dict[str, Any]:
    """A label for the i-th (case, criterion) of the first 4 fixture cases."""
    pairs = [(c, r) for c in load_cases(fixture_path())[:4] for r in c.rubrics]
    case, rubric = pairs[i]
    return {
        "case_id": case.case_id,
        "criterion_id": rubric.criterion_id,
        "criteria_met": met,
        **extra,
    }


def _agreement(run: Path, labels: Path) -> dict[str, Any]:
    assert main(["judge-agreement", str(run), "--labels", str(labels)]) == 0
    return json.loads((run / "judge_agreement.json").read_text("utf-8"))  # type: ignore[no-any-return]


@pytest.mark.parametrize("labeler", [42, ["dr a"], {"name": "a"}, True, "", "  "])
def test_a_labeler_that_is_not_a_name_is_refused(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], labeler: Any
) -> None:
    labels = _write(tmp_path / "labels.jsonl", [_label(0, True), _label(1, True, labeler=labeler)])
    assert main(["judge-agreement", str(run), "--labels", str(labels)]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {labels}:2: 'labeler' must be a non-empty string (or left out)\n"


def test_an_identical_copy_is_counted_once_and_reported(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [_label(i, i % 3 == 0, labeler="dr a") for i in range(6)]
    once = _agreement(run, _write(tmp_path / "once.jsonl", rows))
    capsys.readouterr()
    # lines 7 and 8 repeat lines 1 and 4 (an export appended twice, in part)
    twice = _agreement(run, _write(tmp_path / "twice.jsonl", [*rows, rows[0], rows[3]]))
    assert twice["n_labels"] == once["n_labels"] == 6
    assert twice["judges"] == once["judges"]  # the copies weigh nothing
    assert twice["duplicate_lines"] == [[7, 1], [8, 4]] and once["duplicate_lines"] == []
    assert (
        "2 duplicate label line(s) counted once: line 7 (= 1), 8 (= 4)" in capsys.readouterr().out
    )


def test_a_contradicting_copy_is_an_error_naming_both_lines(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [_label(0, True), _label(1, False), _label(0, False)]  # no labeler: one unnamed one
    labels = _write(tmp_path / "labels.jsonl", rows)
    assert main(["judge-agreement", str(run), "--labels", str(labels)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {labels}:3: the unnamed rater labels item ")
    assert err.endswith("false here and true on line 1: keep one of lines 1 and 3\n")
    assert err.count("\n") == 1


def test_two_labelers_of_one_criterion_are_both_compared(run: Path, tmp_path: Path) -> None:
    rows = [_label(0, True, labeler="dr a"), _label(0, False, labeler="dr b")]
    result = _agreement(run, _write(tmp_path / "labels.jsonl", rows))
    assert result["n_labels"] == 2 and result["n_labelers"] == 2
    assert result["judges"]["verdicts-file"]["n_pairs"] == 2
    assert result["duplicate_lines"] == []
