"""`JudgedTask`: a whole judged task from a benchmark's items, wording and per-item score
(the judging kit's load, predict, plan and evaluate steps put together), with its metric
schema (`judged_metrics`) and per-item statistics for compare's paired test
(`score_statistics`). The plugin template examples/plugin-judged/ is one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from clineval.benchmarks.answer_checks import add_answer_checks
from clineval.benchmarks.base import RunContext, Task, TaskResult
from clineval.benchmarks.judged import (
    JudgedItem,
    JudgePanel,
    Judging,
    ReplyBounds,
    answer_text,
    check_slots,
    error_rate_failures,
    stored_answers,
    stored_verdicts,
    verdict_matrix,
)
from clineval.benchmarks.judged_flow import plan_judged, predict_judged
from clineval.benchmarks.kit import predictions_path, read_predictions, select_samples
from clineval.errors import InputError
from clineval.judge.ensemble import aggregate, agreement_table, count_ties, mean_grades
from clineval.judge.prompt import JudgePrompt, load_judge_prompt
from clineval.judge.verdict import VerdictRow
from clineval.metrics.schema import MetricSchema, MetricSpec
from clineval.models.registry import ModelKind
from clineval.plan import CallPlan
from clineval.reportkit.statistics import (
    SampleStatistic,
    bootstrap_interval,
    mean_statistic,
    ratio_statistic,
)

# The scoring settings a graded task reads (`Benchmark.scoring_settings`): the bound on judge
# errors. Not --judge-errors-as-unmet: a grade has no "not met", so the flag is refused.
GRADED_SCORING_SETTINGS = ("max_judge_error_rate",)


def judged_metrics(score_help: str, *more: MetricSpec, graded: bool = False) -> MetricSchema:
    """The metrics a JudgedTask reports, `score` first (the primary), then `more`: the
    benchmark's own figures (its `item_figures`, declared `per_sample`). `graded`: the
    task's prompt gives graded verdicts (`mean_grade` replaces `criteria_met_rate`)."""
    rate = (
        MetricSpec("mean_grade", "mean grade over the criteria judged")
        if graded
        else MetricSpec("criteria_met_rate", "criteria met / criteria judged")
    )
    return MetricSchema(
        (
            MetricSpec("score", score_help),
            rate,
            MetricSpec("judge_error_rate", "verdicts that could not be obtained", False),
            MetricSpec("n_items", "items", count=True),
            MetricSpec("n_items_scored", "items with every verdict", headline=False, count=True),
            MetricSpec("judge_errors", "verdicts that could not be obtained", False, False, True),
            MetricSpec("candidate_errors", "items without an answer", False, False, True),
            *more,
        )
    )


def score_statistics(
    metrics: dict[str, Any], samples: list[dict[str, Any]]
) -> dict[str, SampleStatistic]:
    """Per-item scores: what compare's paired bootstrap resamples."""
    rows = [r for r in samples if isinstance(r.get("score"), int | float)]
    if not rows:
        return {}
    return {"score": mean_statistic([str(r["id"]) for r in rows], [r["score"] for r in rows])}


# the metrics and sample fields JudgedTask writes itself: item_figures may not reuse them
_KIT_KEYS = frozenset(
    {spec.key for spec in judged_metrics("").metrics}
    | {"mean_grade"}
    | {"id", "query", "answer", "verdicts", "task", "per_judge", "aggregate", "agreement"}
    | {"aggregate_ties", "judges", "judge_is_candidate", "judge_errors_as_unmet"}
)


def _distinct(task: str, items: Sequence[JudgedItem]) -> list[JudgedItem]:
    """The items, refused when two share an id or one item two criterion ids: their answers
    or verdicts would share a stored key, and one would silently stand for the other."""
    seen: set[str] = set()
    for item in items:
        if item.id in seen:
            raise InputError(f"task {task!r}: item id {item.id!r} is used twice")
        seen.add(item.id)
        ids = [c.id for c in item.criteria]
        twice = sorted({i for i in ids if ids.count(i) > 1})
        if twice:
            raise InputError(f"task {task!r}: item {item.id!r} has criterion id {twice[0]!r} twice")
        if not ids:
            raise InputError(f"task {task!r}: item {item.id!r} has no criteria")
    return list(items)


def _unmatched(items: Sequence[JudgedItem], stored: dict[str, dict[str, Any]]) -> list[str]:
    """A warning when the store holds verdicts that no criterion evaluated now owns: the
    items or their criterion ids changed since they were judged (a judge error is then a
    stored verdict the task no longer finds), or --limit / --shard leave their items out."""
    keys = {key for item in items for key in item.verdict_keys()}
    extra = sum(1 for records in stored.values() for key in records if key not in keys)
    if not extra:
        return []
    return [
        f"{extra} stored verdict(s) belong to no criterion of the items evaluated: were item "
        "or criterion ids changed since they were judged? (or --limit / --shard leave their "
        "items out)"
    ]


def _text_answer(value: Any) -> str | None:
    return None if isinstance(value, str) else '"answer" must be a string'


def _columns(
    items: Sequence[JudgedItem], scored: list[tuple[float, dict[str, float]]]
) -> dict[str, tuple[list[str], list[float]]]:
    """`score` and each item figure over the scored items: (item ids, values) per key."""
    columns: dict[str, tuple[list[str], list[float]]] = {}
    for item, (score, figures) in zip(items, scored, strict=True):
        if math.isnan(score):
            continue
        for key, value in {"score": score, **figures}.items():
            ids, values = columns.setdefault(key, ([], []))
            ids.append(item.id)
            values.append(value)
    return columns


def _rate_intervals(
    items: Sequence[JudgedItem],
    matrix: NDArray[np.float64],
    answered: NDArray[np.bool_],
    unmet: bool,
    rate: str,
    seed: int,
) -> dict[str, list[float]]:
    """`KEY_ci` of the met rate (or mean grade, `rate`) and of `judge_error_rate`: seeded
    bootstrap intervals over the answered items, each figure a pooled ratio as computed. Stored
    with the figures, so that the run summary and the report need not read every verdict row
    of the samples back for them."""
    rows = np.flatnonzero(answered)
    if rows.size < 2:
        return {}
    kept = [items[i] for i in rows.tolist()]
    ids = [item.id for item in kept]
    size = np.array([len(item.criteria) for item in kept], dtype=np.float64)
    judged = (~np.isnan(matrix[rows])).sum(axis=1).astype(np.float64)
    met = np.nansum(matrix[rows], axis=1)
    out: dict[str, list[float]] = {"judge_error_rate_ci": [0.0, 0.0]}  # no errors: every draw 0
    if (errors := size - judged).any():
        stat = ratio_statistic(ids, errors.tolist(), size.tolist())
        out["judge_error_rate_ci"] = list(bootstrap_interval(stat, seed=seed))
    if (denominator := size if unmet else judged).sum():
        stat = ratio_statistic(ids, met.tolist(), denominator.tolist())
        out[f"{rate}_ci"] = list(bootstrap_interval(stat, seed=seed))
    return out


@dataclass(frozen=True)
class JudgedData:
    """What `JudgedTask.load` gives its other steps: the items this run evaluates (after
    --limit and --shard, with a predictions file's answers) and their `Judging` set-up."""

    items: tuple[JudgedItem, ...]
    judging: Judging


class JudgedTask(Task[JudgedData]):
    """A judged task whose headline is the mean of a per-item score (HealthBench's clipped
    points, a pass rate ...). A subclass sets `name`, `family`, `description`, `prompt` (its
    wording), `candidate_template` (its candidate prompt's version) and `option_group`
    (`judge_options(...)`, or a group holding those options), and implements `items(ctx)`
    (every item of its data; the kit applies --limit and --shard, and a `predictions:` model's
    answers, `{"id", "answer"}` lines) and `score(item, verdicts)`.

    Metrics (`judged_metrics`): `score`, the mean over the items whose every criterion has a
    verdict (every answered item with `--judge-errors-as-unmet`, errors then not met);
    `criteria_met_rate`; `judge_error_rate` and `judge_errors`, held to
    `--max-judge-error-rate` for the primary figures and for each judge of a panel; counts;
    with several judges `per_judge`, `aggregate` and `agreement`.

    A prompt of the graded kind (MedHELM's jury: 1-5 per criterion) gives `score` the
    verdicts as grades (its default `score` is their mean), `mean_grade` in place of
    `criteria_met_rate`, and a panel's verdict on a criterion is the mean of the grades its
    judges gave (`aggregate` "mean"; a judge error leaves its judge out of that mean).
    `--judge-errors-as-unmet` does not apply to grades: declare
    `scoring_settings=GRADED_SCORING_SETTINGS`, and a run refuses the flag."""

    prompt: ClassVar[JudgePrompt]
    candidate_template: ClassVar[str]

    def items(self, ctx: RunContext) -> Sequence[JudgedItem]:
        raise NotImplementedError

    def score(self, item: JudgedItem, verdicts: NDArray[np.float64]) -> float:
        """One answered item's score from its verdicts (1 met, 0 not met, or the grades of a
        graded prompt, one per criterion in the item's order; never nan here). Default: a
        graded prompt's mean grade (a binary one must say)."""
        if self.prompt.kind.name == "graded":
            return float(np.mean(verdicts))
        raise NotImplementedError

    def item_figures(self, item: JudgedItem, verdicts: NDArray[np.float64]) -> dict[str, float]:
        """Further figures of one answered item besides its score (HealthBench's per-axis
        scores, MedHELM's per-dimension ratings ...), called with the same verdicts as
        `score`. Each key becomes a field of the item's sample row and a metric of the same
        key, the mean over the scored items it applies to (a key left out, or nan, for an
        item it does not apply to); declare it as `MetricSpec(KEY, per_sample=KEY)`
        and compare's paired test and the report's interval come with it. A key must not be
        one of the kit's own metrics or row fields. None by default."""
        return {}

    def summarize(
        self, ctx: RunContext, key: str, ids: list[str], values: list[float]
    ) -> dict[str, Any]:
        """The metrics of one column, `score` or an item figure, over the scored items (`ids`,
        `values`, at least one): by default `KEY`, their mean, and `KEY_ci`, its 95% bootstrap
        interval drawn with the run's seed (as the report's, which then shows it). A benchmark
        whose figure is not the plain mean (HealthBench's clipped mean and bootstrap std)
        returns its own here: the kit then computes no interval of its own for the column.
        Called once per column of the primary figures (a panel's per-judge figures stay
        plain means)."""
        interval = (
            list(bootstrap_interval(mean_statistic(ids, values), seed=ctx.config.seed))
            if len(ids) > 1
            else None
        )
        return {key: float(np.mean(values)), f"{key}_ci": interval}

    def judge_prompt(self, setting: str | None) -> JudgePrompt:
        """The wording `--judge-prompt` names (`setting`; None: the benchmark's own). A
        benchmark with named prompts of its own (an official one fetched at use time)
        resolves those here and leaves the rest to this default (a template file)."""
        return load_judge_prompt(setting, self.prompt)

    def _option(self, ctx: RunContext, name: str) -> Any:
        assert self.option_group is not None, "a JudgedTask declares judge_options(...)"
        return self.option_group.value(ctx.config.options, name)

    def _answers(
        self, ctx: RunContext, every: list[JudgedItem], items: list[JudgedItem]
    ) -> list[JudgedItem]:
        if ctx.backend.kind is not ModelKind.PREDICTIONS:
            return items
        if not ctx.config.judges:
            raise InputError("--model predictions:... gives the answers: name the judges (--judge)")
        # the file may answer every item: its ids are checked against all of them, and the
        # answers of the items --limit / --shard kept are used
        given = read_predictions(
            predictions_path(ctx, self.name),
            {i.id for i in every},
            "answer",
            _text_answer,
            selected={i.id for i in items},
        )
        # an item the file leaves out stays unanswered: reported, never asked of a model
        return [replace(i, answer=given.get(i.id)) for i in items]

    def load(self, ctx: RunContext) -> JudgedData:
        every = _distinct(self.name, self.items(ctx))
        items = self._answers(ctx, every, select_samples(ctx, every, lambda i: i.id))
        panel = JudgePanel.from_config(ctx.config)
        cap = self._option(ctx, "judge_max_tokens")
        chars = self._option(ctx, "judge_explanation_chars")
        bounds = {
            label: ReplyBounds.of(spec, cap, chars)
            for label, spec in zip(panel.labels, panel.specs, strict=True)
        }
        if self.prompt.kind.name == "categorical" and type(self).evaluate is JudgedTask.evaluate:
            raise InputError(
                f"task {self.name!r}: a categorical judge prompt needs a task that reads labels "
                "(PairwiseTask), not JudgedTask's scores"
            )
        check_slots(self.name, self.prompt, items)
        judging = Judging(
            task=self.name,
            prompt=self.judge_prompt(ctx.config.judge_prompt),
            candidate_template=self.candidate_template,
            panel=panel,
            bounds=bounds,
            retries=self._option(ctx, "judge_retries"),
        )
        ctx.note(self.name, "n_items", len(items))
        return JudgedData(tuple(items), judging)

    def predict(self, ctx: RunContext, data: JudgedData) -> None:
        ctx.note(self.name, "progress", predict_judged(ctx, data.judging, data.items))

    def plan(self, ctx: RunContext, data: JudgedData, calls: CallPlan) -> None:
        plan_judged(ctx, data.judging, data.items, calls)

    def _figures(
        self,
        items: Sequence[JudgedItem],
        matrix: NDArray[np.float64],
        answered: NDArray[np.bool_],
        unmet: bool,
    ) -> tuple[dict[str, Any], list[tuple[float, dict[str, float]]]]:
        graded = self.prompt.kind.name == "graded"
        unmet = unmet and not graded
        n_criteria = np.array([len(i.criteria) for i in items], dtype=np.int64)
        judged = (~np.isnan(matrix)).sum(axis=1)
        errors = int((n_criteria - judged)[answered].sum())
        size = int(n_criteria[answered].sum())
        scores: list[float] = []
        extra: list[dict[str, float]] = []
        for i, item in enumerate(items):
            row = matrix[i, : len(item.criteria)]
            if unmet:
                row = np.nan_to_num(row, nan=0.0)
            ok = bool(answered[i]) and not np.isnan(row).any()
            scores.append(float(self.score(item, row)) if ok else math.nan)
            extra.append(self._item_figures(item, row) if ok else {})
        scored = [s for s in scores if not math.isnan(s)]
        denominator = size if unmet else size - errors
        rate = float(np.nansum(matrix[answered])) / denominator if denominator else None
        figures = {
            "score": float(np.mean(scored)) if scored else None,
            ("mean_grade" if graded else "criteria_met_rate"): rate,
            "judge_errors": errors,
            "judge_error_rate": errors / size if size else 0.0,
            "n_items_scored": len(scored),
        }
        for key in dict.fromkeys(k for e in extra for k in e):
            values = [e[key] for e in extra if key in e]
            figures[key] = float(np.mean(values)) if values else None
        return figures, [(s, e) for s, e in zip(scores, extra, strict=True)]

    def _item_figures(self, item: JudgedItem, row: NDArray[np.float64]) -> dict[str, float]:
        figures = self.item_figures(item, row)
        taken = _KIT_KEYS.intersection(figures)
        if taken:
            # the benchmark's error, one line naming its task (results would be ambiguous)
            raise InputError(
                f"task {self.name!r}: item_figures returned {sorted(taken)[0]!r}, a name the "
                "judging kit uses itself: rename the figure"
            )
        # a figure that does not apply to the item (nan) is left out, as an absent key is
        return {k: float(v) for k, v in figures.items() if math.isfinite(float(v))}

    def evaluate(self, ctx: RunContext, data: JudgedData) -> TaskResult:
        items, labels = data.items, data.judging.panel.labels
        stored = stored_verdicts(ctx.store, self.name, labels)
        answers = stored_answers(ctx.store, self.name)
        width = max((len(i.criteria) for i in items), default=0)
        matrices = {label: verdict_matrix(stored[label], items, width) for label in labels}
        answered = np.array([answer_text(answers.get(i.id)) is not None for i in items], bool)
        graded = self.prompt.kind.name == "graded"
        rule = "mean" if graded else self._option(ctx, "aggregate")
        stacked = np.stack([m.ravel() for m in matrices.values()])
        primary = (mean_grades(stacked) if graded else aggregate(stacked, rule)).reshape(
            len(items), width
        )
        if len(labels) == 1:
            primary = matrices[labels[0]]
        unmet = ctx.config.judge_errors_as_unmet
        headline, scores = self._figures(items, primary, answered, unmet)
        for key, (ids, values) in _columns(items, scores).items():
            headline |= self.summarize(ctx, key, ids, values)
        rate = "mean_grade" if graded else "criteria_met_rate"
        seed = ctx.config.seed
        headline |= _rate_intervals(items, primary, answered, unmet and not graded, rate, seed)
        metrics: dict[str, Any] = {
            **headline,
            "n_items": len(items),
            "candidate_errors": int((~answered).sum()),
            "judge_errors_as_unmet": unmet,
            "judges": list(labels),
            "judge_is_candidate": data.judging.panel.judge_is_candidate,
        }
        bounded: dict[str, dict[str, Any]] = {"": headline}
        if len(labels) > 1:
            per_judge = {
                k: self._figures(items, m, answered, unmet)[0] for k, m in matrices.items()
            }
            metrics.update(per_judge=per_judge, aggregate=rule)
            if not graded:  # percent agreement and kappa are of binary verdicts
                metrics["agreement"] = agreement_table({k: m.ravel() for k, m in matrices.items()})
                metrics["aggregate_ties"] = count_ties(stacked)
            bounded.update({f" of {k}": v for k, v in per_judge.items()})
        add_answer_checks(metrics, (answers.get(item.id) for item in items))
        samples = [self._row(item, stored, answers, scores[n]) for n, item in enumerate(items)]
        errors = error_rate_failures(ctx.config.max_judge_error_rate, bounded)
        # an item without an answer fails the run, as every benchmark's (benchmarks.missing)
        absent = [item.id for item, ok in zip(items, answered, strict=True) if not ok]
        return TaskResult(metrics, samples, errors, _unmatched(items, stored), absent)

    def _row(
        self,
        item: JudgedItem,
        stored: Any,
        answers: dict[str, Any],
        scored: tuple[float, dict[str, float]],
    ) -> dict[str, Any]:
        score, figures = scored
        verdicts = [
            VerdictRow.row_of(c.id, c.text, label, records.get(key), c.points, c.tags)
            for label, records in stored.items()
            for c, key in zip(item.criteria, item.verdict_keys(), strict=True)
        ]
        return {
            "id": item.id,
            "query": item.query,
            "answer": answer_text(answers.get(item.id)),
            "score": None if math.isnan(score) else score,
            **figures,
            "verdicts": verdicts,
        }
