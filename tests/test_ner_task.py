"""The NER task end to end through the CLI, on the real corpora (skipped without the data)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from clineval.benchmarks.ner.corpora import load_ner_split
from clineval.benchmarks.ner.predictions import write_predictions
from clineval.cli import main
from clineval.store import RunStore

CORE_KEYS = (
    "token_macro_f1",
    "span_partial_f1",
    "span_exact_f1",
    "token_macro_precision",
    "token_macro_recall",
    "span_partial_precision",
    "span_partial_recall",
    "span_exact_precision",
    "span_exact_recall",
)


def _results(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "results.json").read_text(encoding="utf-8"))


def _manifest(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))


def _store_state(run_dir: Path) -> dict[str, Any]:
    """What a rerun must leave untouched: artifacts and prediction records with timestamps."""
    with sqlite3.connect(run_dir / "store.sqlite") as conn:
        artifacts = conn.execute("SELECT name, created FROM artifacts ORDER BY name").fetchall()
        records = conn.execute(
            "SELECT key, created FROM records WHERE task = 'ner:ncbi' AND kind = 'prediction'"
            " ORDER BY key"
        ).fetchall()
    return {"artifacts": artifacts, "records": records}


@pytest.fixture(scope="module")
def crf_run(tmp_path_factory: pytest.TempPathFactory, data_root: Path) -> Path:
    """One CRF run on NCBI (full train split, first 10 test documents)."""
    run_dir = tmp_path_factory.mktemp("crf") / "run"
    argv = ["run", "ner:ncbi", "--model", "baseline:crf", "--output-dir", str(run_dir)]
    argv += ["--data-dir", str(data_root), "--limit", "10"]
    assert main(argv) == 0
    return run_dir


@pytest.mark.slow
def test_crf_run_writes_results_samples_and_manifest(crf_run: Path) -> None:
    results = _results(crf_run)["ner:ncbi"]
    for key in CORE_KEYS:
        assert 0.0 <= results[key] <= 1.0, key
    assert results["n_documents"] == 10
    assert results["missing_predictions"] == 0
    assert results["n_gold_spans"] > 0 and results["n_pred_spans"] > 0
    per_type = results["per_type"]["condition"]
    assert set(per_type) == {"token", "partial", "exact", "errors"}
    assert per_type["partial"]["f1"] == pytest.approx(results["span_partial_f1"])
    assert per_type["token"]["f1"] == pytest.approx(results["token_macro_f1"])  # one type
    notes = _manifest(crf_run)["tasks"]["ner:ncbi"]
    files = notes["test_split"]["files"]
    assert files[0]["path"].endswith("NCBItestset_corpus.txt")
    assert len(files[0]["sha256"]) == 64
    assert notes["test_split"]["spans"] == 960  # the published test gold count
    assert notes["crf_trained_now"] is True
    assert notes["crf_train_documents"] == 593  # the NCBI train split
    phases = notes["phase_seconds"]
    assert list(phases) == ["load", "predict", "evaluate"]
    assert all(v >= 0 for v in phases.values())
    assert sum(phases.values()) == pytest.approx(notes["seconds"], abs=0.01)
    assert phases["predict"] > phases["evaluate"]  # training the CRF is the long part
    rows = [json.loads(line) for line in (crf_run / "samples.jsonl").read_text().splitlines()]
    assert len(rows) == 10
    row = rows[0]
    assert set(row) >= {"task", "id", "text", "gold", "pred", "scores"}
    for start, end, kind in row["gold"] + row["pred"]:
        assert 0 <= start < end <= len(row["text"]) and kind == "condition"
    # per-document counts add up to the corpus counts
    total = sum(r["scores"]["partial"]["correct"] for r in rows)
    assert total == results["span_partial_counts"]["correct"]


@pytest.mark.slow
def test_rerun_reuses_model_and_predictions(crf_run: Path, data_root: Path) -> None:
    before = _store_state(crf_run)
    results_before = _results(crf_run)
    argv = ["run", "ner:ncbi", "--model", "baseline:crf", "--output-dir", str(crf_run)]
    assert main([*argv, "--data-dir", str(data_root), "--limit", "10"]) == 0
    assert _store_state(crf_run) == before
    assert _results(crf_run) == results_before
    notes = _manifest(crf_run)["tasks"]["ner:ncbi"]
    assert notes["crf_trained_now"] is False
    assert notes["predicted_now"] == 0
    # re-scoring from the store alone gives the same numbers
    assert main(["score", str(crf_run), "--data-dir", str(data_root)]) == 0
    assert _results(crf_run) == results_before
    assert _store_state(crf_run) == before


@pytest.mark.slow
def test_crf_beats_the_gliner_floor_on_ncbi_test(
    crf_run: Path, data_root: Path, tmp_path: Path
) -> None:
    # A copy of the run dir, full test split: the stored model is reused, 90 more documents
    # predicted (a copy, so the shared fixture stays as the other tests expect it).
    run_dir = tmp_path / "run"
    shutil.copytree(crf_run, run_dir)
    # one stored prediction made by another CRF model (older settings): predicted again
    with RunStore.in_dir(run_dir) as store:
        records = store.records("ner:ncbi", "prediction")
        stale_id = next(iter(records))
        store.put_record("ner:ncbi", "prediction", stale_id, {**records[stale_id], "model": "old"})
    argv = ["run", "ner:ncbi", "--model", "baseline:crf", "--output-dir", str(run_dir)]
    assert main([*argv, "--data-dir", str(data_root)]) == 0
    results = _results(run_dir)["ner:ncbi"]
    assert results["n_documents"] == 100
    assert results["n_gold_spans"] == 960
    notes = _manifest(run_dir)["tasks"]["ner:ncbi"]
    assert notes["predicted_now"] == 91 and notes["crf_trained_now"] is False
    with RunStore.in_dir(run_dir) as store:
        assert store.records("ner:ncbi", "prediction")[stale_id]["model"] == notes["crf_artifact"]
    assert results["span_partial_f1"] > 0.7567  # zero-shot gliner_large-v2.5, NCER paper


def _gold_file(tmp_path: Path, data_root: Path, dataset: str, keep: int | None = None) -> Path:
    split = load_ner_split(dataset, "test", data_root)
    docs = split.documents if keep is None else split.documents[:keep]
    path = tmp_path / f"{dataset}-gold-predictions.jsonl"
    write_predictions(path, {doc.id: doc.entities for doc in docs})
    return path


@pytest.mark.parametrize("dataset", ["ncbi", "chia"])
def test_gold_as_predictions_scores_one(tmp_path: Path, data_root: Path, dataset: str) -> None:
    path = _gold_file(tmp_path, data_root, dataset)
    run_dir = tmp_path / "run"
    argv = ["run", f"ner:{dataset}", "--model", f"predictions:{path}", "--output-dir"]
    assert main([*argv, str(run_dir), "--data-dir", str(data_root)]) == 0
    results = _results(run_dir)[f"ner:{dataset}"]
    for key in CORE_KEYS:
        assert results[key] == 1.0, key
    assert results["missing_predictions"] == 0
    assert results["n_pred_spans"] == results["n_gold_spans"]


def test_missing_documents_are_counted(tmp_path: Path, data_root: Path) -> None:
    path = _gold_file(tmp_path, data_root, "ncbi", keep=30)
    run_dir = tmp_path / "run"
    argv = ["run", "ner:ncbi", "--model", f"predictions:{path}", "--output-dir", str(run_dir)]
    # results written, and the run fails for the documents without a prediction
    assert main([*argv, "--data-dir", str(data_root)]) == 1
    results = _results(run_dir)["ner:ncbi"]
    assert results["missing_predictions"] == 70
    assert results["span_partial_precision"] == 1.0
    assert results["span_partial_recall"] < 0.5


def _bad_variants(good_line: dict[str, Any]) -> dict[str, tuple[list[str], int]]:
    """name -> (file lines, line of the error)."""
    line = json.dumps(good_line)
    first = good_line["entities"][0]
    return {
        "bad_json": ([line, "", '{"id": "1", "entities": [}'], 3),
        "unknown_id": ([line, json.dumps({"id": "NOPE", "entities": []})], 2),
        "bad_offsets": (
            [json.dumps({**good_line, "entities": [{**first, "end": first["start"]}]})],
            1,
        ),
        "unknown_type": ([json.dumps({**good_line, "entities": [{**first, "type": "Pet"}]})], 1),
    }


@pytest.mark.parametrize("variant", ["bad_json", "unknown_id", "bad_offsets", "unknown_type"])
def test_bad_predictions_file_exit_2_keeps_earlier_results(
    tmp_path: Path, data_root: Path, variant: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _gold_file(tmp_path, data_root, "ncbi", keep=5)
    run_dir = tmp_path / "run"
    argv = ["run", "ner:ncbi", "--model", f"predictions:{path}", "--output-dir", str(run_dir)]
    argv += ["--data-dir", str(data_root), "--limit", "5"]  # the 5 documents the file has
    assert main(argv) == 0
    before = _results(run_dir)
    good_line = json.loads(path.read_text().splitlines()[0])
    lines, lineno = _bad_variants(good_line)[variant]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert err.startswith(f"error: {path}:{lineno}: ")
    assert _results(run_dir) == before  # the earlier results are kept


def test_failing_second_task_keeps_first_tasks_results(
    tmp_path: Path, data_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # NCBI ids are unknown to BC5CDR: the second task fails on line 1, the first is written.
    path = _gold_file(tmp_path, data_root, "ncbi")
    run_dir = tmp_path / "run"
    argv = ["run", "ner:ncbi", "ner:bc5cdr", "--model", f"predictions:{path}"]
    assert main([*argv, "--output-dir", str(run_dir), "--data-dir", str(data_root)]) == 2
    assert f"{path}:1: unknown id " in capsys.readouterr().err
    assert _results(run_dir)["ner:ncbi"]["span_exact_f1"] == 1.0
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["status"].startswith("stopped: InputError:")
    assert "ner:ncbi" in manifest["tasks"]


def test_tasks_are_registered_with_data_status(
    data_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from clineval.benchmarks.registry import get_task, task_names

    names = [n for n in task_names() if n.startswith("ner:")]
    assert names == ["ner:ncbi", "ner:bc5cdr", "ner:biored", "ner:chia"]
    statuses = get_task("ner:chia").data_status(data_root)
    assert {s.relative_path for s in statuses} >= {"ner/chia/chia_without_scope.zip"}
    assert all(s.status in ("ok", "not checked") for s in statuses)
    missing = get_task("ner:ncbi").data_status(data_root / "nowhere")
    assert all(s.status == "missing" for s in missing)
    assert main(["tasks", "--data-dir", str(data_root)]) == 0
    assert "ner:biored" in capsys.readouterr().out


def test_model_tokenizer_option_needs_a_model_tokenizer(tmp_path: Path, data_root: Path) -> None:
    path = _gold_file(tmp_path, data_root, "ncbi", keep=3)
    argv = ["run", "ner:ncbi", "--model", f"predictions:{path}", "--output-dir"]
    argv += [str(tmp_path / "run"), "--data-dir", str(data_root)]
    assert main([*argv, "--option", "ner.tokenizer=model"]) == 2


def test_misspelt_tokenizer_option_is_an_input_error(
    tmp_path: Path, data_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _gold_file(tmp_path, data_root, "ncbi", keep=3)
    argv = ["run", "ner:ncbi", "--model", f"predictions:{path}", "--output-dir"]
    argv += [str(tmp_path / "run"), "--data-dir", str(data_root)]
    capsys.readouterr()
    assert main([*argv, "--option", "ner.tokenizer=modle"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "ner.tokenizer='modle'" in err


def test_unknown_baseline_is_an_input_error(tmp_path: Path, data_root: Path) -> None:
    argv = ["run", "ner:ncbi", "--model", "baseline:svm", "--output-dir", str(tmp_path / "r")]
    assert main([*argv, "--data-dir", str(data_root), "--limit", "1"]) == 2


def test_corrupt_data_file_is_exit_2_naming_it(
    tmp_path: Path, data_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A data root whose NCBI test file differs by one character from the published file.
    root = tmp_path / "data"
    (root / "ner" / "ncbi_disease").mkdir(parents=True)
    for source in (data_root / "ner" / "ncbi_disease").iterdir():
        target = root / "ner" / "ncbi_disease" / source.name
        if source.name == "NCBItestset_corpus.txt":
            text = source.read_text(encoding="utf-8")
            target.write_text(text.replace("cancer", "cancen", 1), encoding="utf-8")
        else:
            target.symlink_to(source)
    argv = ["run", "ner:ncbi", "--model", "baseline:crf", "--output-dir", str(tmp_path / "r")]
    assert main([*argv, "--data-dir", str(root)]) == 2
    err = capsys.readouterr().err.strip()
    assert "NCBItestset_corpus.txt: checksum mismatch" in err
    assert len(err.splitlines()) == 1


def test_ner_shards_partition_the_documents_and_merge_to_the_unsharded_result(
    tmp_path: Path, data_root: Path
) -> None:
    """NER runs used to ignore --shard and score every document in every shard. Now each shard
    scores its part (disjoint, together everything) and `clineval merge` of the three shards
    gives exactly the unsharded results (predictions for 60 of the 100 documents, so the
    missing ones count in both, and every run, each shard's and the merge, exits 1)."""
    path = _gold_file(tmp_path, data_root, "ncbi", keep=60)
    common = ["run", "ner:ncbi", "--model", f"predictions:{path}", "--data-dir", str(data_root)]
    assert main([*common, "--output-dir", str(tmp_path / "whole")]) == 1
    shard_dirs = [tmp_path / f"shard{i}" for i in (1, 2, 3)]
    for i, shard_dir in enumerate(shard_dirs, start=1):
        assert main([*common, "--shard", f"{i}/3", "--output-dir", str(shard_dir)]) == 1
    scored = [_manifest(d)["tasks"]["ner:ncbi"]["documents_scored"] for d in shard_dirs]
    ids = [
        {json.loads(line)["id"] for line in (d / "samples.jsonl").read_text().splitlines()}
        for d in shard_dirs
    ]
    whole_ids = {
        json.loads(line)["id"]
        for line in (tmp_path / "whole" / "samples.jsonl").read_text().splitlines()
    }
    assert all(0 < n < 100 for n in scored) and sum(scored) == 100
    assert ids[0] | ids[1] | ids[2] == whole_ids and sum(len(s) for s in ids) == len(whole_ids)
    merged = tmp_path / "merged"
    assert main(["merge", *map(str, shard_dirs), "--output-dir", str(merged)]) == 1
    assert _results(merged) == _results(tmp_path / "whole")
    assert _results(merged)["ner:ncbi"]["missing_predictions"] == 40


def test_chia_runs_without_the_split_ids_file_and_scores_the_same(
    tmp_path: Path, data_root: Path
) -> None:
    """`clineval data fetch chia` cannot get ncer_split_ids.json (it has no official address);
    the run used to stop with "data file not found". Without it the split is recomputed from
    the zip, and the scores equal those of a run with the file (the shipped file is the
    independent reference for the recomputed split)."""
    import shutil

    root = tmp_path / "data"
    (root / "ner" / "chia").mkdir(parents=True)
    zip_name = "ner/chia/chia_without_scope.zip"
    shutil.copy(data_root / zip_name, root / zip_name)
    gold = _gold_file(tmp_path, data_root, "chia", keep=40)
    argv = ["run", "ner:chia", "--model", f"predictions:{gold}", "--limit", "40"]
    assert main([*argv, "--data-dir", str(data_root), "-o", str(tmp_path / "with")]) == 0
    assert main([*argv, "--data-dir", str(root), "-o", str(tmp_path / "without")]) == 0
    assert _results(tmp_path / "without") == _results(tmp_path / "with")
    notes = _manifest(tmp_path / "without")["tasks"]["ner:chia"]["test_split"]
    assert "derived from the zip" in json.dumps(notes)


def test_ncer_preparation_option_keeps_bc5cdr_duplicates(
    tmp_path: Path, data_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # NCER's gold keeps the 4 duplicate annotations of the test file (9,928 spans against
    # clineval's 9,924; counted from the raw XML in tests/test_ner_independent_counts.py).
    # Predictions: clineval's gold without the 4 duplicated spans. Matched gold is remembered by
    # value (nervaluate), so a found duplicate costs nothing, a missed one counts twice:
    # clineval's gold misses 4 of 9,924, NCER's 8 of 9,928. Tokens cannot see duplicates.
    ncer = load_ner_split("bc5cdr", "test", data_root, "ncer")
    doubled = set()
    for doc in ncer.documents:
        seen = set()
        for span in doc.entities:
            doubled.update({(doc.id, span)} & seen)
            seen.add((doc.id, span))
    assert len(doubled) == 4
    clean = load_ner_split("bc5cdr", "test", data_root)
    path = tmp_path / "predictions.jsonl"
    kept = {d.id: [s for s in d.entities if (d.id, s) not in doubled] for d in clean.documents}
    write_predictions(path, kept)
    recall = {}
    for preparation in ("clineval", "ncer"):
        run_dir = tmp_path / preparation
        argv = ["run", "ner:bc5cdr", "--model", f"predictions:{path}", "--output-dir"]
        argv += [str(run_dir), "--data-dir", str(data_root)]
        argv += ["--option", f"ner.preparation={preparation}"]
        assert main(argv) == 0
        results = _results(run_dir)["ner:bc5cdr"]
        assert results["span_exact_precision"] == 1.0
        recall[preparation] = (results["n_gold_spans"], results["span_exact_recall"])
        notes = _manifest(run_dir)["tasks"]["ner:bc5cdr"]["test_split"]
        assert notes["preparation"] == preparation
    assert recall["clineval"] == (9924, pytest.approx(9920 / 9924))
    assert recall["ncer"] == (9928, pytest.approx(9920 / 9928))
    capsys.readouterr()
    bad = ["run", "ner:bc5cdr", "--model", f"predictions:{path}", "--output-dir"]
    bad += [str(tmp_path / "bad"), "--data-dir", str(data_root)]
    assert main([*bad, "--option", "ner.preparation=bigbio"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and "ner.preparation" in err, err
