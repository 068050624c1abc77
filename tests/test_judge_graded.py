"""A graded jury (MedHELM's shape: three judges score each dimension 1-5, the panel's grade is
their mean) as a test-only benchmark on the judging kit, registered at run time and run end
to end against the local stub server: the figures, a judge that fails on one item, resume
with nothing asked again, and batch mode. Each judge's grades are rules of the stub (by
model and dimension), so the expected figures are worked out by hand below. The items are a
fixture/synthetic set written for this test."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llm_stub_server import StubServer

import clineval
from clineval.benchmarks import (
    GRADED_SCORING_SETTINGS,
    JUDGED_RUN_SETTINGS,
    Benchmark,
    Criterion,
    DataFileStatus,
    Graded,
    JudgedItem,
    JudgedTask,
    JudgePrompt,
    RunContext,
    judge_options,
    judged_metrics,
    registry,
    score_statistics,
)

TASK = "synthetic-graded-jury"
OPTIONS = judge_options(TASK, "the synthetic graded jury task")
DIMENSIONS = ("accuracy", "clarity")
ITEMS = tuple(
    JudgedItem(
        f"fixture-{n}",
        f"synthetic question {n}",
        tuple(Criterion(d, f"Rate the answer's {d}.") for d in DIMENSIONS),
    )
    for n in range(1, 4)
)
# grades by judge and dimension: the accuracy mean 11/3, the clarity mean 4
GRADES = {"j1": (4, 3), "j2": (5, 5), "j3": (2, 4)}


class GradedJury(JudgedTask):
    name = TASK
    family = TASK
    description = "synthetic graded jury (fixture/synthetic)"
    option_group = OPTIONS
    prompt = JudgePrompt(
        template="Question:\n{query}\n\nAnswer:\n{response}\n\n{criterion} "
        "Reply with a score from 1 to 5 as [[N]].",
        version="synthetic-graded-jury-v1",
        kind=Graded(1, 5),
        constrained=False,
    )
    candidate_template = "synthetic-graded-jury-candidate-v1"

    def data_status(self, data_root: Path | None) -> list[DataFileStatus]:
        return [DataFileStatus("in the test", "ok")]

    def items(self, ctx: RunContext) -> list[JudgedItem]:
        return list(ITEMS)


@pytest.fixture
def jury() -> Iterator[None]:
    registry.register(
        Benchmark(
            family=TASK,
            title="synthetic graded jury",
            tasks=(TASK,),
            make_task=GradedJury,
            metrics=judged_metrics("mean over items of the panel's mean grade", graded=True),
            options=(OPTIONS,),
            capabilities=frozenset({"chat", "predictions"}),
            statistics=score_statistics,
            scoring_settings=GRADED_SCORING_SETTINGS,
            run_settings=JUDGED_RUN_SETTINGS,
        )
    )
    yield
    registry.unregister(TASK)


def rules(failing: str | None = None) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if failing:  # j3 gives no score on the item whose question names `failing`
        out.append({"model": "j3", "prompt": failing, "content": "Hard to say."})
    for judge, grades in GRADES.items():
        for dimension, grade in zip(DIMENSIONS, grades, strict=True):
            out.append({"model": judge, "prompt": dimension, "content": f"Score: [[{grade}]]"})
    return out


def run(stub: StubServer, out: Path, **settings: Any) -> Any:
    answers = out.parent / f"{out.name}-answers.jsonl"
    answers.write_text(
        "".join(json.dumps({"id": i.id, "answer": "an answer"}) + "\n" for i in ITEMS)
    )
    return clineval.run(
        TASK,
        model=f"predictions:{answers}",
        judges=[f"openai:{j}@{stub.base_url}" for j in GRADES],
        output_dir=out,
        **settings,
    )


def metrics(out: Path) -> dict[str, Any]:
    return dict(json.loads((out / "results.json").read_text())[TASK])


def test_a_jury_of_three_scores_the_mean_grade(
    jury: None, stub: StubServer, tmp_path: Path
) -> None:
    stub.reset()
    stub.script([], default={"do": "ok", "rules": rules()})
    result = run(stub, tmp_path / "run")
    got = metrics(tmp_path / "run")
    # per item: (11/3 + 4) / 2 = 23/6, the same for all three
    assert got["score"] == pytest.approx(23 / 6) and got["mean_grade"] == pytest.approx(23 / 6)
    assert got["aggregate"] == "mean" and "agreement" not in got
    assert got["per_judge"]["openai:j2"]["score"] == pytest.approx(5.0)
    assert got["per_judge"]["openai:j3"]["score"] == pytest.approx(3.0)
    assert stub.stats()["requests"] == 3 * 2 * 3
    rows = result.samples(TASK)
    assert {(v["judge"], v["criterion_id"], v["grade"]) for v in rows[0]["verdicts"]} == {
        (f"openai:{j}", d, float(g))
        for j, grades in GRADES.items()
        for d, g in zip(DIMENSIONS, grades, strict=True)
    }
    run(stub, tmp_path / "run")  # resumed: everything is stored
    assert stub.stats()["requests"] == 3 * 2 * 3


def test_a_judge_error_leaves_that_judge_out_and_counts(
    jury: None, stub: StubServer, tmp_path: Path
) -> None:
    stub.reset()
    stub.script([], default={"do": "ok", "rules": rules(failing="question 3")})
    with pytest.raises(clineval.RunFailed) as failed:
        run(stub, tmp_path / "run", options={f"{TASK}.judge_retries": 0}, max_judge_error_rate=0.2)
    assert "judge error rate of openai:j3 33.33% (2 criteria" in failed.value.reasons
    got = metrics(tmp_path / "run")
    # item 3 without j3: accuracy (4 + 5) / 2, clarity (3 + 5) / 2 -> 4.25; items 1, 2: 23/6
    assert got["score"] == pytest.approx((2 * 23 / 6 + 4.25) / 3)
    assert got["per_judge"]["openai:j3"]["judge_errors"] == 2 and got["judge_errors"] == 0
    assert got["per_judge"]["openai:j3"]["judge_error_rate"] == pytest.approx(2 / 6)


def test_judge_errors_as_unmet_is_refused(jury: None, stub: StubServer, tmp_path: Path) -> None:
    with pytest.raises(clineval.InputError, match="--judge-errors-as-unmet applies to none"):
        run(stub, tmp_path / "run", judge_errors_as_unmet=True)
    assert not (tmp_path / "run").exists()


def test_batch_mode_gives_the_same_figures(jury: None, stub: StubServer, tmp_path: Path) -> None:
    stub.reset()
    stub.script([], default={"do": "ok", "rules": rules()})
    poll = {"llm.batch_poll_s": "0.01", "llm.batch_poll_max_s": "0.05"}
    run(stub, tmp_path / "batch", batch=True, options=poll)
    assert stub.stats()["batches"] == 3  # answers from the file: one batch of each judge
    assert metrics(tmp_path / "batch")["score"] == pytest.approx(23 / 6)
