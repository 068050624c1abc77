"""`JudgedTask`: a whole judged task from a benchmark's items, wording and per-item score
(the judging kit's predict, plan and evaluate steps put together). The plugin template
examples/plugin-judged/ is one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from clineval.benchmarks.base import RunContext, Task, TaskResult
from clineval.benchmarks.judged import (
    JudgedItem,
    JudgePanel,
    Judging,
    ReplyBounds,
    answer_text,
    error_rate_failures,
    judge_prompt_setting,
    stored_answers,
    stored_verdicts,
    verdict_matrix,
)
from clineval.benchmarks.judged_flow import plan_judged, predict_judged
from clineval.judge.ensemble import aggregate, agreement_table, count_ties
from clineval.judge.prompt import JudgePrompt
from clineval.plan import CallPlan

# A judged task's score of one item from its verdicts (1 met, 0 not met, nan no verdict,
# one per criterion in the item's order), or nan when it cannot be scored.
ItemScore = Callable[[JudgedItem, NDArray[np.float64]], float]


@dataclass
class JudgedData:
    items: tuple[JudgedItem, ...]
    judging: Judging
    extra: dict[str, Any] = field(default_factory=dict)  # the benchmark's own loaded data


class JudgedTask(Task[JudgedData]):
    """A judged task whose headline is the mean of a per-item score (HealthBench's clipped
    points, a pass rate ...). A subclass sets `name`, `family`, `description`, `prompt` (its
    wording), `candidate_template` and `option_group` (`judge_options(...)` or a group that
    holds those options), and implements `items(ctx)` and `score(item, verdicts)`.

    Its metrics: `score` (mean over the items whose every criterion has a verdict, or every
    item with `--judge-errors-as-unmet`, errors then not met), `criteria_met_rate`,
    `judge_error_rate`, `judge_errors`, `n_items`, `n_items_scored`, `candidate_errors`, and
    with several judges `per_judge` and `agreement`."""

    prompt: ClassVar[JudgePrompt]
    candidate_template: ClassVar[str]

    def items(self, ctx: RunContext) -> Sequence[JudgedItem]:
        raise NotImplementedError

    def score(self, item: JudgedItem, verdicts: NDArray[np.float64]) -> float:
        raise NotImplementedError

    def _option(self, ctx: RunContext, name: str) -> Any:
        assert self.option_group is not None
        return self.option_group.value(ctx.config.options, name)

    def load(self, ctx: RunContext) -> JudgedData:
        items = tuple(self.items(ctx))
        panel = JudgePanel.from_config(ctx.config)
        cap = self._option(ctx, "judge_max_tokens")
        bounds = {
            label: ReplyBounds.of(spec, cap, None)
            for label, spec in zip(panel.labels, panel.specs, strict=True)
        }
        judging = Judging(
            task=self.name,
            prompt=judge_prompt_setting(ctx.config, self.prompt),
            candidate_template=self.candidate_template,
            panel=panel,
            bounds=bounds,
            retries=self._option(ctx, "judge_retries"),
        )
        ctx.note(self.name, "n_items", len(items))
        return JudgedData(items, judging)

    def predict(self, ctx: RunContext, data: JudgedData) -> None:
        ctx.note(self.name, "progress", predict_judged(ctx, data.judging, data.items))

    def plan(self, ctx: RunContext, data: JudgedData, calls: CallPlan) -> None:
        plan_judged(ctx, data.judging, data.items, calls)

    def _figures(
        self,
        data: JudgedData,
        matrix: NDArray[np.float64],
        answered: NDArray[np.bool_],
        unmet: bool,
    ) -> tuple[dict[str, Any], list[float]]:
        n_criteria = np.array([len(i.criteria) for i in data.items])
        judged = (~np.isnan(matrix)).sum(axis=1)
        errors = int((n_criteria - judged)[answered].sum())
        size = int(n_criteria[answered].sum())
        scores: list[float] = []
        for i, item in enumerate(data.items):
            row = matrix[i, : len(item.criteria)]
            if unmet:
                row = np.nan_to_num(row, nan=0.0)
            ok = answered[i] and not np.isnan(row).any()
            scores.append(self.score(item, row) if ok else math.nan)
        scored = [s for s in scores if not math.isnan(s)]
        met = float(np.nansum(matrix[answered]))
        figures = {
            "score": float(np.mean(scored)) if scored else None,
            "criteria_met_rate": met / (size if unmet else size - errors)
            if size - errors
            else None,
            "judge_errors": errors,
            "judge_error_rate": errors / size if size else 0.0,
            "n_items_scored": len(scored),
        }
        return figures, scores

    def evaluate(self, ctx: RunContext, data: JudgedData) -> TaskResult:
        judging, items = data.judging, data.items
        labels = judging.panel.labels
        stored = stored_verdicts(ctx.store, self.name, labels)
        answers = stored_answers(ctx.store, self.name)
        width = max((len(i.criteria) for i in items), default=0)
        matrices = {label: verdict_matrix(stored[label], items, width) for label in labels}
        answered = np.array([answer_text(answers.get(i.id)) is not None for i in items], bool)
        rule = self._option(ctx, "aggregate")
        if len(labels) == 1:
            primary = matrices[labels[0]]
        else:
            stacked = np.stack([m.ravel() for m in matrices.values()])
            primary = aggregate(stacked, rule).reshape(len(items), width)
        unmet = ctx.config.judge_errors_as_unmet
        headline, scores = self._figures(data, primary, answered, unmet)
        metrics: dict[str, Any] = {
            **headline,
            "n_items": len(items),
            "candidate_errors": int((~answered).sum()),
            "judge_errors_as_unmet": unmet,
            "judges": list(labels),
            "judge_is_candidate": judging.panel.judge_is_candidate,
        }
        bounded: dict[str, Mapping[str, Any]] = {"": headline}
        if len(labels) > 1:
            metrics["aggregate"] = rule
            metrics["aggregate_ties"] = count_ties(stacked)
            per_judge = {k: self._figures(data, m, answered, unmet)[0] for k, m in matrices.items()}
            metrics["per_judge"] = per_judge
            metrics["agreement"] = agreement_table({k: m.ravel() for k, m in matrices.items()})
            bounded.update({f" of {k}": v for k, v in per_judge.items()})
        samples = []
        for i, item in enumerate(items):
            verdicts = [
                {
                    "criterion_id": c.id,
                    "criterion": c.text,
                    "points": c.points,
                    "judge": label,
                    "met": None if (r := stored[label].get(key)) is None else r.met,
                    **({"error": r.error} if r is not None and r.error else {}),
                }
                for label in labels
                for c, key in zip(item.criteria, item.verdict_keys(), strict=True)
            ]
            samples.append(
                {
                    "id": item.id,
                    "query": item.query,
                    "answer": answer_text(answers.get(item.id)),
                    "score": None if math.isnan(scores[i]) else scores[i],
                    "verdicts": verdicts,
                }
            )
        errors = error_rate_failures(ctx.config.max_judge_error_rate, bounded)
        if metrics["candidate_errors"]:
            errors.append(f"{metrics['candidate_errors']} item(s) got no candidate answer")
        return TaskResult(metrics=metrics, samples=samples, errors=errors)
