"""The HealthBench tasks on the judging kit: the examples (or meta-eval rows) as judged items,
our grader wording, and the authors' figures (scores.py) over the kit's stored verdicts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from clineval.benchmarks import (
    Criterion,
    DataFileStatus,
    InputError,
    JudgedData,
    JudgedItem,
    JudgedTask,
    JudgePrompt,
    ModelKind,
    RunContext,
    SampleStatistic,
    TaskResult,
    load_judge_prompt,
    require_file,
    score_statistics,
)
from clineval.benchmarks.healthbench import FAMILY, META, OPTIONS
from clineval.benchmarks.healthbench.data import (
    Example,
    MetaRow,
    read_file,
    relative,
    render,
    source,
)
from clineval.benchmarks.healthbench.scores import (
    balanced_f1,
    clipped_stats,
    example_figures,
    percentile_among,
    physician_figures,
    points_score,
    weighted_mean,
)

# Our own wording of the grader's task. The conversation is the authors' rendering: `role:
# content` blocks, the answer appended as `assistant`; the rubric item is `[points] criterion`.
JUDGE = JudgePrompt(
    template="""You grade one reply in a health conversation against ONE item of a \
rubric that physicians wrote.

The conversation, whose final assistant turn is the reply under review:
{query}

assistant: {response}

The rubric item (its points in brackets; negative points mark something a reply should not do):
{criterion}

Decide whether the final assistant turn does what the item describes. Every part of an item \
with several parts must hold. Examples an item lists ("such as", "for example", "including") \
illustrate it: the reply need not name all of them. For an item with negative points, say \
whether the reply does that undesirable thing, not whether the reply is good.

Reply with only a JSON object:
{"explanation": "<why, briefly>", "criteria_met": true or false}""",
    version="healthbench-judge-v1",
    defuse=False,  # the conversation is shown exactly as the authors render it
)
OFFICIAL = "official"
_ROW_KEYS = {"id", "query", "answer", "score", "verdicts", "task"}


def judge_prompt(setting: str | None) -> JudgePrompt:
    if setting == OFFICIAL:
        from clineval.benchmarks.healthbench.official import official_prompt

        return official_prompt()
    return load_judge_prompt(setting, JUDGE)


def healthbench_statistics(
    metrics: dict[str, Any], samples: list[dict[str, Any]]
) -> dict[str, SampleStatistic]:
    """Compare's paired test resamples the examples' (unclipped) scores, as the kit's."""
    return score_statistics(metrics, samples)


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
        self.meta = name == META
        self.fixture = False

    def data_status(self, data_root: Path | None) -> list[DataFileStatus]:
        try:
            require_file(data_root, relative(self.name))
        except InputError:
            return [DataFileStatus(relative(self.name), "missing")]
        return [DataFileStatus(relative(self.name), "not checked")]

    def judge_prompt(self, setting: str | None) -> JudgePrompt:
        return judge_prompt(setting)

    def _read(self, ctx: RunContext) -> list[Any]:
        cases = self._option(ctx, "cases")
        path, self.fixture = source(self.name, cases, ctx.data_root)
        ctx.note(self.name, "cases_file", str(path))
        ctx.note(self.name, "fixture", self.fixture)
        return read_file(path, self.meta)

    def evaluate(self, ctx: RunContext, data: JudgedData) -> TaskResult:
        result = super().evaluate(ctx, data)
        result.metrics["fixture"] = self.fixture
        return result


class HealthBenchTask(_Base):
    description = "HealthBench: rubric-graded health conversations (clipped points score)"

    def items(self, ctx: RunContext) -> list[JudgedItem]:
        examples: list[Example] = self._read(ctx)
        ideal = self._option(ctx, "completions") == "ideal"
        if ideal and ctx.backend.kind is ModelKind.PREDICTIONS:
            raise InputError(
                "healthbench.completions=ideal grades the data's completions: "
                "--model predictions:... gives other answers (use one or the other)"
            )
        self.examples = {e.prompt_id: e for e in examples if e.ideal is not None or not ideal}
        return [
            JudgedItem(
                e.prompt_id,
                render(e.prompt),
                tuple(
                    Criterion(f"c{i}", r.shown, r.points, r.tags) for i, r in enumerate(e.rubrics)
                ),
                e.prompt,
                e.ideal if ideal else None,
            )
            for e in self.examples.values()
        ]

    def score(self, item: JudgedItem, verdicts: NDArray[np.float64]) -> float:
        value = points_score([c.points for c in item.criteria], list(verdicts))
        assert value is not None, "the reader refuses a rubric without positive points"
        return value

    def item_figures(self, item: JudgedItem, verdicts: NDArray[np.float64]) -> dict[str, float]:
        tags = self.examples[item.id].tags
        rubric_tags = [c.tags for c in item.criteria]
        points = [c.points for c in item.criteria]
        return example_figures(tags, rubric_tags, points, verdicts.tolist())

    def evaluate(self, ctx: RunContext, data: JudgedData) -> TaskResult:
        result = super().evaluate(ctx, data)
        metrics = result.metrics
        per_sample = self._option(ctx, "clip") == "sample"
        columns: dict[str, list[float]] = {}
        for row in result.samples:
            if row["score"] is None:
                continue
            for key, value in row.items():
                if key == "score" or (key not in _ROW_KEYS and isinstance(value, float)):
                    columns.setdefault(key, []).append(value)
        for key in columns:  # the kit's unclipped means and intervals give way to the authors'
            metrics.pop(f"{key}_ci", None)
        for key, values in {
            "score": columns.pop("score", []),
            **dict(sorted(columns.items())),
        }.items():
            stats = clipped_stats(values, ctx.config.seed, per_sample)
            metrics[key] = stats["mean"]
            metrics[f"{key}_ci"] = stats["ci"]
            metrics[f"{key}:bootstrap_std"] = stats["bootstrap_std"]
            metrics[f"{key}:n_samples"] = stats["n"]
        metrics["clip"] = "per sample" if per_sample else "mean"
        metrics["completions"] = self._option(ctx, "completions")
        return result


class MetaEvalTask(_Base):
    description = "HealthBench meta-evaluation: the model as grader, against physicians"

    def items(self, ctx: RunContext) -> list[JudgedItem]:
        rows: list[MetaRow] = self._read(ctx)
        self.rows = {r.id: r for r in rows}
        # the authors' grader sees the bare rubric text (no points)
        return [
            JudgedItem(
                r.id, render(r.prompt), (Criterion("rubric", r.rubric),), r.prompt, r.completion
            )
            for r in rows
        ]

    def score(self, item: JudgedItem, verdicts: NDArray[np.float64]) -> float:
        return float(verdicts[0])

    def evaluate(self, ctx: RunContext, data: JudgedData) -> TaskResult:
        result = super().evaluate(ctx, data)
        labels = {row["id"]: row["score"] for row in result.samples if row["score"] is not None}
        rows = [self.rows[item.id] for item in data.items]
        pairs: dict[str, list[tuple[bool, bool]]] = {}
        for row in rows:
            if row.id in labels:
                own = bool(labels[row.id])
                pairs.setdefault("", []).extend((own, other) for other in row.labels)
                pairs.setdefault(row.category, []).extend((own, other) for other in row.labels)
        overall = balanced_f1(pairs.pop("", []))
        physicians = physician_figures([(r.physicians, r.labels, r.category) for r in rows])
        grader = overall["balanced_f1"]["value"]
        metrics = result.metrics
        for key in ("score", "score_ci", "criteria_met_rate", "n_items_scored"):
            metrics.pop(key, None)
        metrics.update(
            balanced_f1=grader,
            f1_pos=overall["f1_pos"]["value"],
            f1_neg=overall["f1_neg"]["value"],
            pairwise=overall,
            by_category={
                c: balanced_f1(p)["balanced_f1"]["value"] for c, p in sorted(pairs.items())
            },
            physicians=physicians,
            physician_mean=weighted_mean(physicians),
            grader_percentile=percentile_among(
                grader, [p["balanced_f1"] for p in physicians.values()]
            ),
            n_labelled=len(labels),
        )
        return result
