"""The judging kit: what every LLM-judged benchmark shares, so that one holds only its items,
its wording and its metrics.

A judged benchmark declares ITEMS (`JudgedItem`: a sample id, what the judge sees as the query,
the messages the candidate sees or an answer a predictions file gives, and its criteria, each
with an id, a text and optional points) and its WORDING (a `JudgePrompt`: template, system
turn, version, optionally its own verdict schema; and its candidate prompt's version). The kit
gives, here and in its two sibling modules:

- the panel (`JudgePanel.from_config`): the judges of `--judge` (each with its own
  `--judge-base-url` replicas), or the candidate judging itself; each judge's reply bounds;
- the predict step and its `--dry-run` plan (judged_flow: `predict_judged`, `plan_judged`):
  answers, then one judge call per (judge, item, criterion), each through the run store (a
  cache and the resume point), the response-format ladder remembered per judge, bounded
  re-asks, batch rounds;
- typed verdict records (clineval.judge.verdict owns the stored dict) read back here
  (`stored_verdicts`), as matrices (`verdict_matrix`) for an ensemble's aggregate and the
  agreement between judges (clineval.judge.ensemble), and the per-judge error rates held to
  `--max-judge-error-rate` (`error_rate_failures`);
- `JudgedTask` (judged_task): a whole task whose score is a function of one item's verdicts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import NDArray

from clineval.config import RunConfig
from clineval.errors import InputError
from clineval.judge.ensemble import AGGREGATES
from clineval.judge.prompt import JudgePrompt, verdict_token_bound
from clineval.judge.run import (
    DEFAULT_JUDGE_MAX_TOKENS,
    DEFAULT_PARSE_RETRIES,
)
from clineval.judge.verdict import (
    ANSWER_KIND,
    AnswerRecord,
    VerdictRecord,
    read_answers,
    read_verdicts,
    verdict_key,
    verdict_kind,
)
from clineval.models.registry import backend_info
from clineval.models.spec import ModelSpec
from clineval.options import MAX_TOKENS, Option, OptionGroup, choice, integer
from clineval.store import RunStore


@dataclass(frozen=True)
class Criterion:
    """One rubric criterion of a judged item: `id` (unique within the item; the verdict's
    key), `text` (what the judge sees as {criterion}), `points` (a weight for the
    benchmark's own score; negative for something an answer must not do) and `tags` (what
    the benchmark groups criteria by, such as HealthBench's "axis:accuracy": kept in the
    sample rows' verdicts; the judge never sees them)."""

    id: str
    text: str
    points: float = 1.0  # a weight for the benchmark's own score; negative: to be avoided
    tags: tuple[str, ...] = ()
    # The judge prompt's slot that receives the candidate's answer, and further slot values of
    # this criterion's call (a pairwise game: the answer in {answer_a}, the reference in
    # {answer_b}; the other game the other way round).
    answer_slot: str = "response"
    slots: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class JudgedItem:
    """One item of a judged task: `id`, `query` (the judge's {query}), its `criteria`, the
    `messages` the candidate is sent ((role, content) pairs; empty: the query as one user
    turn) and, from a predictions file, its `answer` (then no candidate call is made)."""

    id: str
    query: str  # what the judge sees as {query}
    criteria: tuple[Criterion, ...]
    # what the candidate sees (empty: the query as one user turn)
    messages: tuple[tuple[str, str], ...] = ()
    answer: str | None = None  # given (a predictions file): no candidate call
    # further slot values of every judge call on this item ({question}, {reference} ...)
    slots: tuple[tuple[str, str], ...] = ()

    def verdict_keys(self) -> list[str]:
        return list(self._verdict_keys)

    @cached_property
    def _verdict_keys(self) -> tuple[str, ...]:
        # computed once: plan, predict and evaluate each look every criterion's key up
        return tuple(verdict_key(self.id, c.id) for c in self.criteria)

    def candidate_messages(self) -> tuple[tuple[str, str], ...]:
        return self.messages or (("user", self.query),)


def judge_slots(item: JudgedItem, criterion: Criterion, answer: str) -> dict[str, str]:
    """The slot values of one judge call: {query}, {criterion}, the item's and the
    criterion's own slots, and the candidate's answer in the criterion's answer slot."""
    return {
        "query": item.query,
        "criterion": criterion.text,
        **dict(item.slots),
        **dict(criterion.slots),
        criterion.answer_slot: answer,
    }


def check_slots(task: str, prompt: JudgePrompt, items: Sequence[JudgedItem]) -> None:
    """Every slot of the judge prompt gets a value on every call (else one line naming the
    task, the item and the slot: the benchmark's items and its wording do not fit)."""
    for item in items:
        for criterion in item.criteria:
            filled = judge_slots(item, criterion, "")
            missing = [name for name in prompt.slots if name not in filled]
            if missing:
                raise InputError(
                    f"task {task!r}: item {item.id!r}, criterion {criterion.id!r} gives no value "
                    f"for the judge prompt's slot {{{missing[0]}}}"
                )


# The in-process llama.cpp judge: its JSON schema is a grammar, so an explanation bound there
# makes a small model that loops inside it close it and give its verdict; the token cap
# leaves room for all of it (unbounded: LOCAL_JUDGE_MAX_TOKENS).
LOCAL_EXPLANATION_CHARS = 200
LOCAL_JUDGE_MAX_TOKENS = 256
# The scoring settings every judged benchmark reads (`Benchmark.scoring_settings`): how judge
# errors are scored and the bound on their rate.
JUDGED_SCORING_SETTINGS: tuple[str, ...] = ("judge_errors_as_unmet", "max_judge_error_rate")
# The run settings every judged benchmark reads (`Benchmark.run_settings`): the judge panel
# (--judge, --judge-base-url) and the judge wording (--judge-prompt). A run with no judged
# task refuses them rather than ignore them.
JUDGED_RUN_SETTINGS: tuple[str, ...] = ("judges", "judge_base_urls", "judge_prompt")
# The longest explanation bound: its token cap (verdict_token_bound) stays within MAX_TOKENS.
MAX_EXPLANATION_CHARS = 100_000


@dataclass(frozen=True)
class ReplyBounds:
    """What bounds one judge's verdicts: its calls' max_tokens and the explanation's
    characters in its JSON schema (None: unbounded). Recorded in the manifest."""

    max_tokens: int
    explanation_chars: int | None

    @classmethod
    def of(
        cls, spec: ModelSpec, max_tokens: int | None, explanation_chars: int | None
    ) -> ReplyBounds:
        """The bounds of `spec`'s judge calls given the options' values (None: not set).
        The explanation: never bounded on a judge that ignores response_format (hf:, a
        bound would be recorded but not kept); 0 = unbounded; by default bounded only where
        the schema is kept as a grammar (the in-process llama.cpp server; a hosted API's
        strict mode may refuse the keyword). max_tokens: as set; else, on an in-process
        server with slots, room for a bounded verdict (a small local model that loops writes
        all of its cap at a few tokens/s), else 1,024. The capabilities are the backend's
        registration (clineval.models.registry)."""
        backend = backend_info(spec)
        bound: int | None
        if backend.ignores_response_format:
            bound = None
        elif explanation_chars is not None:
            bound = explanation_chars or None
        else:
            bound = LOCAL_EXPLANATION_CHARS if backend.keeps_schema_as_grammar else None
        if max_tokens is not None:
            cap = max_tokens
        elif not backend.local_slots:
            cap = DEFAULT_JUDGE_MAX_TOKENS
        else:
            cap = LOCAL_JUDGE_MAX_TOKENS if bound is None else verdict_token_bound(bound)
        return cls(cap, bound)


@dataclass(frozen=True)
class JudgePanel:
    """Who judges a run's judged tasks: the `--judge` specs in order (or the candidate
    itself, `judge_is_candidate`), and the labels their verdicts are stored under."""

    labels: tuple[str, ...]  # in --judge order; verdicts are stored under these
    specs: tuple[ModelSpec, ...]
    judge_is_candidate: bool

    @classmethod
    def from_config(cls, config: RunConfig) -> JudgePanel:
        """The judges of `--judge`, or the candidate judging its own answers. Each judge its
        own replicas (--judge-base-url); --base-url belongs to --model, and a judge without
        its own gets it only when it is that same model."""
        models = config.models
        labels = tuple(s.label for s in models.panel)
        if len(set(labels)) != len(labels):
            raise InputError(f"the same judge is given twice: {', '.join(labels)}")
        return cls(labels, models.panel, models.judge_is_candidate)


@dataclass(frozen=True)
class Judging:
    """How one task's items are judged."""

    task: str
    prompt: JudgePrompt
    candidate_template: str  # the candidate prompt's version (in its calls' cache keys)
    panel: JudgePanel
    bounds: Mapping[str, ReplyBounds]  # per judge label
    retries: int = DEFAULT_PARSE_RETRIES
    input_tokens: int | None = None  # hf: judges cut their templated input to this


def stored_answers(store: RunStore, task: str) -> dict[str, AnswerRecord]:
    """The candidate answers `task` has stored, by item id."""
    return read_answers(store.records(task, ANSWER_KIND))


def answer_text(record: AnswerRecord | None) -> str | None:
    """The answer's text (None: no answer, or none stored)."""
    return None if record is None else record.text


def stored_verdicts(
    store: RunStore, task: str, labels: Sequence[str]
) -> dict[str, dict[str, VerdictRecord]]:
    """{judge label: {verdict key: record}}: the verdicts `task` has stored from each of the
    judges `labels` names (keys as `verdict_key(item id, criterion id)`)."""
    return {label: read_verdicts(store.records(task, verdict_kind(label))) for label in labels}


def verdict_matrix(
    records: Mapping[str, VerdictRecord], items: Sequence[JudgedItem], width: int | None = None
) -> NDArray[np.float64]:
    """(n_items, width) of 1 met, 0 not met, nan no verdict (or a criterion the item lacks);
    width: the most criteria of any item unless given."""
    n = width if width is not None else max((len(i.criteria) for i in items), default=0)
    out = np.full((len(items), n), np.nan)
    cells = [
        (i, j, record.value)
        for i, item in enumerate(items)
        for j, key in enumerate(item._verdict_keys[:n])
        if (record := records.get(key)) is not None
    ]
    if cells:  # one assignment: a numpy item assignment per cell costs more than the lookup
        rows, columns, values = zip(*cells, strict=True)
        out[list(rows), list(columns)] = values
    return out


def error_rate_failures(limit: float, figures: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """`--max-judge-error-rate`: a failure line per set of figures over the bound. `figures`
    maps "" (the primary figures) and " of JUDGE" (each judge of a panel) to their
    judge_errors and judge_error_rate: a judge that fails often would otherwise quietly shrink
    the panel the aggregate rests on."""
    out = []
    for which, fig in figures.items():
        rate = fig["judge_error_rate"]
        if rate > limit:
            out.append(
                f"judge error rate{which} {rate:.2%} ({fig['judge_errors']} criteria without"
                f" a verdict) exceeds --max-judge-error-rate {limit:.2%}"
            )
    return out


def judge_options(namespace: str, applies_to: str) -> OptionGroup:
    """The options every judged task takes, under its own namespace."""
    return OptionGroup(
        namespace=namespace,
        applies_to=applies_to,
        options=(
            Option(
                "judge_retries",
                integer(minimum=0, maximum=100),
                "re-asks after an unparseable judge reply",
                str(DEFAULT_PARSE_RETRIES),
            ),
            Option(
                "judge_max_tokens",
                integer(minimum=1, maximum=MAX_TOKENS),
                f"max_tokens of a judge call (default {DEFAULT_JUDGE_MAX_TOKENS}; "
                f"{verdict_token_bound(LOCAL_EXPLANATION_CHARS)} for a llamacpp: judge)",
                None,
            ),
            Option(
                "judge_explanation_chars",
                integer(minimum=0, maximum=MAX_EXPLANATION_CHARS),
                "bound the verdict's explanation to N characters in the judge's JSON schema "
                f"(default {LOCAL_EXPLANATION_CHARS} for a llamacpp: judge, unbounded "
                "elsewhere; 0 = unbounded)",
                None,
                changes_requests=True,
            ),
            Option(
                "aggregate",
                choice(*AGGREGATES),
                "rule that joins several judges",
                "majority",
                scoring_only=True,
            ),
        ),
    )
