"""Arena-Hard's way on the pairwise kit: five verdict levels read by their last match, strong
verdicts weighing 3 games, both games kept (`disagreement=both`), and the same stored
verdicts re-scored with MT-bench's policy (`disagreement=tie`) without a model call. A
test-only benchmark registered at run time, run against the local stub server whose judge
says `[[A>>B]]` when the candidate stands first and `[[A=B]]` when it stands second; the
expected figures are worked out by hand below. The items are fixture/synthetic."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llm_stub_server import StubServer

import clineval
from clineval.benchmarks import (
    ARENA_HARD,
    JUDGED_RUN_SETTINGS,
    PAIRWISE_SCORING_SETTINGS,
    Benchmark,
    DataFileStatus,
    JudgedItem,
    JudgePrompt,
    PairwiseTask,
    RunContext,
    pairwise_item,
    pairwise_metrics,
    pairwise_options,
    pairwise_statistics,
    registry,
)

TASK = "synthetic-arena"
OPTIONS = pairwise_options(TASK, "the synthetic arena task")
ITEMS = tuple(
    pairwise_item(f"fixture-{n}", f"synthetic question {n}", f"baseline {n}") for n in range(3)
)


class Arena(PairwiseTask):
    name = TASK
    family = TASK
    description = "synthetic Arena-Hard-style pairwise task (fixture/synthetic)"
    option_group = OPTIONS
    scale = ARENA_HARD
    prompt = JudgePrompt(
        template="Q: {question}\n<A>\n{answer_a}\n</A>\n<B>\n{answer_b}\n</B>\n"
        "End with one of [[A>>B]], [[A>B]], [[A=B]], [[B>A]], [[B>>A]].",
        version="synthetic-arena-v1",
        kind=ARENA_HARD.kind,
        constrained=False,
        slots=("question", "answer_a", "answer_b"),
        answer_slots=("answer_a", "answer_b"),
    )
    candidate_template = "synthetic-arena-candidate-v1"

    def data_status(self, data_root: Path | None) -> list[DataFileStatus]:
        return [DataFileStatus("in the test", "ok")]

    def items(self, ctx: RunContext) -> list[JudgedItem]:
        return list(ITEMS)


@pytest.fixture
def arena() -> Iterator[None]:
    registry.register(
        Benchmark(
            family=TASK,
            title="synthetic arena",
            tasks=(TASK,),
            make_task=Arena,
            metrics=pairwise_metrics("weighted wins / weight against the baseline"),
            options=(OPTIONS,),
            capabilities=frozenset({"chat", "predictions"}),
            statistics=pairwise_statistics,
            scoring_settings=PAIRWISE_SCORING_SETTINGS,
            run_settings=JUDGED_RUN_SETTINGS,
        )
    )
    yield
    registry.unregister(TASK)


def metrics(out: Path) -> dict[str, Any]:
    return dict(json.loads((out / "results.json").read_text())[TASK])


def test_strong_verdicts_both_games_and_a_rescore(
    arena: None, stub: StubServer, tmp_path: Path
) -> None:
    stub.reset()
    # the judge first thinks "A=B", then settles: its last verdict counts
    rules = [
        {"prompt": r"<A>\ncandidate", "content": "[[A=B]]? No: A is far better. [[A>>B]]"},
        {"prompt": r"<B>\ncandidate", "content": "About the same. [[A=B]]"},
    ]
    stub.script([], default={"do": "ok", "rules": rules})
    answers = tmp_path / "answers.jsonl"
    answers.write_text(
        "".join(json.dumps({"id": i.id, "answer": f"candidate {i.id}"}) + "\n" for i in ITEMS)
    )
    out = tmp_path / "run"
    clineval.run(
        TASK,
        model=f"predictions:{answers}",
        judges=[f"openai:j@{stub.base_url}"],
        output_dir=out,
        options={f"{TASK}.disagreement": "both"},
    )
    got = metrics(out)
    # per item: a strong win (counted as 3 games) and a tie (one game): 3.5 of 4 games
    assert got["win_rate"] == pytest.approx(3.5 / 4) and got["disagreement"] == "both"
    assert got["position_consistency"] == 0.0  # a win and a tie disagree
    assert got["tie_rate"] == pytest.approx(0.5)  # one tied game of two
    assert stub.stats()["requests"] == 6

    rescored = clineval.score(out, options={f"{TASK}.disagreement": "tie"})
    got = metrics(out)
    # MT-bench's policy: disagreeing orders are a tie, every item 0.5
    assert got["win_rate"] == 0.5 and got["disagreement"] == "tie"
    assert got["tie_rate"] == pytest.approx(0.5)  # still one tied game of two
    assert rescored[TASK].primary == 0.5
    assert stub.stats()["requests"] == 6  # scoring asks nothing
