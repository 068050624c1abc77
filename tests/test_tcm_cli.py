"""TCM-SD end to end through `clineval.cli.main`, on a small synthetic fixture."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sklearn.metrics import accuracy_score, classification_report, f1_score

from clineval.benchmarks.tcm_sd.dataset import read_vocab
from clineval.benchmarks.tcm_sd.synthetic import write_synthetic
from clineval.cli import main
from clineval.store import RunStore


@pytest.fixture(scope="module")
def fixture_root(data_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not (data_root / "tcm-sd" / "zy-bert" / "syndrome_vocab.txt").is_file():
        pytest.skip("TCM-SD label files not available")
    out = tmp_path_factory.mktemp("tcm-synthetic")
    write_synthetic(out, seed=1, data_dir=data_root, scale=0.06)
    return out


def _results(run: Path) -> dict[str, Any]:
    return json.loads((run / "results.json").read_text(encoding="utf-8"))["tcm-sd"]


def _samples(run: Path) -> list[dict[str, Any]]:
    lines = (run / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def _run(fixture_root: Path, out: Path, *extra: str) -> int:
    argv = ["run", "tcm-sd", "--output-dir", str(out), "--data-dir", str(fixture_root)]
    return main([*argv, *extra])


@pytest.mark.slow
def test_tfidf_run_score_and_predictions_file(fixture_root: Path, tmp_path: Path) -> None:
    run = tmp_path / "tfidf"
    assert _run(fixture_root, run, "--model", "baseline:tfidf") == 0
    res = _results(run)
    samples = _samples(run)
    labels = read_vocab(fixture_root / "tcm-sd" / "syndrome_vocab.txt")
    # 329 = round(5,486 x 0.06): the official test size at the fixture's scale (tcm_synth)
    assert res["n"] == len(samples) == 329 and res["n_labels"] == 148
    assert res["fixture"] is True and "SYNTHETIC" in res["data_note"]
    # the metrics are what sklearn computes from the written samples
    gold = [s["gold"] for s in samples]
    pred = [s["pred"] for s in samples]
    assert res["macro_f1"] == f1_score(gold, pred, labels=labels, average="macro", zero_division=0)
    assert res["accuracy"] == accuracy_score(gold, pred)
    assert res["invalid_rate"] == 0.0
    low, high = res["macro_f1_ci"]
    assert 0.0 <= low <= high <= 1.0
    assert res["accuracy_ci"][0] <= res["accuracy"] <= res["accuracy_ci"][1]
    assert set(res["per_class"]) == set(labels)
    row = res["per_class"]["气虚血瘀证"]
    assert set(row) >= {"precision", "recall", "f1", "support", "train_count", "group"}
    assert sum(r["support"] for r in res["per_class"].values()) == 329
    groups = res["head_middle_tail"]
    # 148 labels cut into three near-equal groups (np.array_split): 50, 49, 49
    assert [groups[g]["n_labels"] for g in ("head", "middle", "tail")] == [50, 49, 49]
    assert sum(groups[g]["n"] for g in groups) == 329
    for c in res["confusions"]:
        assert c["gold"] != c["pred"] and c["count"] >= 1
    assert set(samples[0]) == {"task", "id", "gold", "pred", "valid", "correct"}

    # score: the same results.json, byte for byte, without any model
    before = (run / "results.json").read_bytes()
    assert main(["score", str(run)]) == 0
    assert (run / "results.json").read_bytes() == before

    # rerun: everything is stored, nothing is predicted (and nothing retrained)
    assert _run(fixture_root, run, "--model", "baseline:tfidf") == 0
    notes = json.loads((run / "manifest.json").read_text())["tasks"]["tcm-sd"]
    assert notes["predicted_now"] == 0
    assert (run / "results.json").read_bytes() == before

    # the same predictions through a predictions file give the same numbers
    preds = tmp_path / "preds.jsonl"
    preds.write_text(
        "".join(
            json.dumps({"id": s["id"], "label": s["pred"]}, ensure_ascii=False) + "\n"
            for s in samples
        ),
        encoding="utf-8",
    )
    run2 = tmp_path / "file"
    assert _run(fixture_root, run2, "--model", f"predictions:{preds}") == 0
    res2 = _results(run2)
    for key in ("macro_f1", "accuracy", "macro_f1_ci", "per_class", "confusions"):
        assert res2[key] == res[key]


@pytest.mark.slow
def test_resume_after_partial_run_retrains_from_the_stored_model(
    fixture_root: Path, tmp_path: Path
) -> None:
    run = tmp_path / "resume"
    assert _run(fixture_root, run, "--model", "baseline:tfidf", "--limit", "30") == 0
    res = _results(run)
    assert res["n"] == 30
    # On a subset the authors' figure (classification_report without labels=, macro avg)
    # differs from macro_f1 over all 148; both are reported and the primary is named.
    samples = _samples(run)
    gold = [s["gold"] for s in samples]
    pred = [s["pred"] for s in samples]
    report = classification_report(gold, pred, output_dict=True, zero_division=0)
    assert res["present_macro_f1"] == pytest.approx(report["macro avg"]["f1-score"], abs=1e-12)
    assert res["n_labels_present"] == len(set(gold) | set(pred)) < 148
    assert res["present_macro_f1"] > res["macro_f1"]
    assert res["primary_metric"] == "macro_f1"
    low, high = res["present_macro_f1_ci"]
    assert low <= high
    with RunStore.in_dir(run) as store:
        assert len(store.records("tcm-sd", "prediction")) == 30
    # a run over everything predicts only the rest, with the cached model
    assert _run(fixture_root, run, "--model", "baseline:tfidf") == 0
    notes = json.loads((run / "manifest.json").read_text())["tasks"]["tcm-sd"]
    assert notes["predicted_now"] == 329 - 30
    assert notes["tfidf_model"]["trained_now"] is False
    assert _results(run)["n"] == 329


def _write_preds(path: Path, rows: list[Any]) -> Path:
    path.write_text(
        "".join(
            (r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n" for r in rows
        ),
        encoding="utf-8",
    )
    return path


def test_predictions_file_is_validated(
    fixture_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    test_ids = [
        json.loads(line)["user_id"]
        for line in (fixture_root / "tcm-sd" / "test.synthetic.json").read_text().splitlines()
    ]
    a, b = test_ids[:2]
    cases: dict[str, tuple[list[Any], str]] = {
        "bad json": ([{"id": a, "label": "气虚血瘀证"}, "{oops"], ":2: invalid JSON"),
        "unknown id": ([{"id": "nope", "label": "气虚血瘀证"}], ":1: unknown id 'nope'"),
        "duplicate": (
            [{"id": a, "label": "气虚血瘀证"}, {"id": b, "label": "x"}, {"id": a, "label": "y"}],
            ":3: id '" + a + "' given twice (first on line 1)",
        ),
        "no label": ([{"id": a}], ':1: expected the keys "id" and "label"'),
    }
    for name, (rows, message) in cases.items():
        path = _write_preds(tmp_path / f"{name.replace(' ', '_')}.jsonl", rows)
        code = _run(
            fixture_root, tmp_path / name.replace(" ", "_"), "--model", f"predictions:{path}"
        )
        err = capsys.readouterr().err
        assert code == 2, name
        assert err.count("\n") == 1 and f"{path}{message}" in err, err


def test_labels_outside_the_148_are_invalid_not_mapped(fixture_root: Path, tmp_path: Path) -> None:
    rows = [
        json.loads(line)
        for line in (fixture_root / "tcm-sd" / "test.synthetic.json").read_text().splitlines()
    ]
    preds = [
        {"id": rows[0]["user_id"], "label": rows[0]["norm_syndrome"]},  # right
        {"id": rows[1]["user_id"], "label": "风痰阻络证"},  # a raw name: NOT normalized
        {"id": rows[2]["user_id"], "label": rows[2]["norm_syndrome"] + " "},  # not exact
        {"id": rows[3]["user_id"], "label": None},
    ]
    path = _write_preds(tmp_path / "p.jsonl", preds)
    run = tmp_path / "run"
    # the file covers 4 of 329 samples: the rest are missing -> exit 1 after writing results
    assert _run(fixture_root, run, "--model", f"predictions:{path}") == 1
    res = _results(run)
    assert res["n_missing"] == 325 and res["n_invalid"] == 328
    assert res["accuracy"] == pytest.approx(1 / 329)
    by_id = {s["id"]: s for s in _samples(run)}
    assert by_id[rows[1]["user_id"]]["pred"] == "风痰阻络证"
    assert by_id[rows[1]["user_id"]]["valid"] is False
    assert by_id[rows[0]["user_id"]]["correct"] is True


def test_answer_mapping_mrc_maps_non_labels_and_counts_them(
    fixture_root: Path, tmp_path: Path
) -> None:
    rows = [
        json.loads(line)
        for line in (fixture_root / "tcm-sd" / "test.synthetic.json").read_text().splitlines()
    ][:4]
    labels = read_vocab(fixture_root / "tcm-sd" / "syndrome_vocab.txt")
    gold = [r["norm_syndrome"] for r in rows]
    preds = [
        {"id": rows[0]["user_id"], "label": gold[0]},  # a label: untouched
        {"id": rows[1]["user_id"], "label": f"辨证：{gold[1]}。"},  # contains the gold label
        {"id": rows[2]["user_id"], "label": "无法判断"},  # contains none: the first label
        {"id": rows[3]["user_id"], "label": None},  # no answer at all: stays invalid
    ]
    path = _write_preds(tmp_path / "p.jsonl", preds)
    default, mrc = tmp_path / "default", tmp_path / "mrc"
    assert _run(fixture_root, default, "--model", f"predictions:{path}", "--limit", "4") == 0
    argv = ["--model", f"predictions:{path}", "--limit", "4", "--option", "tcm.answer_mapping=mrc"]
    assert _run(fixture_root, mrc, *argv) == 0
    before, after = _results(default), _results(mrc)
    assert before["n_invalid"] == 3 and before["answer_mapping"]["rule"] == "invalid"
    # the first label contained, in vocabulary order (hand-computed from the vocabulary)
    contained = next(label for label in labels if label in f"辨证：{gold[1]}。")
    assert after["answer_mapping"] == {"rule": "mrc", "mapped_contained": 1, "mapped_label_0": 1}
    assert after["n_invalid"] == 1
    samples = {s["id"]: s for s in _samples(mrc)}
    assert samples[rows[1]["user_id"]]["pred"] == contained
    assert samples[rows[1]["user_id"]]["answer"] == f"辨证：{gold[1]}。"
    assert samples[rows[2]["user_id"]]["pred"] == labels[0]
    expected_correct = 1 + (contained == gold[1]) + (labels[0] == gold[2])
    assert after["accuracy"] == expected_correct / 4


def _run_tcm_mrc_rule(prediction: str, vocabulary: list[str]) -> int:
    """The authors' run_tcm_mrc.py (`compute_classification_F1`) for one example, restated:
    the vocabulary index of the prediction when it is a label; else of the first label, in
    vocabulary order, found inside the prediction; else 0. The prediction is used as the MRC
    post-processing returns it: nothing is stripped, and no answer is the empty string."""
    index = {label: i for i, label in enumerate(vocabulary)}
    if prediction in index:
        return index[prediction]
    for label, i in index.items():
        if label in prediction:
            return i
    return 0


def test_answer_mapping_mrc_maps_as_the_authors_script_does(
    fixture_root: Path, tmp_path: Path
) -> None:
    """Empty and white-space answers (an MRC model's "no answer") go to label 0, padded labels
    are found inside, exact labels stay: each as the restated rule says, through the CLI."""
    rows = [
        json.loads(line)
        for line in (fixture_root / "tcm-sd" / "test.synthetic.json").read_text().splitlines()
    ][:12]
    labels = read_vocab(fixture_root / "tcm-sd" / "syndrome_vocab.txt")
    gold = [r["norm_syndrome"] for r in rows]
    answers = [
        "",  # what the MRC post-processing returns for no answer
        " ",
        "\n",
        "\u3000",  # an ideographic space
        f" {gold[4]} ",
        f"{gold[5]}\n",
        gold[6],
        "empty",  # what it returns when no n-best span is left
        f"{labels[-1]}{labels[1]}",
        labels[0],
        "证",
        f"{gold[11]}证候",
    ]
    path = _write_preds(
        tmp_path / "p.jsonl",
        [{"id": r["user_id"], "label": a} for r, a in zip(rows, answers, strict=True)],
    )
    out = tmp_path / "mrc"
    argv = ["--model", f"predictions:{path}", "--limit", "12", "--option", "tcm.answer_mapping=mrc"]
    assert _run(fixture_root, out, *argv) == 0
    samples = {s["id"]: s for s in _samples(out)}
    expected = [labels[_run_tcm_mrc_rule(a, labels)] for a in answers]
    assert [samples[r["user_id"]]["pred"] for r in rows] == expected
    results = _results(out)
    assert results["n_invalid"] == 0
    exact = sum(a in labels for a in answers)
    to_zero = sum(a not in labels and not any(x in a for x in labels) for a in answers)
    assert to_zero >= 5  # the four empty or blank answers and "empty" at least
    assert results["answer_mapping"] == {
        "rule": "mrc",
        "mapped_contained": len(answers) - exact - to_zero,
        "mapped_label_0": to_zero,
    }
    assert results["accuracy"] == sum(e == g for e, g in zip(expected, gold, strict=True)) / len(
        rows
    )


def test_missing_official_splits_is_a_clear_input_error(
    data_root: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the fetch cache is searched too when the data root has no splits: an empty one here
    monkeypatch.setenv("CLINEVAL_CACHE_DIR", str(tmp_path / "empty-cache"))
    argv = ["run", "tcm-sd", "--model", "baseline:tfidf", "--output-dir", str(tmp_path / "r")]
    assert main([*argv, "--data-dir", str(data_root)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "official TCM-SD splits are missing" in err and "tcm.data=synthetic" in err
    assert "clineval data fetch tcm-sd" in err
    assert not (tmp_path / "r" / FIXTURE).exists()


FIXTURE = "tcm-sd-synthetic-fixture"


def test_a_vocabulary_of_other_than_148_labels_is_refused(
    fixture_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "root"
    (root / "tcm-sd").mkdir(parents=True)
    src = fixture_root / "tcm-sd"
    (root / "tcm-sd" / "test.synthetic.json").write_bytes(
        (src / "test.synthetic.json").read_bytes()
    )
    vocab = root / "tcm-sd" / "syndrome_vocab.txt"
    vocab.write_bytes(b"\r\n".join((src / "syndrome_vocab.txt").read_bytes().split(b"\r\n")[1:]))
    argv = ["run", "tcm-sd", "--model", "baseline:tfidf", "--output-dir", str(tmp_path / "r")]
    assert main([*argv, "--data-dir", str(root)]) == 2
    err = capsys.readouterr().err
    assert f"{vocab}: expected the 148 TCM-SD labels, found 147" in err and err.count("\n") == 1


@pytest.mark.slow
def test_synthetic_only_when_asked_and_dedupe_on_dev(data_root: Path, tmp_path: Path) -> None:
    if not (data_root / "tcm-sd" / "zy-bert" / "syndrome_vocab.txt").is_file():
        pytest.skip("TCM-SD label files not available")
    run = tmp_path / "r"
    argv = ["run", "tcm-sd", "--model", "baseline:knowledge", "--output-dir", str(run)]
    argv += ["--data-dir", str(data_root), "--option", "tcm.data=synthetic"]
    argv += ["--option", "tcm.synth_scale=0.06", "--option", "tcm.split=dev", "--dedupe"]
    assert main(argv) == 0
    assert (run / FIXTURE / "tcm-sd" / "dev.synthetic.json").is_file()
    res = _results(run)
    assert res["fixture"] is True and res["split"] == "dev"
    assert res["duplicates"]["shared_ids_with_train"] > 0
    assert res["dedupe_removed"] == res["duplicates"]["overlapping_with_train"]
    assert res["n"] == 329 - res["dedupe_removed"]
    assert 0.0 < res["accuracy"] < 1.0
    before = (run / "results.json").read_bytes()
    assert main(["score", str(run)]) == 0
    assert (run / "results.json").read_bytes() == before


def test_shards_partition_the_samples(fixture_root: Path, tmp_path: Path) -> None:
    rows = [
        json.loads(line)
        for line in (fixture_root / "tcm-sd" / "test.synthetic.json").read_text().splitlines()
    ]
    path = _write_preds(
        tmp_path / "p.jsonl", [{"id": r["user_id"], "label": r["norm_syndrome"]} for r in rows]
    )
    ids: list[set[str]] = []
    for i in (1, 2):
        run = tmp_path / f"s{i}"
        assert _run(fixture_root, run, "--model", f"predictions:{path}", "--shard", f"{i}/2") == 0
        ids.append({s["id"] for s in _samples(run)})
        assert _results(run)["accuracy"] == 1.0
    assert ids[0].isdisjoint(ids[1]) and len(ids[0] | ids[1]) == 329
    # merging the shards gives the unsharded result
    assert (
        main(["merge", str(tmp_path / "s1"), str(tmp_path / "s2"), "-o", str(tmp_path / "m")]) == 0
    )
    assert _run(fixture_root, tmp_path / "whole", "--model", f"predictions:{path}") == 0
    merged, whole = _results(tmp_path / "m"), _results(tmp_path / "whole")
    for key in ("n", "macro_f1", "accuracy", "macro_f1_ci", "per_class", "head_middle_tail"):
        assert merged[key] == whole[key]


def test_dedupe_accepts_a_predictions_file_for_the_whole_split(
    fixture_root: Path, tmp_path: Path
) -> None:
    rows = [
        json.loads(line)
        for line in (fixture_root / "tcm-sd" / "dev.synthetic.json").read_text().splitlines()
    ]
    train_ids = {
        json.loads(line)["user_id"]
        for line in (fixture_root / "tcm-sd" / "train.synthetic.json").read_text().splitlines()
    }
    labels = {r["user_id"]: r["norm_syndrome"] for r in rows}
    path = _write_preds(
        tmp_path / "p.jsonl", [{"id": i, "label": lab} for i, lab in labels.items()]
    )
    run = tmp_path / "run"
    argv = ["--model", f"predictions:{path}", "--option", "tcm.split=dev", "--dedupe"]
    assert _run(fixture_root, run, *argv) == 0
    res = _results(run)
    overlapping = sum(r["user_id"] in train_ids for r in rows)
    assert overlapping > 0 and res["dedupe_removed"] == overlapping
    assert res["n"] == len(rows) - overlapping and res["accuracy"] == 1.0
    assert not {s["id"] for s in _samples(run)} & train_ids


def test_limit_zero_is_refused_before_anything_is_written(
    fixture_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--limit 0 used to run and write n = 0 results; now it is a usage error (exit 2) and the
    run directory is not even created."""
    run = tmp_path / "empty"
    assert _run(fixture_root, run, "--model", "baseline:tfidf", "--limit", "0") == 2
    assert capsys.readouterr().err == "error: --limit 0: must be >= 1\n"
    assert not run.exists()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--option", "tcm.split=train"], "tcm.split='train': must be one of test, dev"),
        (
            ["--option", "tcm.answer_mapping=first"],
            "tcm.answer_mapping='first': must be one of invalid, mrc",
        ),
        (["--option", "tcm.data=real"], "tcm.data='real': must be one of official, synthetic"),
        (["--option", "tcm.fields=history"], "--option tcm.fields"),
        (["--model", "baseline:bert"], "unknown TCM-SD baseline 'bert'"),
        (["--model", "hf:/nonexistent", "--option", "tcm.batch=x"], "tcm.batch='x'"),
    ],
)
def test_bad_options_exit_2(
    fixture_root: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    message: str,
) -> None:
    model = [] if "--model" in extra else ["--model", "baseline:tfidf"]
    assert _run(fixture_root, tmp_path / "r", *model, *extra) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err


def test_resume_refuses_other_prediction_settings(
    fixture_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    argv = ["--model", "baseline:knowledge", "--limit", "5"]
    assert _run(fixture_root, run, *argv) == 0
    capsys.readouterr()
    other = ["--option", "tcm.fields=chief_complaint,description,detection"]
    assert _run(fixture_root, run, *argv, *other) == 2
    err = capsys.readouterr().err
    assert "refusing to add ones made with fields=" in err and err.count("\n") == 1
    assert _run(fixture_root, run, *argv) == 0  # the original settings still resume
