"""An evaluation input with no records is exit 2 "nothing to evaluate" naming the file, not a
run that "works" with n = 0. (NER splits are checksum-verified, so an empty one is already a
checksum mismatch; an empty ClinConsensus cases file is "no cases in file".)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clineval.benchmarks.tcm_sd.dataset import EXPECTED_LABELS, VOCAB_NAME
from clineval.cli import main


def _root(tmp_path: Path, test_text: str) -> Path:
    """A data root with a fixture/synthetic vocabulary of 148 labels and the given test split."""
    root = tmp_path / "data"
    (root / "tcm-sd").mkdir(parents=True)
    labels = [f"synthetic-syndrome-{i:03d}" for i in range(EXPECTED_LABELS)]
    (root / "tcm-sd" / VOCAB_NAME).write_text("\r\n".join(labels) + "\r\n", "utf-8")
    (root / "tcm-sd" / "test.json").write_text(test_text, "utf-8")
    return root


@pytest.mark.parametrize("text", ["", "\n\n  \n"], ids=["empty", "blank-lines"])
@pytest.mark.parametrize("model", ["baseline:tfidf", "predictions"])
def test_an_empty_tcm_split_is_nothing_to_evaluate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, model: str
) -> None:
    root = _root(tmp_path, text)
    if model == "predictions":
        preds = tmp_path / "preds.jsonl"
        preds.write_text(json.dumps({"id": "x", "label": "synthetic-syndrome-000"}) + "\n")
        model = f"predictions:{preds}"
    out = tmp_path / "run"
    argv = ["run", "tcm-sd", "--model", model, "--data-dir", str(root), "--output-dir", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    test_file = root / "tcm-sd" / "test.json"
    assert err == f"error: {test_file}: nothing to evaluate: the test split holds no records\n"
    assert not (out / "results.json").exists()


def test_an_empty_clinconsensus_cases_file_is_refused_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = tmp_path / "cases.jsonl"
    cases.write_text("\n", "utf-8")
    out = tmp_path / "run"
    argv = ["run", "clinconsensus", "--model", "openai:m@http://127.0.0.1:9/v1"]
    assert main([*argv, "--cases", str(cases), "--output-dir", str(out)]) == 2
    assert capsys.readouterr().err == f"error: {cases}: no cases in file\n"
