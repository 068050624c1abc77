"""`JudgedTask.item_figures`, criterion tags and the intervals the judging kit stores: a
judged benchmark with per-axis figures (MedHELM's jury dimensions, HealthBench's axes, its
criteria tagged "axis:...") declared as metrics of its own, registered at run time and run
end to end against the local stub server, whose judge decides each verdict from its request.

The figures are checked against an oracle computed here from the stored verdict rows, and
the intervals against a percentile bootstrap written here with numpy on the run's seed. The
data are a fixture/synthetic set of four items written for this test.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
from llm_stub_server import StubServer
from numpy.typing import NDArray

import clineval
from clineval.benchmarks import (
    JUDGED_RUN_SETTINGS,
    JUDGED_SCORING_SETTINGS,
    Benchmark,
    Criterion,
    DataFileStatus,
    InputError,
    JudgedItem,
    JudgedTask,
    JudgePrompt,
    MetricSchema,
    MetricSpec,
    RunContext,
    bootstrap_indices,
    judge_options,
    judged_metrics,
    registry,
    score_statistics,
)

TASK = "synthetic-jury"
AXES = ("accuracy", "clarity")
OPTIONS = judge_options(TASK, "the synthetic jury task")
WORDING = JudgePrompt(
    template="Question:\n{query}\n\nAnswer:\n{response}\n\nCriterion:\n{criterion}\n\n"
    'Reply with JSON: {"explanation": "...", "criteria_met": true or false}',
    version="synthetic-jury-v1",
    system="You grade answers.",
    custom=False,
)
ITEMS = tuple(
    JudgedItem(
        f"fixture-{n}",
        f"synthetic question {n}",
        tuple(
            Criterion(f"{a}-{k}", f"{a} criterion {k} of item {n}", tags=(f"axis:{a}",))
            for a in AXES
            for k in "xyz"
        ),
    )
    for n in range(1, 5)
)


def axis_shares(item: JudgedItem, met: NDArray[np.float64]) -> dict[str, float]:
    shares: dict[str, list[float]] = {}
    for criterion, value in zip(item.criteria, met, strict=True):
        axis = next(t.removeprefix("axis:") for t in criterion.tags if t.startswith("axis:"))
        shares.setdefault(axis, []).append(float(value))
    return {f"axis_{a}": float(np.mean(v)) for a, v in shares.items()}


class JuryTask(JudgedTask):
    name = TASK
    family = TASK
    description = "synthetic per-axis jury (fixture/synthetic)"
    option_group = OPTIONS
    prompt = WORDING
    candidate_template = "synthetic-jury-candidate-v1"
    clash: ClassVar[bool] = False
    nan_for_absent: ClassVar[bool] = False  # an axis the item lacks: nan, else no key
    items_given: ClassVar[tuple[JudgedItem, ...]] = ITEMS

    def data_status(self, data_root: Path | None) -> list[DataFileStatus]:
        return [DataFileStatus("in the test", "ok")]

    def items(self, ctx: RunContext) -> list[JudgedItem]:
        return list(self.items_given)

    def score(self, item: JudgedItem, verdicts: NDArray[np.float64]) -> float:
        return float(np.mean(list(axis_shares(item, verdicts).values())))

    def item_figures(self, item: JudgedItem, verdicts: NDArray[np.float64]) -> dict[str, float]:
        figures = axis_shares(item, verdicts)
        if self.nan_for_absent:
            figures = {f"axis_{a}": figures.get(f"axis_{a}", float("nan")) for a in AXES}
        return {**figures, "score": 0.0} if self.clash else figures


def schema() -> MetricSchema:
    axes = (MetricSpec(f"axis_{a}", per_sample=f"axis_{a}") for a in AXES)
    return judged_metrics("mean of the axis shares", *axes)


@pytest.fixture
def jury() -> Iterator[None]:
    registry.register(
        Benchmark(
            family=TASK,
            title="synthetic jury",
            tasks=(TASK,),
            make_task=JuryTask,
            metrics=schema(),
            options=(OPTIONS,),
            capabilities=frozenset({"chat", "predictions"}),
            statistics=score_statistics,
            scoring_settings=JUDGED_SCORING_SETTINGS,
            run_settings=JUDGED_RUN_SETTINGS,
        )
    )
    yield
    registry.unregister(TASK)
    JuryTask.clash = False
    JuryTask.nan_for_absent = False
    JuryTask.items_given = ITEMS


@pytest.fixture(scope="module")
def stub() -> Iterator[StubServer]:
    with StubServer(latency=0.0) as server:
        server.script([], default={"do": "ok"})  # each verdict decided by its request's hash
        yield server


def run_jury(stub: StubServer, out: Path, seed: int = 0) -> Any:
    answers = out.parent / f"{out.name}-answers.jsonl"
    answers.write_text(
        "".join(
            json.dumps({"id": i.id, "answer": f"answer to {i.id}"}) + "\n"
            for i in JuryTask.items_given
        )
    )
    return clineval.run(
        TASK,
        model=f"predictions:{answers}",
        judges=[f"openai:judge@{stub.base_url}"],
        output_dir=out,
        seed=seed,
    )


def oracle_interval(values: list[float], seed: int) -> tuple[float, float]:
    """The 95% percentile interval of the means of 1,000 resamples, on the run's seed."""
    draws = np.asarray(values)[bootstrap_indices(len(values), 1000, seed)].mean(axis=1)
    low, high = np.percentile(draws, [2.5, 97.5])
    return float(low), float(high)


def test_item_figures_become_sample_fields_metrics_and_intervals(
    jury: None, stub: StubServer, tmp_path: Path
) -> None:
    result = run_jury(stub, tmp_path / "run", seed=7)
    rows = result.samples(TASK)
    metrics = json.loads((tmp_path / "run" / "results.json").read_text())[TASK]
    assert len(rows) == 4 and metrics["n_items_scored"] == 4
    for a in AXES:
        key = f"axis_{a}"
        # the oracle: the share of the axis's criteria the stored verdicts mark met
        want = [
            float(np.mean([v["met"] for v in r["verdicts"] if v["tags"] == [f"axis:{a}"]]))
            for r in rows
        ]
        assert [r[key] for r in rows] == pytest.approx(want)
        assert metrics[key] == pytest.approx(np.mean(want))
        assert metrics[f"{key}_ci"] == pytest.approx(oracle_interval(want, 7))
        assert getattr(result[TASK], key) == pytest.approx(np.mean(want))
    scores = [r["score"] for r in rows]
    assert scores == pytest.approx([(r["axis_accuracy"] + r["axis_clarity"]) / 2 for r in rows])
    assert metrics["score_ci"] == pytest.approx(oracle_interval(scores, 7))
    assert result[TASK].score_ci == pytest.approx(oracle_interval(scores, 7))
    # the stub's verdicts are not all alike, else the figures above would prove little
    assert len({v["met"] for r in rows for v in r["verdicts"]}) == 2


def test_compare_pairs_a_declared_item_figure(jury: None, stub: StubServer, tmp_path: Path) -> None:
    run_jury(stub, tmp_path / "a")
    run_jury(stub, tmp_path / "b")
    compared = clineval.compare([tmp_path / "a", tmp_path / "b"])
    tested = {pair.metric for pair in compared.pairs}
    assert {"score", "axis_accuracy", "axis_clarity"} <= tested


def test_a_figure_named_like_the_kits_own_is_refused(
    jury: None, stub: StubServer, tmp_path: Path
) -> None:
    JuryTask.clash = True
    with pytest.raises(InputError, match="item_figures returned 'score'") as refused:
        run_jury(stub, tmp_path / "clash")
    assert f"task {TASK!r}" in str(refused.value)


@pytest.mark.parametrize(
    ("items", "message"),
    [
        ((*ITEMS, ITEMS[0]), "item id 'fixture-1' is used twice"),
        (
            (JudgedItem("fixture-9", "q", (Criterion("a-x", "one"), Criterion("a-x", "two"))),),
            "item 'fixture-9' has criterion id 'a-x' twice",
        ),
        ((JudgedItem("fixture-9", "q", ()),), "item 'fixture-9' has no criteria"),
    ],
)
def test_items_whose_stored_keys_would_collide_are_refused(
    jury: None, stub: StubServer, tmp_path: Path, items: tuple[JudgedItem, ...], message: str
) -> None:
    JuryTask.items_given = items
    asked = stub.stats()["requests"]
    with pytest.raises(InputError) as refused:
        run_jury(stub, tmp_path / "run")
    assert str(refused.value) == f"task {TASK!r}: {message}"
    assert stub.stats()["requests"] == asked  # refused at load: no call, nothing stored
    assert not (tmp_path / "run" / "store.sqlite").exists()


def test_rescoring_after_the_criterion_ids_changed_says_so(
    jury: None, stub: StubServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    run_jury(stub, tmp_path / "run")
    results = tmp_path / "run" / "results.json"
    before = results.read_text()
    renamed = tuple(
        JudgedItem(i.id, i.query, tuple(replace(c, id=c.id + "-new") for c in i.criteria))
        for i in ITEMS
    )
    JuryTask.items_given = renamed
    # every stored verdict is now unmatched: no score, and the run's figures are kept
    with pytest.raises(InputError) as refused:
        clineval.score(tmp_path / "run")
    assert str(refused.value) == (
        f"{results}: re-scoring leaves {TASK} without its primary metric 'score' (its results "
        f"say {json.loads(before)[TASK]['score']:g}); they are left as they were: did the data "
        "or the benchmark change since the run? (pass --force to replace them)"
    )
    assert results.read_text() == before
    with pytest.raises(clineval.RunFailed):  # --force: replaced, every verdict missing
        clineval.score(tmp_path / "run", force=True)
    said = [r.getMessage() for r in caplog.records if "stored verdict" in r.getMessage()]
    assert said == [
        f"warning: {TASK}: 24 stored verdict(s) belong to no criterion of the items evaluated:"
        " were item or criterion ids changed since they were judged? (or --limit / --shard"
        " leave their items out)"
    ]
    caplog.clear()
    JuryTask.items_given = ITEMS  # the ids as judged: nothing to say
    clineval.score(tmp_path / "run")
    assert not [r for r in caplog.records if "stored verdict" in r.getMessage()]
    assert json.loads(results.read_text())[TASK]["score"] == json.loads(before)[TASK]["score"]


def test_a_declared_metric_the_results_lack_is_named(
    stub: StubServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A declared figure the task never writes (here a misspelt axis) is a warning naming
    it, not a metric that silently never appears."""
    axes = (MetricSpec(f"axis_{a}", per_sample=f"axis_{a}") for a in AXES)
    misspelt = MetricSpec("axis_clarty", per_sample="axis_clarty")
    metrics = judged_metrics("mean", *axes, misspelt)
    bench = Benchmark(
        family=TASK, title="synthetic jury", tasks=(TASK,), make_task=JuryTask, metrics=metrics,
        options=(OPTIONS,), capabilities=frozenset({"predictions"}),
        run_settings=JUDGED_RUN_SETTINGS,
    )  # fmt: skip
    registry.register(bench)
    try:
        run_jury(stub, tmp_path / "run")
    finally:
        registry.unregister(TASK)
    said = [r.getMessage() for r in caplog.records if "declares the metric" in r.getMessage()]
    assert said == [
        f"warning: {TASK}: declares the metric 'axis_clarty', which its results do not hold"
        " (is the key spelt as declared?)"
    ]


@pytest.mark.parametrize("nan", [False, True])
def test_a_figure_that_does_not_apply_to_an_item_is_left_out(
    jury: None, stub: StubServer, tmp_path: Path, nan: bool
) -> None:
    only_accuracy = JudgedItem(
        "fixture-5", "q", (Criterion("accuracy-x", "only accuracy", tags=("axis:accuracy",)),)
    )
    JuryTask.items_given = (*ITEMS, only_accuracy)
    JuryTask.nan_for_absent = nan
    rows = {r["id"]: r for r in run_jury(stub, tmp_path / "run").samples(TASK)}
    metrics = json.loads((tmp_path / "run" / "results.json").read_text())[TASK]
    assert "axis_clarity" not in rows["fixture-5"] and "axis_accuracy" in rows["fixture-5"]
    clarity = [r["axis_clarity"] for r in rows.values() if "axis_clarity" in r]
    assert len(clarity) == 4 and metrics["axis_clarity"] == pytest.approx(np.mean(clarity))
    accuracy = [r["axis_accuracy"] for r in rows.values()]
    assert len(accuracy) == 5 and metrics["axis_accuracy"] == pytest.approx(np.mean(accuracy))
