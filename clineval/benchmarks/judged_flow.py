"""The judging kit's predict step and its `--dry-run` plan (clineval.benchmarks.judged has the
items, the panel and the stored verdicts).

Everything is one flat asyncio.gather: each item awaits its answer and then fans out its judge
calls, and every call waits only for the run's single concurrency limit inside the chat client
(no pool per item or per criterion, so a slow item never idles the others' slots). Every model
call is in the run store the moment it finishes (the chat client commits it); answers are
recorded at once and verdicts in small batches, so a killed run resumes where it stopped
without repeating a call: stored answers and verdicts are skipped, a verdict lost with an
unwritten batch is re-derived from the cached call, and stored judge_errors and candidate
errors are tried again (a cached unparseable reply costs no HTTP call).

Issue order: at most `judging_window(concurrency)` items (as many as the concurrency limit)
are judged at once, in the order their answers came; the others wait for a place. An item's
judge calls share their prompt up to the criterion and carry one prefix key (judge.run), so
they go to one replica and its server computes that prefix once. The window keeps an item's
calls together in time (its prefix is still in the server's cache when its next call comes),
while enough items run side by side to spread over every replica. Each item has about one call
in flight, its calls following one another: llama.cpp, which caches per slot, then reuses a
prefix in the slot that computed it instead of computing it again in another slot. Without it
every answered item would be judged at once, one criterion of each in turn, and a bounded
prefix cache would have evicted an item's prefix before its next call (measured in
perf/bench_prefix_affinity_sim.py).

Batch mode (`--batch`, docs/batch.md): every answer first, then one round of every judge call
that can be made (no window), so a run is two rounds of batches, not a batch per answer.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from contextlib import AsyncExitStack
from typing import Any

from clineval.benchmarks.base import RunContext
from clineval.benchmarks.judged import (
    JudgedItem,
    Judging,
    answer_text,
    judge_slots,
    stored_answers,
    stored_verdicts,
)
from clineval.concurrency import HandoffSemaphore, gather_bounded, run_model_calls
from clineval.config import RunConfig
from clineval.judge.prompt import JudgePrompt
from clineval.judge.run import (
    FORMAT_LEVELS,
    FormatLadder,
    judge_call,
    judge_prefix_key,
    judge_request,
    shared_slots,
)
from clineval.judge.verdict import (
    ANSWER_KIND,
    AnswerRecord,
    VerdictRecord,
    verdict_key,
    verdict_kind,
)
from clineval.models.llamacpp_server import default_max_tokens
from clineval.models.llm_base import ChatError, ChatModel, ChatRequest
from clineval.models.registry import ModelKind
from clineval.plan import UNBOUNDED_REPLY_TOKENS, CallPlan
from clineval.progress import TaskProgress, task_progress
from clineval.store import RunStore


def candidate_request(config: RunConfig, item: JudgedItem, template_version: str) -> ChatRequest:
    return ChatRequest(
        messages=item.candidate_messages(),
        temperature=config.temperature,
        # the in-process llama.cpp server bounds an answer that has no --max-tokens
        max_tokens=config.max_tokens or default_max_tokens(config.models.candidate, config.options),
        seed=config.seed,
        template_version=template_version,
    )


def ladder_meta_key(task: str, judge_label: str, prompt: JudgePrompt) -> str:
    # Remembered per (judge, prompt version): a resumed run starts where this one ended.
    return f"{task}.response_format:{judge_label}:{prompt.version}"


def stored_ladder_level(store: RunStore, task: str, judge_label: str, prompt: JudgePrompt) -> str:
    # A prompt with its own answer format (ClinConsensus's official one) starts, and stays,
    # at plain text.
    first = FORMAT_LEVELS[0] if prompt.asks_json else FORMAT_LEVELS[-1]
    level = store.get_meta(ladder_meta_key(task, judge_label, prompt))
    if isinstance(level, str) and level in FORMAT_LEVELS:
        return max(level, first, key=FORMAT_LEVELS.index)
    return first


def judging_window(concurrency: int) -> int:
    """Items judged at once (module doc): as many as calls in flight, so each item has about
    one call in flight and its calls follow one another."""
    return max(1, concurrency)


class BufferedRecords:
    """Verdict records written in small batches (one SQLite transaction each).

    One commit per verdict was a visible share of the CPU per judge call. Losing a batch to a
    kill costs no HTTP call on resume: every finished call is already in the run store (the
    chat client commits it at once), so the verdict is re-derived from the cache.
    """

    def __init__(
        self, store: RunStore, task: str, max_items: int = 256, max_age_s: float = 0.5
    ) -> None:
        self.store = store
        self.task = task
        self.max_items = max_items
        self.max_age_s = max_age_s
        self._items: dict[str, list[tuple[str, Any]]] = {}
        self._count = 0
        self._since = time.monotonic()

    def add(self, kind: str, key: str, record: VerdictRecord) -> None:
        self._items.setdefault(kind, []).append((key, record.to_stored()))
        self._count += 1
        if self._count >= self.max_items or time.monotonic() - self._since >= self.max_age_s:
            self.flush()

    def flush(self) -> None:
        for kind, items in self._items.items():
            self.store.put_records(self.task, kind, items)
        self._items.clear()
        self._count = 0
        self._since = time.monotonic()


class _Flow:
    """The state of one predict step (models, prompt, stored records, progress)."""

    def __init__(
        self,
        ctx: RunContext,
        judging: Judging,
        n_items: int,
        candidate: ChatModel | None,
        judges: dict[str, ChatModel],
        progress: TaskProgress,
    ) -> None:
        self.ctx = ctx
        self.judging = judging
        self.task = judging.task
        self.prompt = judging.prompt
        self.candidate = candidate
        self.judges = judges
        self.progress = progress
        self.store = ctx.store
        self.answers = stored_answers(self.store, self.task)
        self.verdicts = stored_verdicts(self.store, self.task, list(judges))
        self.ladders = {label: self._ladder(label) for label in judges}
        self.writer = BufferedRecords(self.store, self.task)
        # Batch mode: every judge call that can be made now goes into one round (a window
        # would cut the round into batches of --concurrency items).
        batched = any(ctx.runtime.batched(spec) for spec in judging.panel.specs)
        window = n_items if batched else judging_window(ctx.config.concurrency)
        self.window = HandoffSemaphore(max(1, window))
        # ... and the judge round starts once every answer is in (also when the answers are
        # made synchronously, one by one): two rounds, not a batch per answer.
        self.answers_left = n_items if batched else 0
        self.all_answered = asyncio.Event()

    def _ladder(self, label: str) -> FormatLadder:
        meta_key = ladder_meta_key(self.task, label, self.prompt)
        return FormatLadder(
            stored_ladder_level(self.store, self.task, label, self.prompt),
            on_change=lambda level: self.store.set_meta(meta_key, level),
        )

    async def answer(self, item: JudgedItem) -> str | None:
        stored = answer_text(self.answers.get(item.id))
        if stored is not None:
            self.progress.advance(cached=True)
            return stored
        if item.answer is not None:
            given = AnswerRecord(self.ctx.model.label, item.answer)
            self.store.put_record(self.task, ANSWER_KIND, item.id, given.to_stored())
            self.progress.advance(cached=True)
            return item.answer
        if self.candidate is None:  # a predictions file without this item: no answer
            self.progress.count("candidate_errors")
            self.progress.advance()
            return None
        request = candidate_request(self.ctx.config, item, self.judging.candidate_template)
        label = self.candidate.label
        try:
            reply = await self.candidate.chat(request)
        except ChatError as exc:
            failed = AnswerRecord(label, None, str(exc))
            self.store.put_record(self.task, ANSWER_KIND, item.id, failed.to_stored())
            self.progress.count("candidate_errors")
            self.progress.advance()
            return None
        record = AnswerRecord(
            label, reply.text, None, True, reply.usage, reply.finish_reason, reply.key
        )
        self.store.put_record(self.task, ANSWER_KIND, item.id, record.to_stored())
        self.progress.advance(cached=reply.cached)
        return reply.text

    def _done(self, label: str, key: str) -> bool:
        record = self.verdicts[label].get(key)
        return record is not None and record.usable(self.prompt.version)

    async def verdict(self, label: str, item: JudgedItem, index: int, answer: str) -> None:
        bounds = self.judging.bounds[label]
        outcome = await judge_call(
            self.judges[label],
            self.prompt,
            judge_slots(item, item.criteria[index], answer),
            self.ladders[label],
            seed=self.ctx.config.seed,
            max_tokens=bounds.max_tokens,
            parse_retries=self.judging.retries,
            max_input_tokens=self.judging.input_tokens,
            explanation_chars=bounds.explanation_chars,
        )
        key = verdict_key(item.id, item.criteria[index].id)
        self.writer.add(verdict_kind(label), key, outcome.record(label, self.prompt.version))
        if outcome.retries:  # re-asks after an unparseable reply or a refused format
            self.progress.count("judge_reasks", outcome.retries)
        if not outcome.has_verdict:
            self.progress.count("judge_errors")
        self.progress.advance(cached=outcome.cached)

    async def item(self, item: JudgedItem) -> None:
        # What is already stored is counted at once, without a coroutine per criterion (a
        # resumed 27,000-criterion run then costs almost nothing here).
        keys = item.verdict_keys()
        pending = [
            (label, i)
            for label in self.judges
            for i in range(len(keys))
            if not self._done(label, keys[i])
        ]
        n_stored = len(keys) * len(self.judges) - len(pending)
        if n_stored:
            self.progress.advance(n_stored, cached=True)
        answer = await self.answer(item)
        if self.answers_left:
            self.answers_left -= 1
            if not self.answers_left:
                self.all_answered.set()
            await self.all_answered.wait()
        if answer is None:
            self.progress.advance(len(pending))  # nothing to judge; the item is reported failed
            return
        if not pending:
            return
        async with self.window:  # waits its turn: items are judged a window at a time
            await gather_bounded(
                self.ctx.runtime.calls,
                (self.verdict(label, item, i, answer) for label, i in pending),
            )


def all_stored(ctx: RunContext, judging: Judging, items: Sequence[JudgedItem]) -> bool:
    """Every answer and verdict is stored: then no model is opened (no llama.cpp start-up).
    An item a predictions file does not answer can never be, so it counts as done."""
    if ctx.backend.kind is ModelKind.PREDICTIONS:
        items = [item for item in items if item.answer is not None]
    answers = stored_answers(ctx.store, judging.task)
    if any(answer_text(answers.get(item.id)) is None for item in items):
        return False
    version = judging.prompt.version
    for records in stored_verdicts(ctx.store, judging.task, judging.panel.labels).values():
        for item in items:
            for key in item.verdict_keys():
                record = records.get(key)
                if record is None or not record.usable(version):
                    return False
    return True


async def _predict(
    ctx: RunContext, judging: Judging, items: Sequence[JudgedItem]
) -> dict[str, Any]:
    from clineval.models.llm import open_chat_model

    n_judges = len(judging.panel.labels)
    total = sum(1 + len(item.criteria) * n_judges for item in items)
    if all_stored(ctx, judging, items):
        return {"done": total, "total": total, "all_stored": True}
    async with AsyncExitStack() as stack:
        candidate = None
        answers_needed = any(item.answer is None for item in items)
        if ctx.backend.kind is not ModelKind.PREDICTIONS and answers_needed:
            candidate = await stack.enter_async_context(
                open_chat_model(ctx.model, ctx.runtime, "candidate")
            )
        judges: dict[str, ChatModel] = {}
        for label, spec in zip(judging.panel.labels, judging.panel.specs, strict=True):
            judges[label] = await stack.enter_async_context(
                open_chat_model(spec, ctx.runtime, "judge")
            )
        # judge errors show from the start when there are judges (a run without one has none)
        counters = ("judge_errors",) if judges else ()
        with task_progress(judging.task, total, ctx.runtime.calls, counters=counters) as progress:
            flow = _Flow(ctx, judging, len(items), candidate, judges, progress)
            try:
                await asyncio.gather(*(flow.item(item) for item in items))
            finally:
                flow.writer.flush()
            return {"done": progress.done, "total": total, **progress.counts}


def predict_judged(
    ctx: RunContext, judging: Judging, items: Sequence[JudgedItem]
) -> dict[str, Any]:
    """Answers and verdicts of every item not stored yet; returns the progress counters."""
    return run_model_calls(_predict(ctx, judging, items))


def plan_judged(
    ctx: RunContext, judging: Judging, items: Sequence[JudgedItem], calls: CallPlan
) -> None:
    """The calls `predict_judged` would make, for `clineval run --dry-run` (nothing sent or
    written). A judge call's prompt holds the candidate's answer: exact when the answer is
    stored, else counted with the candidate's max_tokens (or UNBOUNDED_REPLY_TOKENS) there."""
    task, prompt = judging.task, judging.prompt
    candidate = ctx.model.label
    answers = stored_answers(ctx.store, task)
    verdicts = stored_verdicts(ctx.store, task, judging.panel.labels)
    levels = {
        label: stored_ladder_level(ctx.store, task, label, prompt) for label in judging.panel.labels
    }
    seed = ctx.config.seed
    cap = ctx.config.max_tokens or default_max_tokens(ctx.model, ctx.config.options)
    answer_bound = cap or UNBOUNDED_REPLY_TOKENS
    for item in items:
        answer = answer_text(answers.get(item.id))
        if answer is None and item.answer is not None:
            answer = item.answer
        elif answer is None and ctx.backend.kind is ModelKind.PREDICTIONS:
            continue  # a predictions file without this item: nothing to send
        elif answer is None:
            request = candidate_request(ctx.config, item, judging.candidate_template)
            stored = calls.add(task, "candidate", candidate, request)
            if stored is not None:  # called before, its record not written: the cache has it
                answer = stored["response"]["text"]
        else:
            calls.add_stored(task, "candidate", candidate, 1)
        for label in judging.panel.labels:
            bounds = judging.bounds[label]
            for criterion in item.criteria:
                record = verdicts[label].get(verdict_key(item.id, criterion.id))
                if record is not None and record.usable(prompt.version):
                    calls.add_stored(task, "judge", label, 1)
                    continue
                messages = prompt.fill(judge_slots(item, criterion, answer or ""))
                # An answer not made yet is keyed by its item: its calls will share it.
                shared = answer if answer is not None else f"<answer of {item.id}>"
                request = judge_request(
                    messages,
                    prompt.version,
                    levels[label],
                    seed,
                    bounds.max_tokens,
                    prefix_key=judge_prefix_key(
                        prompt.version, *shared_slots(prompt, judge_slots(item, criterion, shared))
                    ),
                    max_input_tokens=judging.input_tokens,
                    explanation_chars=bounds.explanation_chars,
                    schema=prompt.verdict_schema,
                )
                if answer is None:
                    calls.add_bounded(
                        task, "judge", label, request, answer_bound, assumed=cap is None
                    )
                else:
                    calls.add(task, "judge", label, request)
