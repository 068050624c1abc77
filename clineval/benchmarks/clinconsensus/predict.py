"""ClinConsensus predict step: candidate answers, then one judge call per (judge, case, criterion).

Everything is one flat asyncio.gather: each case awaits its answer and then fans out its judge
calls, and every call waits only for the run's single concurrency limit inside the chat client
(no pool per case, no pool per criterion, so a slow case never idles the others' slots).
Every model call is in the run store the moment it finishes (the chat client commits it);
answers are recorded at once and verdicts in small batches, so a killed run resumes where it
stopped without repeating a call: stored answers and verdicts are skipped, a verdict lost with
an unwritten batch is re-derived from the cached call, and stored judge_errors and candidate
errors are tried again (a cached unparseable reply costs no HTTP call).

Issue order: at most `judging_window(concurrency)` cases (as many as the concurrency limit)
are judged at once, in the order their answers came; the others wait for a place. A case's judge
calls share their prompt up to the criterion and carry one prefix key (judge.run), so they go
to one replica and its server computes that prefix once. The window keeps a case's calls
together in time (its prefix is still in the server's cache when its next call comes), while
enough cases run side by side to spread over every replica. Each case has about one call in
flight, its calls following one another: llama.cpp, which caches per slot, then reuses a
prefix in the slot that computed it instead of computing it again in another slot.
Without it every answered case would be judged at once, one criterion of each in turn, and a
bounded prefix cache would have evicted a case's prefix before its next call (measured in
perf/bench_prefix_affinity_sim.py).
"""

from __future__ import annotations

import asyncio
import time
from contextlib import AsyncExitStack
from dataclasses import asdict
from typing import Any

from clineval.benchmarks.base import RunContext
from clineval.benchmarks.clinconsensus.cases import Case, verdict_key
from clineval.benchmarks.clinconsensus.common import (
    ANSWER_KIND,
    TASK,
    VERDICTS_FILE_JUDGE,
    Data,
    verdict_kind,
)
from clineval.benchmarks.clinconsensus.judgements import FORMAT_JSONL, read_verdicts
from clineval.concurrency import gather_bounded, run_model_calls
from clineval.config import RunConfig
from clineval.judge.prompt import CANDIDATE_TEMPLATE_VERSION, JudgePrompt, candidate_messages
from clineval.judge.run import (
    FORMAT_LEVELS,
    FormatLadder,
    judge_criterion,
    judge_prefix_key,
    judge_request,
)
from clineval.models.llamacpp_server import default_max_tokens
from clineval.models.llm_base import ChatError, ChatModel, ChatRequest
from clineval.plan import UNBOUNDED_REPLY_TOKENS, CallPlan
from clineval.progress import TaskProgress, task_progress
from clineval.store import RunStore


def import_verdicts(ctx: RunContext, data: Data) -> None:
    """--verdicts FILE: validated against the whole cases file, stored like judge verdicts.

    Every selected (case, criterion) gets a record, so a criterion the file does not cover is
    an explicit judge_error, and a record left by an earlier import into the same run
    directory never survives the file that replaced it.
    """
    assert data.verdicts_path is not None
    imported = read_verdicts(data.verdicts_path, data.all_cases)
    verdicts = imported.met
    source = str(data.verdicts_path)
    items = []
    missing = 0
    for case in data.cases:
        for rubric in case.rubrics[: data.n_criteria]:
            key = verdict_key(case.case_id, rubric.criterion_id)
            if key not in verdicts:
                missing += 1
                error: str | None = (
                    "no row in the verdicts file"
                    if imported.format == FORMAT_JSONL
                    else "no entry for this criterion in the judgements file"
                )
            elif verdicts[key] is None:
                error = imported.problems.get(key, "null verdict in the verdicts file")
            else:
                error = None
            explanation = imported.explanations.get(key, "")
            record = {"met": verdicts.get(key), "explanation": explanation, "error": error}
            items.append((key, {**record, "source": source}))
    ctx.store.put_records(TASK, verdict_kind(VERDICTS_FILE_JUDGE), items)
    ctx.note(TASK, "verdicts_file", source)
    ctx.note(TASK, "verdicts_format", imported.format)
    ctx.note(TASK, "criteria_missing_from_verdicts_file", missing)


def usable_verdict(record: Any, prompt: JudgePrompt) -> bool:
    """A stored verdict that needs no new judge call: it has a verdict, made under this judge
    prompt (one made under another, e.g. an edited --judge-prompt file, is made again; the
    prompt version is also in every call's cache key)."""
    return (
        isinstance(record, dict)
        and record.get("met") is not None
        and record.get("prompt") == prompt.version
    )


class BufferedRecords:
    """Verdict records written in small batches (one SQLite transaction each).

    One commit per verdict was a visible share of the CPU per judge call. Losing a batch to a
    kill costs no HTTP call on resume: every finished call is already in the run store (the
    chat client commits it at once), so the verdict is re-derived from the cache.
    """

    def __init__(self, store: RunStore, max_items: int = 256, max_age_s: float = 0.5) -> None:
        self.store = store
        self.max_items = max_items
        self.max_age_s = max_age_s
        self._items: dict[str, list[tuple[str, Any]]] = {}
        self._count = 0
        self._since = time.monotonic()

    def add(self, kind: str, key: str, value: Any) -> None:
        self._items.setdefault(kind, []).append((key, value))
        self._count += 1
        if self._count >= self.max_items or time.monotonic() - self._since >= self.max_age_s:
            self.flush()

    def flush(self) -> None:
        for kind, items in self._items.items():
            self.store.put_records(TASK, kind, items)
        self._items.clear()
        self._count = 0
        self._since = time.monotonic()


def candidate_request(config: RunConfig, case: Case) -> ChatRequest:
    return ChatRequest(
        messages=candidate_messages(case.query),
        temperature=config.temperature,
        # the in-process llama.cpp server bounds an answer that has no --max-tokens
        max_tokens=config.max_tokens or default_max_tokens(config.model, config.options),
        seed=config.seed,
        template_version=CANDIDATE_TEMPLATE_VERSION,
    )


def ladder_meta_key(judge_label: str, prompt: JudgePrompt) -> str:
    # Remembered per (judge, prompt version): a resumed run starts where this one ended.
    return f"{TASK}.response_format:{judge_label}:{prompt.version}"


def stored_ladder_level(store: RunStore, judge_label: str, prompt: JudgePrompt) -> str:
    # A prompt with its own answer format (the official one) starts, and stays, at plain text.
    first = FORMAT_LEVELS[0] if prompt.constrained else FORMAT_LEVELS[-1]
    level = store.get_meta(ladder_meta_key(judge_label, prompt))
    if isinstance(level, str) and level in FORMAT_LEVELS:
        return max(level, first, key=FORMAT_LEVELS.index)
    return first


def judging_window(concurrency: int) -> int:
    """Cases judged at once (see the module doc): as many as calls in flight, so each case
    has about one call in flight and its calls follow one another."""
    return max(1, concurrency)


class _Flow:
    """The state of one predict step (models, prompt, stored records, progress)."""

    def __init__(
        self,
        ctx: RunContext,
        data: Data,
        prompt: JudgePrompt,
        candidate: ChatModel,
        judges: dict[str, ChatModel],
        progress: TaskProgress,
    ) -> None:
        self.ctx = ctx
        self.data = data
        self.prompt = prompt
        self.candidate = candidate
        self.judges = judges
        self.progress = progress
        self.store = ctx.store
        self.answers: dict[str, Any] = self.store.records(TASK, ANSWER_KIND)
        self.verdicts = {label: self.store.records(TASK, verdict_kind(label)) for label in judges}
        self.ladders = {label: self._ladder(label) for label in judges}
        self.bounds = data.reply_bounds()
        self.writer = BufferedRecords(self.store)
        # Batch mode: every judge call that can be made now goes into one round (a window
        # would cut the round into batches of --concurrency cases).
        batched = any(ctx.runtime.batched(spec) for spec in data.judge_specs)
        window = len(data.cases) if batched else judging_window(ctx.config.concurrency)
        self.window = asyncio.Semaphore(max(1, window))
        # ... and the judge round starts once every answer is in (also when the answers are
        # made synchronously, one by one): two rounds, not a batch per answer.
        self.answers_left = len(data.cases) if batched else 0
        self.all_answered = asyncio.Event()

    def _ladder(self, label: str) -> FormatLadder:
        meta_key = ladder_meta_key(label, self.prompt)
        return FormatLadder(
            stored_ladder_level(self.store, label, self.prompt),
            on_change=lambda level: self.store.set_meta(meta_key, level),
        )

    async def answer(self, case: Case) -> str | None:
        stored = self.answers.get(case.case_id)
        if stored is not None and stored.get("text") is not None:
            self.progress.advance(cached=True)
            return str(stored["text"])
        request = candidate_request(self.ctx.config, case)
        record: dict[str, Any] = {"model": self.candidate.label}
        try:
            reply = await self.candidate.chat(request)
        except ChatError as exc:
            record.update(text=None, error=str(exc))
            self.store.put_record(TASK, ANSWER_KIND, case.case_id, record)
            self.progress.count("candidate_errors")
            self.progress.advance()
            return None
        record.update(
            text=reply.text, error=None, usage=reply.usage, finish_reason=reply.finish_reason
        )
        self.store.put_record(TASK, ANSWER_KIND, case.case_id, record)
        self.progress.advance(cached=reply.cached)
        return reply.text

    def _done(self, label: str, key: str) -> bool:
        return usable_verdict(self.verdicts[label].get(key), self.prompt)

    async def verdict(self, label: str, case: Case, index: int, key: str, answer: str) -> None:
        rubric = case.rubrics[index]
        outcome = await judge_criterion(
            self.judges[label],
            self.prompt,
            case.query,
            answer,
            rubric.criterion,
            self.ladders[label],
            seed=self.ctx.config.seed,
            max_tokens=self.bounds[label].max_tokens,
            parse_retries=self.data.options.judge_retries,
            max_input_tokens=self.data.options.judge_input_tokens,
            explanation_chars=self.bounds[label].explanation_chars,
        )
        record = {**outcome.record(label), "prompt": self.prompt.version}
        self.writer.add(verdict_kind(label), key, record)
        if outcome.retries:  # re-asks after an unparseable reply or a refused format
            self.progress.count("judge_reasks", outcome.retries)
        if outcome.met is None:
            self.progress.count("judge_errors")
        self.progress.advance(cached=outcome.cached)

    async def case(self, case: Case) -> None:
        # What is already stored is counted at once, without a coroutine per criterion (a
        # resumed 27,000-criterion run then costs almost nothing here).
        keys = [
            verdict_key(case.case_id, rubric.criterion_id)
            for rubric in case.rubrics[: self.data.n_criteria]
        ]
        pending = [
            (label, i)
            for label in self.judges
            for i in range(len(keys))
            if not self._done(label, keys[i])
        ]
        n_stored = self.data.n_criteria * len(self.judges) - len(pending)
        if n_stored:
            self.progress.advance(n_stored, cached=True)
        answer = await self.answer(case)
        if self.answers_left:
            self.answers_left -= 1
            if not self.answers_left:
                self.all_answered.set()
            await self.all_answered.wait()
        if answer is None:
            self.progress.advance(len(pending))  # nothing to judge; the case is reported failed
            return
        if not pending:
            return
        async with self.window:  # waits its turn: cases are judged a window at a time
            await gather_bounded(
                self.ctx.runtime.calls,
                (self.verdict(label, case, i, keys[i], answer) for label, i in pending),
            )


def _all_stored(ctx: RunContext, data: Data, prompt: JudgePrompt) -> bool:
    """Every answer and verdict is stored: then no model is opened (no llama.cpp start-up)."""
    answers = ctx.store.records(TASK, ANSWER_KIND)
    if any((answers.get(c.case_id) or {}).get("text") is None for c in data.cases):
        return False
    for label in data.judges:
        records = ctx.store.records(TASK, verdict_kind(label))
        for case in data.cases:
            for rubric in case.rubrics[: data.n_criteria]:
                key = verdict_key(case.case_id, rubric.criterion_id)
                if not usable_verdict(records.get(key), prompt):
                    return False
    return True


async def _predict(ctx: RunContext, data: Data, prompt: JudgePrompt) -> dict[str, Any]:
    from clineval.models.llm import open_chat_model

    total = len(data.cases) * (1 + data.n_criteria * len(data.judges))
    if _all_stored(ctx, data, prompt):
        return {"done": total, "total": total, "all_stored": True}
    async with AsyncExitStack() as stack:
        candidate = await stack.enter_async_context(
            open_chat_model(ctx.model, ctx.runtime, "candidate")
        )
        judges: dict[str, ChatModel] = {}
        for label, spec in zip(data.judges, data.judge_specs, strict=True):
            judges[label] = await stack.enter_async_context(
                open_chat_model(spec, ctx.runtime, "judge")
            )
        # judge errors show from the start when there are judges (a run without one has none)
        counters = ("judge_errors",) if judges else ()
        with task_progress(TASK, total, ctx.runtime.calls, counters=counters) as progress:
            flow = _Flow(ctx, data, prompt, candidate, judges, progress)
            try:
                await asyncio.gather(*(flow.case(c) for c in data.cases))
            finally:
                flow.writer.flush()
            return {"done": progress.done, "total": total, **progress.counts}


def predict(ctx: RunContext, data: Data, prompt: JudgePrompt) -> None:
    if data.verdicts_path is not None:
        import_verdicts(ctx, data)
        return
    counters = run_model_calls(_predict(ctx, data, prompt))
    ctx.note(TASK, "progress", counters)
    ctx.note(TASK, "judge_input_truncation", input_truncation(ctx, data))
    bounds = {label: asdict(b) for label, b in data.reply_bounds().items()}
    ctx.note(TASK, "judge_reply_bounds", bounds)


def input_truncation(ctx: RunContext, data: Data) -> dict[str, Any]:
    """Whether the authors' judge-input cut was asked for, and how many judged inputs it cut
    (an hf: judge reports the untruncated length of a cut prompt in the call's usage)."""
    limit = data.options.judge_input_tokens
    cut = 0
    for label in data.judges:
        records = ctx.store.records(TASK, verdict_kind(label))
        for case in data.cases:
            for rubric in case.rubrics[: data.n_criteria]:
                record = records.get(verdict_key(case.case_id, rubric.criterion_id))
                usage = record.get("usage") if isinstance(record, dict) else None
                cut += isinstance(usage, dict) and "prompt_tokens_untruncated" in usage
    return {
        "applied": limit is not None,
        "max_input_tokens": limit,
        "tokenizer": "each hf: judge's own" if limit is not None else None,
        "inputs_cut": cut,
    }


def plan_calls(ctx: RunContext, data: Data, prompt: JudgePrompt, calls: CallPlan) -> None:
    """The calls `predict` would make, for `clineval run --dry-run` (nothing sent or written).

    A judge call's prompt holds the candidate's answer: exact when the answer is stored,
    else counted with the candidate's max_tokens (or UNBOUNDED_REPLY_TOKENS) in its place.
    """
    if data.verdicts_path is not None:
        return
    candidate = ctx.model.label
    answers = ctx.store.records(TASK, ANSWER_KIND)
    verdicts = {label: ctx.store.records(TASK, verdict_kind(label)) for label in data.judges}
    levels = {label: stored_ladder_level(ctx.store, label, prompt) for label in data.judges}
    bounds = data.reply_bounds()
    seed = ctx.config.seed
    answer_bound = (
        ctx.config.max_tokens
        or default_max_tokens(ctx.config.model, ctx.config.options)
        or UNBOUNDED_REPLY_TOKENS
    )
    for case in data.cases:
        answer = (answers.get(case.case_id) or {}).get("text")
        if answer is None:
            request = candidate_request(ctx.config, case)
            stored = calls.add(TASK, "candidate", candidate, request)
            if stored is not None:  # called before, its record not written: the cache has it
                answer = stored["response"]["text"]
        else:
            calls.add_stored(TASK, "candidate", candidate, 1)
        for label in data.judges:
            for rubric in case.rubrics[: data.n_criteria]:
                key = verdict_key(case.case_id, rubric.criterion_id)
                if usable_verdict(verdicts[label].get(key), prompt):
                    calls.add_stored(TASK, "judge", label, 1)
                    continue
                messages = prompt.messages(case.query, answer or "", rubric.criterion)
                # An answer not made yet is keyed by its case: its calls will share it.
                shared = answer if answer is not None else f"<answer of {case.case_id}>"
                request = judge_request(
                    messages,
                    prompt.version,
                    levels[label],
                    seed,
                    bounds[label].max_tokens,
                    prefix_key=judge_prefix_key(prompt.version, case.query, shared),
                    max_input_tokens=data.options.judge_input_tokens,
                    explanation_chars=bounds[label].explanation_chars,
                )
                if answer is None:
                    calls.add_bounded(TASK, "judge", label, request, answer_bound)
                else:
                    calls.add(TASK, "judge", label, request)
