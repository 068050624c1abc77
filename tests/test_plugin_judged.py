"""examples/plugin-judged (a rubric-graded benchmark on clineval's judging kit), installed the
way a user installs it, then used through every surface with no change to clineval: tasks,
run against the local stub server, kill and resume, score with --judge-errors-as-unmet, report,
compare, export, --dry-run, --batch, --shard + merge, a two-judge panel, judge-agreement with a
labels file, and the Python API.

The scores are checked against an oracle written here from the fixture's points (HealthBench's
clip(points of the met criteria / positive points, 0, 1)): by hand where the stub's judge says
"met" to every criterion, and from the stored verdicts where the stub decides per request.
"""

from __future__ import annotations

import csv
import hashlib
import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_inprocess import Done
from llm_stub_server import StubServer
from plugin_fixtures import example_cli, example_process, process_env
from run_probe import kill_once_stored

from clineval.store import STORE_FILENAME

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "plugin-judged"
PACKAGE = EXAMPLE / "clineval_example_rubric"
TASK = "example-rubric"
MET = json.dumps({"explanation": "fixture judge", "criteria_met": True})
FAST_POLL = ["--option", "llm.batch_poll_s=0.01", "--option", "llm.batch_poll_max_s=0.05"]


def cli(site: Path, *args: str) -> Done:
    """`clineval --quiet ARGS` in this process, in the example's folder (the `site` fixture
    has put the installed plugin on the import path)."""
    return example_cli(EXAMPLE, *args)


def results(run: Path) -> dict[str, Any]:
    return dict(json.loads((run / "results.json").read_text())[TASK])


def samples(run: Path) -> list[dict[str, Any]]:
    lines = (run / "samples.jsonl").read_text().splitlines()
    return [row for row in map(json.loads, lines) if row.get("task") == TASK]


def fixture_points() -> dict[str, dict[str, float]]:
    rows = map(json.loads, (PACKAGE / "fixture_items.jsonl").read_text().splitlines())
    return {r["id"]: {c["id"]: float(c["points"]) for c in r["rubric"]} for r in rows}


def oracle(met: dict[str, dict[str, bool]]) -> float | None:
    """Mean over the given items of clip(points met / positive points, 0, 1)."""
    points = fixture_points()
    scores = []
    for item, verdicts in met.items():
        positive = sum(p for p in points[item].values() if p > 0)
        achieved = sum(points[item][c] for c, ok in verdicts.items() if ok)
        scores.append(min(1.0, max(0.0, achieved / positive)))
    return sum(scores) / len(scores) if scores else None


def stored_met(run: Path, judge: str, errors_as_unmet: bool = False) -> dict[str, dict[str, bool]]:
    """{item: {criterion: met}} of one judge from samples.jsonl; items with a judge error are
    left out (or the error counts as not met)."""
    out = {}
    for row in samples(run):
        verdicts = [v for v in row["verdicts"] if v["judge"] == judge]
        if row["answer"] is None or (
            any(v["met"] is None for v in verdicts) and not errors_as_unmet
        ):
            continue
        out[row["id"]] = {v["criterion_id"]: bool(v["met"]) for v in verdicts}
    return out


def run_args(out: Path, *extra: str) -> list[str]:
    return ["run", TASK, *extra, "--output-dir", str(out)]


def test_the_template_stays_small() -> None:
    # that it imports only the public surface (names included) is test_architecture's rule
    lines = sum(len(p.read_text().splitlines()) for p in PACKAGE.glob("*.py"))
    assert lines <= 150


def test_run_score_report_compare_export_agreement(
    site: Path, stub: StubServer, tmp_path: Path
) -> None:
    # a new interpreter finds the installed plugin on its path, as a user's shell does
    listed = example_process(EXAMPLE, site, "tasks")
    assert listed.returncode == 0 and TASK in listed.stdout, listed.stderr
    stub.reset()
    stub.script([], default={"do": "ok"})  # the stub decides each verdict from its request
    model = f"openai:cand@{stub.base_url}"
    one = tmp_path / "one"

    plan = cli(site, *run_args(one, "--model", model, "--dry-run"))
    assert plan.returncode == 0, plan.stderr
    assert "total: 19 calls to send, 0 already stored" in " ".join(plan.stdout.split())
    assert not one.exists() and stub.stats()["requests"] == 0

    done = cli(site, *run_args(one, "--model", model, "--max-judge-error-rate", "0"))
    assert done.returncode == 0, done.stderr
    assert stub.stats()["requests"] == 4 + 15  # 4 answers, 15 criteria judged by the candidate
    # the fixture flag the task notes in the run record reaches the results it prints
    assert f"{TASK}: fixture data: not a benchmark result" in done.stdout
    got = results(one)
    met = stored_met(one, "openai:cand")
    assert len(met) == 4 and got["n_items_scored"] == 4 and got["judge_errors"] == 0
    assert got["score"] == pytest.approx(oracle(met))
    n_met = sum(sum(v.values()) for v in met.values())
    assert got["criteria_met_rate"] == pytest.approx(n_met / 15)

    again = cli(site, *run_args(one, "--model", model, "--dry-run"))
    assert "total: 0 calls to send, 19 already stored" in " ".join(again.stdout.split())

    # judge errors: the judge's first 4 replies are no verdict, and it is not re-asked
    stub.reset()
    stub.script([{"do": "ok", "content": "no verdict"}] * 4, default={"do": "ok", "content": MET})
    errs = tmp_path / "errs"
    argv = ["--model", "predictions:answers-a.jsonl", "--judge", f"openai:j1@{stub.base_url}"]
    argv += ["--option", f"{TASK}.judge_retries=0", "--concurrency", "1"]
    argv += ["--option", f"{TASK}.judge_explanation_chars=40"]
    failed = cli(site, *run_args(errs, *argv))
    assert failed.returncode == 1  # fixture-04 has no answer, and 4 of 11 verdicts are missing
    # the kit's one rule for samples without a prediction: a warning naming them, exit 1
    assert "1 of 4 samples have no prediction" in failed.stderr
    assert "fixture-04" in failed.stderr.split("samples have no prediction, scored")[1]
    assert "judge error rate 36.36% (4 criteria without a verdict)" in failed.stderr
    assert stub.stats()["requests"] == 11
    with sqlite3.connect(errs / STORE_FILENAME) as db:
        sent = [json.loads(r) for (r,) in db.execute("SELECT request FROM calls")]
    schemas = [r["response_format"]["json_schema"]["schema"] for r in sent]
    assert len(schemas) == 11  # every judge call at the json_schema level, bounded
    assert {s["properties"]["explanation"]["maxLength"] for s in schemas} == {40}
    complete = stored_met(errs, "openai:j1")
    assert 0 < len(complete) < 3  # one item at a time: the errors fall on the first judged
    assert results(errs)["score"] == pytest.approx(oracle(complete))
    rescored = cli(site, "score", str(errs), "--judge-errors-as-unmet")
    assert rescored.returncode == 1, rescored.stderr  # still no answer to fixture-04
    unmet = results(errs)
    assert unmet["judge_errors_as_unmet"] is True and unmet["n_items_scored"] == 3
    assert unmet["score"] == pytest.approx(oracle(stored_met(errs, "openai:j1", True)))
    assert stub.stats()["requests"] == 11  # scoring calls no model

    report = tmp_path / "report.html"
    made = cli(site, "report", str(one), "-o", str(report))
    assert made.returncode == 0 and TASK in report.read_text(), made.stderr

    table = tmp_path / "compare.csv"
    compared = cli(site, "compare", str(one), str(errs), "--format", "csv", "-o", str(table))
    assert compared.returncode == 0, compared.stderr
    assert "score" in table.read_text() and "criteria_met_rate" in table.read_text()
    directions = {(r["metric"], r["higher_is_better"]) for r in csv.DictReader(table.open())}
    assert {("score", "True"), ("judge_error_rate", "False")} <= directions

    exported = cli(site, "export", str(one), "--format", "samples-csv", "-o", str(tmp_path / "x"))
    assert exported.returncode == 0, exported.stderr
    assert len(list(csv.reader((tmp_path / "x" / f"{TASK}.samples.csv").open()))) == 1 + 4

    # judge-agreement: human labels that agree with the judge on 10 criteria, not on 5
    flat = [(i, c, m) for i, crit in sorted(met.items()) for c, m in sorted(crit.items())]
    labels = tmp_path / "labels.jsonl"
    labels.write_text(
        "".join(
            json.dumps({"id": i, "criterion_id": c, "criteria_met": m if n < 10 else not m}) + "\n"
            for n, (i, c, m) in enumerate(flat)
        )
    )
    agreed = cli(site, "judge-agreement", str(one), "--labels", str(labels))
    assert agreed.returncode == 0, agreed.stderr
    written = json.loads((one / "judge_agreement.json").read_text())
    assert written["task"] == TASK and written["n_labels"] == 15
    assert written["judges"]["openai:cand"]["accuracy"] == pytest.approx(10 / 15)


def test_kill_and_resume_asks_no_call_twice(site: Path, stub: StubServer, tmp_path: Path) -> None:
    out = tmp_path / "killed"
    args = run_args(out, "--model", f"openai:cand@{stub.base_url}", "--concurrency", "2")
    argv = [sys.executable, "-m", "clineval", "--quiet", *args]
    stub.reset()
    stub.script([], default={"do": "ok", "latency": 0.2})
    finished = kill_once_stored(argv, process_env(site), out / STORE_FILENAME, 6)
    assert 6 <= len(finished) < 19

    stub.script([], default={"do": "ok"})
    resumed = cli(site, *args)  # the same command again (here in process): it resumes
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    by_key = stub.stats()["by_key"]
    assert {k for k in finished if by_key[k] != 1} == set()  # nothing stored was asked again
    assert len(by_key) == 19 and sum(by_key.values()) - 19 <= 2  # only calls on the wire
    assert results(out)["n_items_scored"] == 4


def test_batch_shards_and_a_two_judge_panel(site: Path, stub: StubServer, tmp_path: Path) -> None:
    model = ["--model", f"openai:cand@{stub.base_url}"]
    stub.reset()
    stub.script([], default={"do": "ok"})
    whole = cli(site, *run_args(tmp_path / "whole", *model))
    assert whole.returncode == 0, whole.stderr

    # --batch: the same answers and verdicts, through the Batch API in two rounds
    batched = cli(site, *run_args(tmp_path / "batch", *model, "--batch", *FAST_POLL))
    assert batched.returncode == 0, batched.stderr
    assert results(tmp_path / "batch")["score"] == results(tmp_path / "whole")["score"]
    assert stub.stats()["batches"] == 2  # the answers' round, then the verdicts'

    # --shard I/N, then merge: the same results as the whole run
    shards = [tmp_path / "s1", tmp_path / "s2"]
    for i, shard in enumerate(shards, 1):
        part = cli(site, *run_args(shard, *model, "--shard", f"{i}/2"))
        assert part.returncode == 0, part.stderr
    merged = cli(site, "merge", *map(str, shards), "-o", str(tmp_path / "merged"))
    assert merged.returncode == 0, merged.stderr
    got, want = results(tmp_path / "merged"), results(tmp_path / "whole")
    assert got["n_items"] == 4 and got["score"] == pytest.approx(want["score"])

    # two judges who say "met" to every criterion: by hand, fixture-01 (5+3+4-6)/12,
    # fixture-02 (4+4+2-5)/10, fixture-03 (8+3-8)/11; answers-a.jsonl leaves out fixture-04
    stub.script([], default={"do": "ok", "content": MET})
    panel = tmp_path / "panel"
    judges = ["--judge", f"openai:j1@{stub.base_url}", "--judge", f"openai:j2@{stub.base_url}"]
    two = cli(site, *run_args(panel, "--model", "predictions:answers-a.jsonl", *judges))
    assert two.returncode == 1 and "1 of 4 samples have no prediction" in two.stderr
    figures = results(panel)
    assert figures["score"] == pytest.approx((6 / 12 + 5 / 10 + 3 / 11) / 3)
    assert figures["agreement"]["mean_percent_agreement"] == 1.0
    assert set(figures["per_judge"]) == {"openai:j1", "openai:j2"}
    # again: everything that can be stored is, so no model is even opened
    asked = stub.stats()["requests"]
    assert (
        cli(site, *run_args(panel, "--model", "predictions:answers-a.jsonl", *judges)).returncode
        == 1
    )
    manifest = json.loads((panel / "manifest.json").read_text())
    assert manifest["tasks"][TASK]["progress"]["all_stored"] is True
    assert stub.stats()["requests"] == asked and results(panel) == figures


def test_a_whole_predictions_file_serves_limit_and_shard(
    site: Path, stub: StubServer, tmp_path: Path
) -> None:
    """answers-a.jsonl answers fixture-01..03 of the four items: a --limit or --shard part
    takes its own answers from it (ids checked against every item, not only the part's)."""
    stub.reset()
    stub.script([], default={"do": "ok", "content": MET})
    answers = EXAMPLE / "answers-a.jsonl"
    judge = ["--judge", f"openai:j1@{stub.base_url}"]
    first = cli(site, *run_args(tmp_path / "first", "--model", f"predictions:{answers}", "--limit",
                                "1", *judge))  # fmt: skip
    assert first.returncode == 0, first.stderr
    assert results(tmp_path / "first")["n_items"] == 1
    assert results(tmp_path / "first")["score"] == pytest.approx(6 / 12)  # fixture-01, by hand
    shards = [tmp_path / "s1", tmp_path / "s2"]
    for i, shard in enumerate(shards, 1):
        model = f"predictions:{TASK}={answers}"  # one file per task: the same file
        part = cli(site, *run_args(shard, "--model", model, "--shard", f"{i}/2", *judge))
        assert "not a sample" not in part.stderr and part.returncode in (0, 1), part.stderr
        noted = json.loads((shard / "manifest.json").read_text())["tasks"][TASK]
        digest = hashlib.sha256(answers.read_bytes()).hexdigest()
        assert noted["predictions_file"]["sha256"] == digest
    merged = cli(site, "merge", *map(str, shards), "-o", str(tmp_path / "merged"))
    assert merged.returncode == 1  # fixture-04 has no answer in either part
    got = results(tmp_path / "merged")
    assert got["n_items"] == 4 and got["score"] == pytest.approx((6 / 12 + 5 / 10 + 3 / 11) / 3)


def test_the_python_api(site: Path, stub: StubServer, tmp_path: Path) -> None:
    import clineval

    stub.reset()
    stub.script([], default={"do": "ok", "content": MET})
    answers = EXAMPLE / "answers-a.jsonl"
    with pytest.raises(clineval.RunFailed) as failed:  # fixture-04 has no answer
        clineval.run(
            TASK, model=f"predictions:{answers}", output_dir=tmp_path / "api",
            judges=[f"openai:j1@{stub.base_url}"],
        )  # fmt: skip
    assert "1 of 4 samples have no prediction" in failed.value.reasons
    metrics = failed.value.result[TASK]
    assert metrics.family == TASK and metrics.primary_metric == "score"
    assert metrics.primary == pytest.approx((6 / 12 + 5 / 10 + 3 / 11) / 3)
    # the long form the template declares: one row per verdict, with its item's id and score
    result = failed.value.result
    rows = result.long_rows(TASK)
    samples = result.samples(TASK)
    assert len(rows) == sum(len(s["verdicts"]) for s in samples) > len(samples)
    assert {(r["id"], r["criterion_id"], r["judge"]) for r in rows} == {
        (s["id"], v["criterion_id"], v["judge"]) for s in samples for v in s["verdicts"]
    }
    assert all(set(r) >= {"id", "score", "met", "task"} for r in rows)


def test_bad_input_is_one_line_and_writes_nothing(site: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    alone = cli(site, *run_args(out, "--model", "predictions:answers-a.jsonl"))
    assert alone.returncode == 2
    assert alone.stderr.strip().splitlines() == [
        "error: --model predictions:... gives the answers: name the judges (--judge)"
    ]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "fixture-01", "answer": "x"}\n{"id": "nope", "answer": "y"}\n')
    judged = ["--judge", "openai:j@http://127.0.0.1:9/v1"]
    done = cli(site, *run_args(out, "--model", f"predictions:{bad}", *judged))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [f"error: {bad}:2: unknown id 'nope' (not a sample)"]
    assert not out.exists() or {p.name for p in out.iterdir()} <= {".lock"}


@pytest.mark.parametrize(
    ("rubric", "message"),
    [
        ('[{"criterion": "no id", "points": 1}]', 'a criterion needs "id" and "criterion"'),
        ('[{"id": "a", "points": 1}]', 'a criterion needs "id" and "criterion"'),
        ('[{"id": "a", "criterion": "c", "points": "1"}]', "every criterion needs numeric points"),
        ('[{"id": "a", "criterion": "c", "points": -1}]', "a rubric needs a criterion with"),
        ("[]", 'expected a non-empty "rubric" list'),
    ],
)
def test_the_templates_reader_names_file_and_line(
    site: Path, tmp_path: Path, rubric: str, message: str
) -> None:
    """What a copy of the template inherits: a bad items file is one line naming file and
    line, never a KeyError from inside the reader."""
    from clineval_example_rubric.task import read_items  # installed by the `site` fixture

    from clineval.benchmarks import InputError

    items = tmp_path / "items.jsonl"
    good = '{"id": "i1", "prompt": "q", "rubric": [{"id": "a", "criterion": "c", "points": 1}]}'
    items.write_text(f'{good}\n{{"id": "i2", "prompt": "q", "rubric": {rubric}}}\n')
    with pytest.raises(InputError, match=message) as refused:
        read_items(items)
    assert refused.value.path == str(items) and refused.value.line == 2
