"""Samples without a prediction never pass silently: one rule for every benchmark.

A predictions file that leaves samples out gives, for NER (the real NCBI test set), TCM-SD
(its synthetic fixture) and the plugin template (registered in-process): results written,
the count in results.json (`missing_predictions`) and in the end-of-run table, a warning
naming the count and the first ids, exit 1.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clineval.benchmarks.ner.corpora import load_ner_split
from clineval.benchmarks.ner.predictions import write_predictions
from clineval.benchmarks.registry import register, unregister
from clineval.benchmarks.tcm_sd.synthetic import write_synthetic
from clineval.cli import main

REPO = Path(__file__).resolve().parent.parent


def _results(run: Path, task: str) -> dict[str, Any]:
    return dict(json.loads((run / "results.json").read_text(encoding="utf-8"))[task])


def _check_failed_loudly(
    code: int, captured: Any, logged: list[str], run: Path, task: str, missing: list[str], n: int
) -> None:
    """`logged`: the log lines (on stderr under the command line; pytest takes them here)."""
    assert code == 1
    assert _results(run, task)["missing_predictions"] == len(missing)
    warning = [line for line in logged if line.startswith(f"warning: {task}: ")]
    assert len(warning) == 1, logged
    assert f"{len(missing)} of {n} samples have no prediction" in warning[0]
    for sample_id in missing[:5]:  # the first ids, in sample order
        assert sample_id in warning[0]
    assert all(i not in warning[0] for i in missing[5:])
    assert captured.err.splitlines()[-1].startswith(f"error: {task}: {len(missing)} of {n}")
    # the end-of-run table (stdout) has the column, and the task's row holds the count
    table = captured.out
    assert "missing_predictions" in table
    # a row per task (the count last) or, on a narrow console, a row per metric
    by_metric = [x for x in table.splitlines() if x.startswith("missing_predictions ")]
    row = (
        by_metric[0]
        if by_metric
        else next(x for x in table.splitlines() if x.lstrip().startswith(task))
    )
    assert row.split()[-1] == str(len(missing)), table
    assert f"{task}: {len(missing)} sample(s) without a prediction" in table


def test_ner_predictions_missing_half_the_documents_fail_loudly(
    tmp_path: Path,
    data_root: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    docs = load_ner_split("ncbi", "test", data_root).documents
    kept, left_out = docs[::2], [d.id for d in docs[1::2]]
    path = tmp_path / "half.jsonl"
    write_predictions(path, {d.id: d.entities for d in kept})
    run = tmp_path / "run"
    argv = ["run", "ner:ncbi", "--model", f"predictions:{path}", "-o", str(run)]
    code = main([*argv, "--data-dir", str(data_root)])
    captured = capsys.readouterr()
    _check_failed_loudly(code, captured, caplog.messages, run, "ner:ncbi", left_out, len(docs))
    # the figures are still written: the kept half is gold, so precision stays 1
    assert _results(run, "ner:ncbi")["span_exact_precision"] == 1.0
    # a re-score without a model applies the same rule
    assert main(["score", str(run)]) == 1
    assert "samples have no prediction" in capsys.readouterr().err


def test_the_same_file_whole_passes(tmp_path: Path, data_root: Path) -> None:
    docs = load_ner_split("ncbi", "test", data_root).documents[:4]
    path = tmp_path / "all.jsonl"
    path.write_text("".join(json.dumps({"id": d.id, "entities": []}) + "\n" for d in docs))
    run = tmp_path / "run"
    argv = ["run", "ner:ncbi", "--model", f"predictions:{path}", "-o", str(run), "--limit", "4"]
    assert main([*argv, "--data-dir", str(data_root)]) == 0
    assert _results(run, "ner:ncbi")["missing_predictions"] == 0


def test_tcm_sd_predictions_missing_samples_fail_the_same_way(
    tmp_path: Path,
    data_root: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    if not (data_root / "tcm-sd" / "zy-bert" / "syndrome_vocab.txt").is_file():
        pytest.skip("TCM-SD label files not available")
    root = tmp_path / "synthetic"
    write_synthetic(root, seed=1, data_dir=data_root, scale=0.01)
    rows = [
        json.loads(line)
        for line in (root / "tcm-sd" / "test.synthetic.json").read_text().splitlines()
    ]
    given, left_out = rows[:3], [str(r["user_id"]) for r in rows[3:]]
    path = tmp_path / "p.jsonl"
    path.write_text(
        "".join(json.dumps({"id": r["user_id"], "label": r["norm_syndrome"]}) + "\n" for r in given)
    )
    run = tmp_path / "run"
    argv = ["run", "tcm-sd", "--model", f"predictions:{path}", "-o", str(run)]
    code = main([*argv, "--data-dir", str(root)])
    captured = capsys.readouterr()
    _check_failed_loudly(code, captured, caplog.messages, run, "tcm-sd", left_out, len(rows))
    assert _results(run, "tcm-sd")["n_missing"] == len(left_out)


@pytest.fixture
def template(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The plugin template registered in this process (no pip install)."""
    folder = REPO / "examples" / "plugin-benchmark"
    monkeypatch.syspath_prepend(str(folder))
    import clineval_example_mcq as mcq

    register(mcq.BENCHMARK)
    try:
        yield folder
    finally:
        unregister(mcq.TASK)


def test_a_plugin_gets_the_rule_without_code_of_its_own(
    template: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    # the template counts nothing itself: the kit finds the question it has no record of
    from clineval_example_mcq.task import McqTask

    code_lines = [
        line
        for line in inspect.getsource(McqTask.evaluate).splitlines()
        if not line.strip().startswith("#")
    ]
    assert not any("missing" in line or "errors" in line for line in code_lines)
    run = tmp_path / "run"
    predictions = template / "predictions-a.jsonl"  # leaves out one of the 12 questions
    given = {json.loads(line)["id"] for line in predictions.read_text().splitlines()}
    questions = template / "clineval_example_mcq" / "fixture_questions.jsonl"
    ids = [json.loads(line)["id"] for line in questions.read_text().splitlines()]
    left_out = [i for i in ids if i not in given]
    assert len(left_out) == 1
    code = main(["run", "example-mcq", "--model", f"predictions:{predictions}", "-o", str(run)])
    captured = capsys.readouterr()
    _check_failed_loudly(code, captured, caplog.messages, run, "example-mcq", left_out, len(ids))
