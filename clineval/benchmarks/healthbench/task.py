"""The HealthBench tasks on the judging kit: the examples (or meta-eval rows) as judged items,
our grader wording, and the authors' figures (scores.py) over the kit's stored verdicts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from clineval.benchmarks import (
    DataFileStatus,
    InputError,
    JudgedData,
    JudgedItem,
    JudgedTask,
    JudgePrompt,
    ModelKind,
    RunContext,
    TaskResult,
    load_judge_prompt,
    percentile_among,
    require_file,
    weighted_mean,
)
from clineval.benchmarks.healthbench import FAMILY, OPTIONS, data, official, scores

# Our own wording (resources/judge_prompt.txt; bump the version with the words) around the
# authors' rendering: the conversation with the answer appended, one `[points] criterion`.
JUDGE = JudgePrompt(
    (data.RESOURCES / "judge_prompt.txt").read_text("utf-8").strip(),
    "healthbench-judge-v1",
    defuse=False,  # the conversation is shown exactly as the authors render it
)


def judge_prompt(setting: str | None) -> JudgePrompt:
    if setting == "official":
        return official.official_prompt()
    return load_judge_prompt(setting, JUDGE)


def check_prompt(config: Any) -> None:
    """The declaration's check_settings: the prompt --judge-prompt names resolves (the
    official one is fetched and checked now), before the run writes anything."""
    judge_prompt(config.judge_prompt)


class _Base(JudgedTask):
    family = FAMILY
    option_group = OPTIONS
    prompt = JUDGE
    candidate_template = "healthbench-candidate-v1"  # the conversation as given

    def __init__(self, name: str) -> None:
        self.name = name
        self.meta = name == data.META
        self.fixture = False

    def data_status(self, data_root: Path | None) -> list[DataFileStatus]:
        try:
            require_file(data_root, where := data.relative(self.name))
        except InputError:
            return [DataFileStatus(where, "missing")]
        return [DataFileStatus(where, "not checked")]

    judge_prompt = staticmethod(judge_prompt)

    def _read(self, ctx: RunContext) -> list[Any]:
        cases = self._option(ctx, "cases")
        path, self.fixture = data.source(self.name, cases, ctx.data_root)
        ctx.note(self.name, "cases_file", str(path))
        ctx.note(self.name, "fixture", self.fixture)
        return data.read_file(path, self.meta)

    def evaluate(self, ctx: RunContext, judged: JudgedData) -> TaskResult:
        result = super().evaluate(ctx, judged)
        result.metrics["fixture"] = self.fixture
        return result


class HealthBenchTask(_Base):
    description = "HealthBench: rubric-graded health conversations (clipped points score)"

    def items(self, ctx: RunContext) -> list[JudgedItem]:
        examples: list[data.Example] = self._read(ctx)
        ideal = self._option(ctx, "completions") == "ideal"
        if ideal and ctx.backend.kind is ModelKind.PREDICTIONS:
            raise InputError(
                "healthbench.completions=ideal grades the data's completions: "
                "--model predictions:... gives other answers (use one or the other)"
            )
        self.examples = {e.prompt_id: e for e in examples if e.ideal is not None or not ideal}
        return [
            JudgedItem(e.prompt_id, data.render(e.prompt), e.criteria, e.prompt, answer)
            for e in self.examples.values()
            for answer in [e.ideal if ideal else None]
        ]

    def score(self, item: JudgedItem, verdicts: NDArray[np.float64]) -> float:
        value = scores.points_score([c.points for c in item.criteria], list(verdicts))
        assert value is not None, "the reader refuses a rubric without positive points"
        return value

    def item_figures(self, item: JudgedItem, verdicts: NDArray[np.float64]) -> dict[str, float]:
        return scores.example_figures(self.examples[item.id].tags, item.criteria, verdicts.tolist())

    def summarize(self, ctx: RunContext, key: str, ids: list[str], values: list[float]) -> Any:
        # the authors' clipped figures, in place of the kit's plain mean and interval
        sample = self._option(ctx, "clip") == "sample"
        return scores.clipped_stats(key, values, ctx.config.seed, sample)

    def evaluate(self, ctx: RunContext, judged: JudgedData) -> TaskResult:
        result = super().evaluate(ctx, judged)
        result.metrics["clip"] = "per sample" if self._option(ctx, "clip") == "sample" else "mean"
        result.metrics["completions"] = self._option(ctx, "completions")
        return result


class MetaEvalTask(_Base):
    description = "HealthBench meta-evaluation: the model as grader, against physicians"

    def items(self, ctx: RunContext) -> list[JudgedItem]:
        rows: list[data.MetaRow] = self._read(ctx)
        self.rows = {r.item.id: r for r in rows}
        return [r.item for r in rows]  # the authors' grader sees the bare rubric text

    def score(self, item: JudgedItem, verdicts: NDArray[np.float64]) -> float:
        return float(verdicts[0])

    def evaluate(self, ctx: RunContext, judged: JudgedData) -> TaskResult:
        result = super().evaluate(ctx, judged)
        labels = {r["id"]: bool(r["score"]) for r in result.samples if r["score"] is not None}
        rows = [self.rows[item.id] for item in judged.items]
        pairs: dict[str, list[tuple[bool, bool]]] = {}
        votes: dict[str, list[tuple[bool, bool]]] = {}  # inspect_evals: a tie is not met
        for row, own in ((r, labels[r.item.id]) for r in rows if r.item.id in labels):
            for key in ("", row.category):  # "": every row's pairs pooled
                pairs.setdefault(key, []).extend((own, other) for other in row.labels)
                votes.setdefault(key, []).append((own, sum(row.labels) > len(row.labels) / 2))
        overall = scores.agreement(pairs.pop("", []))
        physicians = scores.physician_figures([(r.physicians, r.labels, r.category) for r in rows])
        kit = ("score", "criteria_met_rate", "n_items_scored")  # the kit's figures, not ours
        metrics = {k: v for k, v in result.metrics.items() if k.removesuffix("_ci") not in kit}
        result.metrics = metrics
        others = [p["balanced_f1"] for p in physicians.values()]
        metrics.update(
            balanced_f1=overall["balanced_f1"],
            balanced_f1_n=overall["n"],
            by_category={c: scores.agreement(p) for c, p in sorted(pairs.items())},
            physicians=physicians,
            physician_mean=weighted_mean((p["balanced_f1"], p["n"]) for p in physicians.values()),
            grader_percentile=percentile_among(overall["balanced_f1"], others),
            n_labelled=len(labels),
            meta_reference=self._option(ctx, "meta_reference"),
        )
        if metrics["meta_reference"] == "majority":  # inspect_evals' figure, beside the authors'
            majority = {c: scores.majority_agreement(v) for c, v in sorted(votes.items())}
            pooled = majority.pop("", {"macro_f1": None, "n": 0})
            metrics |= {"majority_f1": pooled["macro_f1"], "majority_f1_n": pooled["n"]}
            metrics["majority_by_category"] = majority
        return result
