"""results.json and samples.jsonl are a view of the run store, not state read back: a run of
one task into a directory keeps the other tasks' results from the store even when the files
were deleted or damaged, and a directory written before results lived in the store adopts its
files once."""

from __future__ import annotations

import json
from pathlib import Path

from run_probe import write_fixture_verdicts

from clineval.benchmarks.clinconsensus.cases import fixture_path
from clineval.cli import main
from clineval.store import RunStore

TCM = ["run", "tcm-sd", "--model", "baseline:tfidf", "--option", "tcm.data=synthetic"]
TCM += ["--option", "tcm.synth_scale=0.05"]


def _verdicts(tmp_path: Path) -> list[str]:
    cases = fixture_path()
    verdicts = write_fixture_verdicts(tmp_path / "verdicts.jsonl", cases=1)
    return [
        *["run", "clinconsensus", "--model", "baseline:tfidf", "--cases", str(cases)],
        *["--verdicts", str(verdicts), "--limit", "1"],
    ]


def _results(run: Path) -> dict[str, dict[str, object]]:
    return json.loads((run / "results.json").read_text(encoding="utf-8"))


def _sample_tasks(run: Path) -> set[str]:
    lines = (run / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    return {json.loads(line)["task"] for line in lines}


def test_a_second_task_keeps_the_first_tasks_results_from_the_store(tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert main([*TCM, "-o", str(run)]) == 0
    first = _results(run)["tcm-sd"]
    (run / "results.json").write_text("{ damaged", encoding="utf-8")  # not read back
    (run / "samples.jsonl").unlink()
    assert main([*_verdicts(tmp_path), "-o", str(run)]) == 0
    results = _results(run)
    assert set(results) == {"tcm-sd", "clinconsensus"} and results["tcm-sd"] == first
    assert _sample_tasks(run) == {"tcm-sd", "clinconsensus"}
    with RunStore.in_dir(run) as store:
        assert set(store.task_results()) == {"tcm-sd", "clinconsensus"}


def test_an_older_directory_adopts_its_result_files_once(tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert main([*TCM, "-o", str(run)]) == 0
    first = _results(run)["tcm-sd"]
    with RunStore.in_dir(run) as store:  # as a directory written before results were stored
        store._conn.execute("DELETE FROM meta WHERE key LIKE 'result:%'")
        assert store.task_results() == {}
    assert main([*_verdicts(tmp_path), "-o", str(run)]) == 0
    assert _results(run)["tcm-sd"] == first
    assert _sample_tasks(run) == {"tcm-sd", "clinconsensus"}
