"""`clineval judge-agreement`: stored verdicts vs human labels, balanced F1 vs sklearn."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score, f1_score

from clineval.benchmarks.clinconsensus.cases import fixture_path, load_cases
from clineval.cli import main

FIXTURE = fixture_path()


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return path


def _scored_run(tmp_path: Path, judge: np.ndarray) -> Path:
    """A run over the first 4 fixture cases whose stored verdicts are `judge` (nan = null)."""
    cases = load_cases(FIXTURE)[:4]
    rows = []
    for i, (case, rubric) in enumerate((c, r) for c in cases for r in c.rubrics):
        met = None if np.isnan(judge[i]) else bool(judge[i])
        rows.append(
            {"case_id": case.case_id, "criterion_id": rubric.criterion_id, "criteria_met": met}
        )
    verdicts = _write(tmp_path / "verdicts.jsonl", rows)
    out = tmp_path / "run"
    argv = ["run", "clinconsensus", "--model", f"predictions:{verdicts}", "--cases", str(FIXTURE)]
    main([*argv, "--limit", "4", "--output-dir", str(out), "--max-judge-error-rate", "1"])
    return out


def test_balanced_f1_matches_sklearn(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    human = rng.random(120) < 0.4
    judge = np.where(rng.random(120) < 0.2, ~human, human).astype(float)
    judge[rng.random(120) < 0.05] = np.nan  # a few judge errors: reported, not compared
    run = _scored_run(tmp_path, judge)
    cases = load_cases(FIXTURE)[:4]
    pairs = [(c, r) for c in cases for r in c.rubrics]
    labels = [
        {"case_id": c.case_id, "criterion_id": r.criterion_id, "criteria_met": bool(h)}
        for (c, r), h in zip(pairs, human, strict=True)
    ]
    labels_path = _write(tmp_path / "labels.jsonl", labels)
    assert main(["judge-agreement", str(run), "--labels", str(labels_path)]) == 0
    result = json.loads((run / "judge_agreement.json").read_text())
    figures = result["judges"]["verdicts-file"]
    has = ~np.isnan(judge)
    truth, pred = human[has].astype(int), judge[has].astype(int)
    assert figures["n_pairs"] == int(has.sum())
    assert figures["n_without_verdict"] == int((~has).sum())
    assert figures["balanced_f1"] == pytest.approx(f1_score(truth, pred, average="macro"))
    assert figures["f1_met"] == pytest.approx(f1_score(truth, pred, pos_label=1))
    assert figures["f1_not_met"] == pytest.approx(f1_score(truth, pred, pos_label=0))
    assert figures["cohen_kappa"] == pytest.approx(cohen_kappa_score(truth, pred))
    assert figures["accuracy"] == pytest.approx(np.mean(truth == pred))


def test_bad_labels_file_names_line(tmp_path: Path, capsys) -> None:
    run = _scored_run(tmp_path, np.ones(120))
    case = load_cases(FIXTURE)[0]
    good = {"case_id": case.case_id, "criterion_id": case.rubrics[0].criterion_id}
    # the bad row is the file's 3rd line: the blank line before it still counts as a line
    labels = tmp_path / "labels.jsonl"
    labels.write_text(
        json.dumps({**good, "criteria_met": True})
        + "\n\n"
        + json.dumps({**good, "criteria_met": 1})
        + "\n",
        "utf-8",
    )
    assert main(["judge-agreement", str(run), "--labels", str(labels)]) == 2
    assert f"{labels}:3: a graded label here, binary labels from line 1" in capsys.readouterr().err
    labels.write_text(json.dumps({**good, "criteria_met": "yes"}) + "\n", "utf-8")
    assert main(["judge-agreement", str(run), "--labels", str(labels)]) == 2
    assert f"{labels}:1: 'criteria_met' must be true or false, or a finite number" in (
        capsys.readouterr().err
    )
    # an id that is a JSON boolean is not an id
    labels = _write(tmp_path / "labels.jsonl", [{**good, "case_id": True, "criteria_met": True}])
    assert main(["judge-agreement", str(run), "--labels", str(labels)]) == 2
    assert f"{labels}:1: needs 'id' and 'criterion'" in capsys.readouterr().err
    # labels for criteria this run never judged: a clear input error, not a table of zeros
    rows = [{"case_id": "fixture-012", "criterion_id": "fixture-012-r01", "criteria_met": True}]
    labels = _write(tmp_path / "labels.jsonl", rows)
    assert main(["judge-agreement", str(run), "--labels", str(labels)]) == 2
    assert "none of the labelled (id, criterion) units" in capsys.readouterr().err


def test_a_judge_without_verdicts_has_the_same_keys_as_one_with() -> None:
    from clineval.judge_agreement import compare

    human = np.array([1.0, 0.0])
    for kind in ("binary", "graded"):
        full = compare(np.array([1.0, 1.0]), human, kind)
        empty = compare(np.array([np.nan, np.nan]), human, kind)
        assert set(empty) == set(full)
        assert empty["n"] == 0 and empty["n_without_verdict"] == 2
        counts = {"n", "n_pairs", "n_without_verdict", "n_no_majority"}
        assert all(empty[k] is None for k in set(full) - counts)


def test_broken_manifest_is_an_input_error(tmp_path: Path, capsys) -> None:
    run = _scored_run(tmp_path, np.ones(120))
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["config"] = {"seed": "not a number"}
    (run / "manifest.json").write_text(json.dumps(manifest))
    labels = _write(tmp_path / "labels.jsonl", [{"case_id": "x", "criterion_id": "y"}])
    assert main(["judge-agreement", str(run), "--labels", str(labels)]) == 2
    assert "manifest.json: manifest has no valid run config" in capsys.readouterr().err
