"""The run record (clineval/run_record.py): manifest.json, results.json and samples.jsonl typed,
versioned, written in one place and read back with validation.

Real run directories (a ClinConsensus run scored from a synthetic verdicts file, no model), the
real commands over them, and the stderr a user sees: one `error:` line, exit 2, nothing
rewritten. A manifest as clineval wrote it before the record had a schema is built by hand
with the fields that version wrote.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from clineval.benchmarks.clinconsensus.cases import fixture_path, load_cases
from clineval.cli import main
from clineval.errors import InputError
from clineval.reportkit.rundata import load_run
from clineval.run_record import (
    FILE_VERSIONS,
    SCHEMA_VERSION,
    Manifest,
    MergedShard,
    TaskNotes,
    iter_samples,
    new_manifest,
    read_manifest,
    read_results,
    write_manifest,
    write_outputs,
)
from clineval.store import STORE_FILENAME

TASK = "clinconsensus"
N_CASES = 4


# ---- helpers ---------------------------------------------------------------------------------
def _fixture_verdicts(path: Path) -> Path:
    """A synthetic verdicts file for the first fixture cases (met / not met alternating)."""
    rows = [
        {"case_id": case.case_id, "criterion_id": rubric.criterion_id, "criteria_met": j % 2 == 0}
        for case in load_cases(fixture_path())[:N_CASES]
        for j, rubric in enumerate(case.rubrics)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _run_argv(out: Path, verdicts: Path, *extra: str) -> list[str]:
    return [
        *["run", TASK, "--model", f"predictions:{verdicts}", "--cases", str(fixture_path())],
        *["--limit", str(N_CASES), "--output-dir", str(out), *extra],
    ]


def _json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _write(path: Path, value: Any) -> None:
    path.write_text(json.dumps(value, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: "), err
    assert "Traceback" not in err
    return err


def _files(run: Path) -> dict[str, bytes]:
    """Every file of the run directory but the lock (which run / score create to hold it)."""
    return {p.name: p.read_bytes() for p in sorted(run.iterdir()) if p.name != ".lock"}


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("record")
    out = base / "run"
    assert main(_run_argv(out, _fixture_verdicts(base / "verdicts.jsonl"))) == 0
    return out


@pytest.fixture
def run(finished: Path, tmp_path: Path) -> Path:
    """A private copy of the finished run (tests change its files)."""
    out = tmp_path / "run"
    out.mkdir()
    for name in ("manifest.json", "results.json", "samples.jsonl", STORE_FILENAME):
        (out / name).write_bytes((finished / name).read_bytes())
    return out


def _same_run(run: Path, finished: Path) -> list[str]:
    """The finished run's command, aimed at `run` (a resume there)."""
    return _run_argv(run, finished.parent / "verdicts.jsonl")


def _manifest_before_the_schema(config: dict[str, Any]) -> dict[str, Any]:
    """A manifest.json as clineval wrote it before it had a schema_version: the same keys,
    the same shapes, nothing about versions."""
    return {
        "clineval_version": "0.1.0",
        "git_revision": None,
        "packages": {"python": "3.11.7", "numpy": "2.4.6", "pydantic": "2.14.4"},
        "platform": "Linux-synthetic-x86_64",
        "argv": ["clineval", "run", TASK, "--model", "predictions:verdicts.jsonl"],
        "config": config,
        "seed": 0,
        "started": "2026-01-02T03:04:05+0000",
        "status": "finished",
        "tasks": {
            TASK: {
                "cases_file": "clinconsensus_fixture_cases.jsonl",
                "fixture": True,
                "n_cases": N_CASES,
                "verdicts_format": "verdicts-jsonl",
                "stored_records": 120,
                "seconds": 0.5,
                "phase_seconds": {"load": 0.1, "predict": 0.2, "evaluate": 0.2},
            }
        },
        "resumed_from": "2026-01-01T00:00:00+0000",
        "llm_usage": {"calls": 0, "prompt_tokens": 0, "by_model": {}},
        "llm_calls": {"totals": {"requests": 0, "retries": 0}, "by_model": {}},
        "finished": "2026-01-02T03:04:09+0000",
        "rescored": "2026-01-03T00:00:00+0000",
    }


# ---- round trips -----------------------------------------------------------------------------
def test_a_run_writes_the_current_schema_and_reads_it_back(finished: Path) -> None:
    written = _json(finished / "manifest.json")
    assert written["schema_version"] == SCHEMA_VERSION
    assert written["files"] == FILE_VERSIONS == {"results.json": 1, "samples.jsonl": 1}
    # Fields that did not happen are not written as nulls.
    assert not {"resumed_from", "rescored", "merged_from", "llm_usage"} & set(written)

    manifest = read_manifest(finished)
    notes = manifest.tasks[TASK]
    assert isinstance(notes, TaskNotes)
    assert notes.stored_records == 4 * 30  # every criterion of the 4 cases has a verdict
    assert isinstance(notes.seconds, float)
    assert notes.phase_seconds is not None
    assert set(notes.phase_seconds) == {"load", "predict", "evaluate"}
    assert notes.model_extra is not None and notes.model_extra["n_cases"] == N_CASES
    assert manifest.status == "finished" and manifest.config["limit"] == N_CASES
    assert manifest.as_written() == written  # nothing lost or added by reading

    assert read_results(finished, manifest) == _json(finished / "results.json")
    rows = list(iter_samples(finished, manifest))
    assert [r["id"] for r in rows] == [c.case_id for c in load_cases(fixture_path())[:N_CASES]]
    assert {r["task"] for r in rows} == {TASK}


def test_the_model_round_trips_through_its_file(tmp_path: Path) -> None:
    manifest = new_manifest({"seed": 7, "model": "baseline:tfidf", "shard": None})
    manifest.note_task(
        "ner:ncbi",
        {"test_split": {"sha256": "ab" * 32}, "crf_trained_now": True},
        stored_records=3,
        seconds=1.25,
        phase_seconds={"load": 0.25, "predict": 0.5, "evaluate": 0.5},
    )
    # llm_usage / llm_calls stay open: the model layer adds its own counters there.
    manifest.llm_usage = {"calls": 2, "a_counter_added_later": {"x": [1, 2]}}
    manifest.merged_from = [MergedShard(run_dir="/r/1", shard="1/2", status="finished")]
    manifest.mark_done(failed=False)
    write_manifest(tmp_path, manifest)
    back = read_manifest(tmp_path)
    assert back == manifest
    assert back.seed == 7 and back.tasks["ner:ncbi"].stored_records == 3
    assert back.llm_usage == {"calls": 2, "a_counter_added_later": {"x": [1, 2]}}
    assert back.finished is not None and back.status == "finished"


def test_outputs_note_their_versions_and_are_read_under_them(tmp_path: Path) -> None:
    manifest = new_manifest({"seed": 0})
    assert manifest.files == {}  # nothing written yet: nothing claimed
    samples = {"tcm-sd": [{"id": "r1", "gold": "a", "pred": "b"}]}
    write_outputs(tmp_path, manifest, {"tcm-sd": {"accuracy": 0.0}}, samples)
    write_manifest(tmp_path, manifest)
    assert _json(tmp_path / "manifest.json")["files"] == FILE_VERSIONS
    back = read_manifest(tmp_path)
    assert read_results(tmp_path, back) == {"tcm-sd": {"accuracy": 0.0}}
    assert list(iter_samples(tmp_path, back)) == [
        {"task": "tcm-sd", "id": "r1", "gold": "a", "pred": "b"}
    ]


def test_notes_on_a_manifest_read_without_tasks_are_written(tmp_path: Path) -> None:
    """A hand-made manifest ({"config": ...} only, as tests and older tools write): what the
    runner notes on it must reach the file, not stay in a default nobody writes."""
    _write(tmp_path / "manifest.json", {"config": {"seed": 0}, "status": "finished"})
    manifest = read_manifest(tmp_path)
    manifest.note_task("t", {"k": 1}, stored_records=2, seconds=0.5, phase_seconds={})
    write_manifest(tmp_path, manifest)
    assert _json(tmp_path / "manifest.json")["tasks"]["t"] == {
        "k": 1,
        "stored_records": 2,
        "seconds": 0.5,
        "phase_seconds": {},
    }


def test_rows_the_readers_would_refuse_are_never_written(tmp_path: Path) -> None:
    manifest = new_manifest({"seed": 0})
    with pytest.raises(ValueError, match="id"):
        write_outputs(tmp_path, manifest, {"t": {}}, {"t": [{"gold": "a"}]})
    assert manifest.files == {}


def test_resume_and_rescore_keep_the_record(run: Path, finished: Path) -> None:
    assert main(_same_run(run, finished)) == 0
    resumed = _json(run / "manifest.json")
    assert resumed["resumed_from"] == _json(finished / "manifest.json")["started"]
    assert resumed["files"] == FILE_VERSIONS
    assert main(["score", str(run)]) == 0
    rescored = read_manifest(run)
    assert rescored.rescored is not None and rescored.status == "finished"
    assert rescored.tasks[TASK].stored_records == 4 * 30


def test_a_merge_writes_a_typed_manifest(tmp_path: Path) -> None:
    verdicts = _fixture_verdicts(tmp_path / "verdicts.jsonl")
    shards = [tmp_path / f"shard{i}" for i in (1, 2)]
    for i, shard in enumerate(shards, start=1):
        assert main(_run_argv(shard, verdicts, "--shard", f"{i}/2")) == 0
    assert main(["merge", *map(str, shards), "-o", str(tmp_path / "merged")]) == 0
    merged = read_manifest(tmp_path / "merged")
    assert _json(tmp_path / "merged" / "manifest.json")["schema_version"] == SCHEMA_VERSION
    assert merged.merged_from is not None
    assert sorted(m.shard for m in merged.merged_from) == ["1/2", "2/2"]
    assert merged.missing_shards == [] and merged.config["shard"] is None
    assert merged.status == "finished" and merged.rescored is not None
    assert merged.files == FILE_VERSIONS


# ---- manifests written before the schema -----------------------------------------------------
def test_a_manifest_from_before_the_schema_is_upgraded_in_memory(run: Path) -> None:
    old = _manifest_before_the_schema(_json(run / "manifest.json")["config"])
    _write(run / "manifest.json", old)
    before = (run / "manifest.json").read_bytes()
    manifest = read_manifest(run)
    assert manifest.schema_version == SCHEMA_VERSION
    assert manifest.files == {}  # its results / samples are read under version 0's rules
    assert manifest.tasks[TASK].stored_records == 120
    assert manifest.tasks[TASK].model_extra == {
        "cases_file": "clinconsensus_fixture_cases.jsonl",
        "fixture": True,
        "n_cases": N_CASES,
        "verdicts_format": "verdicts-jsonl",
    }
    assert manifest.llm_calls == old["llm_calls"] and manifest.rescored == old["rescored"]
    upgraded = manifest.as_written()
    assert {k: v for k, v in upgraded.items() if k not in ("schema_version", "files")} == old
    assert (run / "manifest.json").read_bytes() == before  # reading never writes


def test_an_old_run_directory_still_reports_and_scores(
    run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(
        run / "manifest.json", _manifest_before_the_schema(_json(run / "manifest.json")["config"])
    )
    lines = (run / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    # An older writer's row without an id: tolerated at version 0, as before.
    row = json.loads(lines[0])
    del row["id"]
    lines[0] = json.dumps(row, ensure_ascii=False)
    (run / "samples.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert len(load_run(run).samples[TASK]) == N_CASES
    assert main(["report", str(run), "-o", str(run / "report.html")]) == 0
    results = _json(run / "results.json")

    assert main(["score", str(run)]) == 0
    capsys.readouterr()
    rescored = _json(run / "manifest.json")
    assert rescored["schema_version"] == SCHEMA_VERSION and rescored["files"] == FILE_VERSIONS
    assert rescored["started"] == "2026-01-02T03:04:05+0000"  # the run's own record kept
    assert rescored["tasks"][TASK]["stored_records"] == 4 * 30
    assert _json(run / "results.json") == results
    assert all("id" in r for r in iter_samples(run, read_manifest(run)))  # rewritten from store


# ---- a newer schema --------------------------------------------------------------------------
@pytest.mark.parametrize("command", ["score", "run", "report", "compare", "judge-agreement"])
def test_a_manifest_from_a_newer_clineval_is_refused(
    command: str, run: Path, finished: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = _json(run / "manifest.json")
    manifest["schema_version"] = SCHEMA_VERSION + 1
    manifest["a_key_from_the_future"] = {"meaning": "unknown here"}
    _write(run / "manifest.json", manifest)
    labels = run.parent / "labels.jsonl"
    labels.write_text('{"case_id": "fixture-001", "criterion_id": "x", "met": true}\n')
    argv = {
        "score": ["score", str(run)],
        "run": _same_run(run, finished),
        "report": ["report", str(run), "-o", str(run.parent / "report.html")],
        "compare": ["compare", str(run), str(run)],
        "judge-agreement": ["judge-agreement", str(run), "--labels", str(labels)],
    }[command]
    before = _files(run)
    assert main(argv) == 2
    err = _one_error_line(capsys)
    assert f"error: {run / 'manifest.json'}: written by a newer clineval" in err
    assert f"schema {SCHEMA_VERSION + 1}" in err and "upgrade clineval" in err
    assert _files(run) == before


@pytest.mark.parametrize("name", ["results.json", "samples.jsonl"])
def test_an_output_file_from_a_newer_clineval_is_refused(
    name: str, run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = _json(run / "manifest.json")
    manifest["files"][name] = FILE_VERSIONS[name] + 1
    _write(run / "manifest.json", manifest)
    assert main(["report", str(run), "-o", str(run.parent / "report.html")]) == 2
    err = _one_error_line(capsys)
    assert f"error: {run / name}: written by a newer clineval" in err and "upgrade" in err


# ---- bad shapes ------------------------------------------------------------------------------
NOTES = ("tasks", TASK)
_REMOVE = object()  # as a value: take the key out
# case -> (keys of the value to change, new value, the place the error names)
BAD_MANIFESTS: dict[str, tuple[tuple[str, ...], Any, str]] = {
    "stored_records a string": ((*NOTES, "stored_records"), "120", f"tasks.{TASK}.stored_records"),
    "stored_records negative": ((*NOTES, "stored_records"), -1, f"tasks.{TASK}.stored_records"),
    "seconds a word": ((*NOTES, "seconds"), "slow", f"tasks.{TASK}.seconds"),
    "phase seconds a list": ((*NOTES, "phase_seconds"), [1], f"tasks.{TASK}.phase_seconds"),
    "task notes a list": (NOTES, [1, 2], f"tasks.{TASK}"),
    "tasks a list": (("tasks",), [], "tasks"),
    "schema_version a string": (("schema_version",), "1", "schema_version"),
    "schema_version true": (("schema_version",), True, "schema_version"),
    "schema_version negative": (("schema_version",), -1, "schema_version"),
    "file version a word": (("files", "results.json"), "one", "files.results.json"),
    "file version negative": (("files", "samples.jsonl"), -1, "files.samples.jsonl"),
    "status a number": (("status",), 3, "status"),
    "llm_usage a string": (("llm_usage",), "lots", "llm_usage"),
    "config missing": (("config",), _REMOVE, "config"),
    "a list": ((), None, "not a JSON object"),
}


@pytest.mark.parametrize("case", list(BAD_MANIFESTS))
@pytest.mark.parametrize("command", ["score", "report"])
def test_a_manifest_of_the_wrong_shape_is_one_line_naming_it(
    case: str, command: str, run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    keys, value, where = BAD_MANIFESTS[case]
    manifest: Any = _json(run / "manifest.json")
    if not keys:
        manifest = [manifest]
    else:
        holder = manifest
        for key in keys[:-1]:
            holder = holder[key]
        if value is _REMOVE:
            del holder[keys[-1]]
        else:
            holder[keys[-1]] = value
    _write(run / "manifest.json", manifest)
    before = _files(run)
    argv = (
        ["score", str(run)]
        if command == "score"
        else ["report", str(run), "-o", str(run.parent / "r.html")]
    )
    assert main(argv) == 2
    err = _one_error_line(capsys)
    assert f"error: {run / 'manifest.json'}: damaged run manifest ({where}" in err
    assert "new --output-dir" in err
    assert _files(run) == before


def test_results_of_the_wrong_shape_are_one_line_naming_them(
    run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(run / "results.json", {TASK: [1, 2], "other": {"accuracy": 1.0}})
    assert main(["report", str(run), "-o", str(run.parent / "r.html")]) == 2
    err = _one_error_line(capsys)
    assert f"error: {run / 'results.json'}: expected {{task: metrics}} objects ({TASK}:" in err
    _write(run / "results.json", [1, 2])
    with pytest.raises(InputError, match="expected a JSON object of"):
        read_results(run, read_manifest(run))


@pytest.mark.parametrize(
    ("row", "where"),
    [
        ({"task": TASK, "s": 3}, "id: Field required"),
        ({"id": "fixture-001"}, "task: Field required"),
        ({"task": 5, "id": "fixture-001"}, "task:"),
        ({"task": TASK, "id": 1.5}, "id"),
        ({"task": TASK, "id": None}, "id"),
    ],
)
def test_a_sample_row_of_the_wrong_shape_is_one_line_naming_file_and_line(
    row: dict[str, Any], where: str, run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = (run / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    lines[1] = json.dumps(row)
    (run / "samples.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["report", str(run), "-o", str(run.parent / "r.html")]) == 2
    err = _one_error_line(capsys)
    assert f"error: {run / 'samples.jsonl'}:2: not a sample row ({where}" in err


def test_manifest_model_refuses_what_it_reads_refused() -> None:
    """The model itself (not only the reader) holds the types: an edit in code that would
    write a bad manifest fails where it is made."""
    manifest = Manifest(config={})
    with pytest.raises(ValueError, match="status"):
        manifest.status = 3  # type: ignore[assignment]
    with pytest.raises(ValueError, match="stored_records"):
        TaskNotes(stored_records=-2)


@pytest.mark.parametrize(
    ("exc", "status"),
    [
        (KeyboardInterrupt(), "stopped: KeyboardInterrupt"),
        (OSError("disk full"), "stopped: OSError: disk full"),
    ],
)
def test_a_stopped_runs_status_says_why_without_an_empty_tail(
    exc: BaseException, status: str
) -> None:
    manifest = Manifest(config={})
    manifest.mark_stopped(exc)
    assert manifest.status == status
