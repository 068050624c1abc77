"""Pairwise judging on the kit: the candidate's answer against a reference (or baseline)
answer, judged in both orders (MT-bench, Arena-Hard).

A pairwise item (`pairwise_item`) is a `JudgedItem` whose two criteria are its two games:
`candidate-first` (the candidate's answer in the prompt's {answer_a}, the reference in
{answer_b}) and `candidate-second` (the other way round); the item's {question} and
{reference} are slots of every call. So everything the kit does for a rubric it does for the
games: one stored verdict per (judge, item, game), bounded re-asks, caching and resume,
`--dry-run`, batch rounds, `--reuse`, `--judge-prompt`, judge errors counted per judge and held
to `--max-judge-error-rate`.

`PairwiseTask` reads the labels back (judge/pairwise.py): each game's label mapped to the
candidate's outcome, a panel's label per game by strict majority (a split panel gives the
scale's tie label, counted in `aggregate_ties`), the two orders combined by the
`disagreement` policy (`tie`, MT-bench's, or `both`, Arena-Hard's), then `win_rate` with a
bootstrap interval over items (each item's two games resampled together), `tie_rate` and
`position_consistency`.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from clineval.benchmarks.answer_checks import add_answer_checks
from clineval.benchmarks.base import RunContext, TaskResult
from clineval.benchmarks.judged import (
    Criterion,
    JudgedItem,
    answer_text,
    error_rate_failures,
    judge_options,
    stored_answers,
    stored_verdicts,
)
from clineval.benchmarks.judged_task import JudgedData, JudgedTask, _unmatched
from clineval.judge.ensemble import majority_label
from clineval.judge.pairwise import MT_BENCH, PairwiseScale, game_rows
from clineval.judge.verdict import VerdictRecord, VerdictRow
from clineval.metrics.pairwise import (
    POLICIES,
    position_consistency,
    tie_rate,
    win_rate_interval,
)
from clineval.metrics.schema import MetricSchema, MetricSpec
from clineval.options import Option, OptionGroup, choice
from clineval.reportkit.statistics import SampleStatistic, ratio_statistic

Games = tuple[tuple[float, float], tuple[float, float]]  # (candidate score, weight) per order

FIRST, SECOND = "candidate-first", "candidate-second"
PAIRWISE_SLOTS = ("question", "answer_a", "answer_b")
# The scoring settings a pairwise task reads (`Benchmark.scoring_settings`): the bound on
# judge errors. Not --judge-errors-as-unmet: a game has no "not met" (a game without a
# verdict leaves its item out, counted), so a run of pairwise tasks refuses that flag.
PAIRWISE_SCORING_SETTINGS: tuple[str, ...] = ("max_judge_error_rate",)


def pairwise_item(
    item_id: str,
    question: str,
    reference: str,
    *,
    messages: tuple[tuple[str, str], ...] = (),
    answer: str | None = None,
    instruction: str = "",
) -> JudgedItem:
    """One pairwise item: the candidate answers `question` (or `messages`); the judge sees
    {question}, the two answers in {answer_a} / {answer_b} and {reference}; `instruction`
    is its {criterion} (what makes an answer better, if the prompt has that slot)."""
    games = (
        Criterion(FIRST, instruction, answer_slot="answer_a", slots=(("answer_b", reference),)),
        Criterion(SECOND, instruction, answer_slot="answer_b", slots=(("answer_a", reference),)),
    )
    slots = (("question", question), ("reference", reference))
    return JudgedItem(item_id, question, games, messages, answer, slots)


def pairwise_options(namespace: str, applies_to: str, *more: Option) -> OptionGroup:
    """The judge options of a pairwise task (judge_options without `aggregate`: a panel
    decides a game by strict majority), `disagreement` and the benchmark's own `more`."""
    base = judge_options(namespace, applies_to)
    kept = tuple(o for o in base.options if o.name != "aggregate")
    policy = Option(
        "disagreement",
        choice(*POLICIES),
        "two orders that disagree: tie (MT-bench: the item is a tie) or both (Arena-Hard: "
        "both games kept)",
        "tie",
        scoring_only=True,
    )
    return OptionGroup(namespace=namespace, applies_to=applies_to, options=(*kept, policy, *more))


def pairwise_metrics(win_help: str, *more: MetricSpec) -> MetricSchema:
    """The metrics a PairwiseTask reports, `win_rate` first (the primary)."""
    return MetricSchema(
        (
            MetricSpec("win_rate", win_help),
            MetricSpec(
                "position_consistency", "share of items whose two orders give the same outcome"
            ),
            MetricSpec(
                "tie_rate",
                "tied items / items (policy tie: disagreeing orders count as ties); tied games "
                "/ games (policy both)",
                headline=False,
            ),
            MetricSpec("judge_error_rate", "games without a verdict / games", False),
            MetricSpec("n_items", "items", count=True),
            MetricSpec(
                "n_items_scored", "items with both games judged", headline=False, count=True
            ),
            MetricSpec("judge_errors", "games without a verdict", False, False, True),
            MetricSpec("candidate_errors", "items without an answer", False, False, True),
            *more,
        )
    )


def pairwise_statistics(
    metrics: dict[str, Any], samples: list[dict[str, Any]]
) -> dict[str, SampleStatistic]:
    """The win rate as a pooled ratio over items: compare's paired bootstrap resamples it."""
    rows = [r for r in samples if isinstance(r.get("wins"), int | float)]
    if not rows:
        return {}
    ids = [str(r["id"]) for r in rows]
    return {
        "win_rate": ratio_statistic(ids, [r["wins"] for r in rows], [r["weight"] for r in rows])
    }


def _label(record: VerdictRecord | None) -> str | None:
    return record.grade if record is not None and isinstance(record.grade, str) else None


class PairwiseTask(JudgedTask):
    """A pairwise judged task: a subclass sets what a JudgedTask does (`name`, `family`,
    `description`, `prompt` of a categorical kind with the slots {question}, {answer_a},
    {answer_b}, `candidate_template`, `option_group` from `pairwise_options`), its `scale`
    (MT_BENCH by default: `[[A]]`, `[[B]]`, `[[C]]`) and `items(ctx)` returning
    `pairwise_item`s."""

    scale: ClassVar[PairwiseScale] = MT_BENCH

    def score(self, item: JudgedItem, verdicts: Any) -> float:  # labels, not scores
        raise NotImplementedError

    def _games(self, labels: dict[str, str | None]) -> Games | None:
        first, second = labels.get(FIRST), labels.get(SECOND)
        if first is None or second is None:
            return None
        return self.scale.game(first, True), self.scale.game(second, False)

    def _results(
        self,
        labels: list[dict[str, str | None]],
        answered: list[bool],
        policy: str,
        seed: int,
    ) -> tuple[dict[str, Any], list[Games | None]]:
        """The figures of one judge's (or the panel's) labels, by clineval.metrics.pairwise,
        and each item's two games (None: no answer, or an order without a verdict)."""
        games: list[Games | None] = []
        errors = 0
        for game_labels, ok in zip(labels, answered, strict=True):
            if ok:
                errors += sum(game_labels.get(g) is None for g in (FIRST, SECOND))
            games.append(self._games(game_labels) if ok else None)
        complete = [g for g in games if g is not None]
        first = np.array([g[0][0] for g in complete], dtype=np.float64)
        second = np.array([g[1][0] for g in complete], dtype=np.float64)
        estimate = win_rate_interval(np.array(game_rows(games, policy)), seed=seed)
        size = 2 * sum(answered)
        figures: dict[str, Any] = {
            "win_rate": None if estimate is None else estimate.value,
            "win_rate_ci": None if estimate is None else [estimate.low, estimate.high],
            "tie_rate": tie_rate(np.concatenate([first, second])),
            "position_consistency": position_consistency(first, second),
            "judge_errors": errors,
            "judge_error_rate": errors / size if size else 0.0,
            "n_items_scored": len(complete),
        }
        return figures, games

    def _option_or(self, ctx: RunContext, name: str, default: Any) -> Any:
        group = self.option_group
        names = {o.name for o in group.options} if group is not None else set()
        return self._option(ctx, name) if name in names else default

    def evaluate(self, ctx: RunContext, data: JudgedData) -> TaskResult:
        policy = str(self._option_or(ctx, "disagreement", "tie"))
        items, labels_of = data.items, data.judging.panel.labels
        stored = stored_verdicts(ctx.store, self.name, labels_of)
        answers = stored_answers(ctx.store, self.name)
        answered = [answer_text(answers.get(i.id)) is not None for i in items]
        keys = [dict(zip((c.id for c in i.criteria), i.verdict_keys(), strict=True)) for i in items]
        per_judge_labels = {
            judge: [{g: _label(records.get(k)) for g, k in ks.items()} for ks in keys]
            for judge, records in stored.items()
        }
        tie = self.scale.kind.tie
        panel: list[dict[str, str | None]] = []
        splits = 0
        for n, ks in enumerate(keys):
            decided: dict[str, str | None] = {}
            for game in ks:
                label, split = majority_label(
                    [per_judge_labels[j][n][game] for j in labels_of], tie
                )
                decided[game], splits = label, splits + split
            panel.append(decided)
        seed = ctx.config.seed
        headline, games = self._results(panel, answered, policy, seed)
        rows = game_rows(games, policy)
        metrics: dict[str, Any] = {
            **headline,
            "n_items": len(items),
            "candidate_errors": answered.count(False),
            "disagreement": policy,
            "judges": list(labels_of),
            "judge_is_candidate": data.judging.panel.judge_is_candidate,
        }
        bounded: dict[str, dict[str, Any]] = {"": headline}
        if len(labels_of) > 1:
            per_judge = {
                j: self._results(per_judge_labels[j], answered, policy, seed)[0] for j in labels_of
            }
            metrics.update(per_judge=per_judge, aggregate="majority", aggregate_ties=splits)
            bounded.update({f" of {j}": v for j, v in per_judge.items()})
        add_answer_checks(metrics, (answers.get(item.id) for item in items))
        samples = [
            self._pair_row(item, stored, answers, panel[n], games[n], rows[n])
            for n, item in enumerate(items)
        ]
        errors = error_rate_failures(ctx.config.max_judge_error_rate, bounded)
        # an item without its answers fails the run, as every benchmark's (benchmarks.missing)
        absent = [item.id for item, ok in zip(items, answered, strict=True) if not ok]
        return TaskResult(metrics, samples, errors, _unmatched(items, stored), absent)

    def _pair_row(
        self,
        item: JudgedItem,
        stored: dict[str, dict[str, VerdictRecord]],
        answers: dict[str, Any],
        labels: dict[str, str | None],
        games: Games | None,
        row: list[float],
    ) -> dict[str, Any]:
        kept = [v for v in row if not math.isnan(v)]
        verdicts = [
            VerdictRow.row_of(criterion.id, criterion.text, label, records.get(key))
            for label, records in stored.items()
            for criterion, key in zip(item.criteria, item.verdict_keys(), strict=True)
        ]
        return {
            "id": item.id,
            "query": item.query,
            "reference": dict(item.slots).get("reference"),
            "answer": answer_text(answers.get(item.id)),
            "games": labels,
            # the item's pooled games (clineval.metrics.pairwise): wins (ties half) / games
            "score": None if games is None else float(np.nansum(row)) / len(kept),
            "wins": None if games is None else float(np.nansum(row)),
            "weight": None if games is None else float(len(kept)),
            "consistent": None if games is None else games[0][0] == games[1][0],
            "verdicts": verdicts,
        }
