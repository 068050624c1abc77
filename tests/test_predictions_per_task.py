"""One run from a predictions file per task (`--model predictions:TASK=FILE,TASK=FILE`), on the
real NCER test splits: the two files make one results table, each task's manifest notes record
its own file's path and sha256, a BC5CDR tagger's own type names (Chemical, Disease) are mapped
to the OMOP domains, and a spec that leaves a task without a file (or names a task the run does
not have) is one line naming --model, before anything is written."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from clineval.benchmarks.ner.corpora import TYPE_MAPS, load_ner_split
from clineval.cli import main

LIMIT = 3


def _gold_file(tmp_path: Path, data_root: Path, dataset: str, corpus_names: bool) -> Path:
    """The first LIMIT documents' gold spans as predictions, typed by the corpus's own names
    (Chemical, Disease) when `corpus_names`, else by the OMOP domains."""
    back = {target: source for source, target in TYPE_MAPS[dataset].items()}
    split = load_ner_split(dataset, "test", data_root)
    path = tmp_path / f"{dataset}.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        for doc in split.documents[:LIMIT]:
            ents = [
                {"start": s.start, "end": s.end, "type": back[s.type] if corpus_names else s.type}
                for s in doc.entities
            ]
            fh.write(json.dumps({"id": doc.id, "entities": ents}) + "\n")
    return path


def test_one_run_scores_a_predictions_file_per_task(tmp_path: Path, data_root: Path) -> None:
    ncbi = _gold_file(tmp_path, data_root, "ncbi", corpus_names=False)
    cdr = _gold_file(tmp_path, data_root, "bc5cdr", corpus_names=True)
    out = tmp_path / "run"
    spec = f"predictions:ner:ncbi={ncbi},ner:bc5cdr={cdr}"
    argv = ["run", "ner:ncbi", "ner:bc5cdr", "--model", spec, "--data-dir", str(data_root)]
    assert main([*argv, "--limit", str(LIMIT), "-o", str(out)]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["ner:ncbi"]["token_macro_f1"] == pytest.approx(1.0)
    assert results["ner:bc5cdr"]["token_macro_f1"] == pytest.approx(1.0)
    notes = json.loads((out / "manifest.json").read_text())["tasks"]
    for task, path in (("ner:ncbi", ncbi), ("ner:bc5cdr", cdr)):
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        assert notes[task]["predictions_file"] == {"path": str(path), "sha256": digest}
    assert set(notes["ner:bc5cdr"]["predictions_types"]["mapped"]) == {
        "Chemical -> drug",
        "Disease -> condition",
    }
    assert "predictions_types" not in notes["ner:ncbi"]


@pytest.mark.parametrize(
    ("items", "fragment"),
    [
        ("ner:ncbi={ncbi}", "no file for task 'ner:bc5cdr'"),
        (
            "ner:ncbi={ncbi},ner:bc5cdr={ncbi},ner:chia={ncbi}",
            "'ner:chia' is not a task of this run",
        ),
        ("ner:ncbi={ncbi},{ncbi}", "is not TASK=FILE"),
        ("ner:ncbi={ncbi},ner:bc5cdr={missing}", "predictions file not found"),
    ],
)
def test_a_bad_per_task_spec_is_one_line_before_anything_is_written(
    tmp_path: Path,
    data_root: Path,
    capsys: pytest.CaptureFixture[str],
    items: str,
    fragment: str,
) -> None:
    ncbi = _gold_file(tmp_path, data_root, "ncbi", corpus_names=False)
    spec = "predictions:" + items.format(ncbi=ncbi, missing=tmp_path / "nope.jsonl")
    out = tmp_path / "run"
    argv = ["run", "ner:ncbi", "ner:bc5cdr", "--model", spec, "--data-dir", str(data_root)]
    assert main([*argv, "--limit", str(LIMIT), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert fragment in err
    assert not out.exists()
