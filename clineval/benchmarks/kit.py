"""Helpers for the shapes most benchmarks share, so that a benchmark package holds only what is
its own: the samples a run evaluates (`--limit`, then `--shard`), the samples still without a
stored output, a predictions file keyed by sample id (one for the run or one per task; a
field per line, or a row parser of the benchmark's), one chat call per sample (stored as it
arrives with what the benchmark's reply parser makes of it, planned for `--dry-run`), a
multiple-choice letter parser, and accuracy with its bootstrap interval.

The built-ins select their samples, find their pending ones, read their predictions files
and ask their chat models here; what stays theirs is what is theirs (NER's row and reply
parsers check spans against the document, TCM-SD's label parser knows the normalization
table and the record's disease). A new benchmark starts here:
the plugin template in examples/plugin-benchmark/ uses these helpers, reached through
`clineval.benchmarks`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar, overload

import numpy as np

from clineval.benchmarks.base import RunContext
from clineval.benchmarks.missing import PREDICTION as PREDICTION  # a stored output's kind
from clineval.concurrency import gather_bounded, run_model_calls
from clineval.errors import InputError
from clineval.jsonl import iter_json_objects
from clineval.metrics.bootstrap import DEFAULT_RESAMPLES, bootstrap_indices, percentile_interval
from clineval.models.llm_base import ChatError, ChatModel, ChatRequest, ChatResponse
from clineval.plan import CallPlan
from clineval.progress import TaskProgress, counters_of, task_progress
from clineval.shard import select_shard

T = TypeVar("T")


def select_samples(ctx: RunContext, samples: Sequence[T], sample_id: Callable[[T], str]) -> list[T]:
    """The samples this run evaluates: the first `--limit`, then this `--shard`'s part (by
    a hash of the id, so shards of any size partition the samples)."""
    chosen = list(samples)
    if ctx.config.limit is not None:
        chosen = chosen[: ctx.config.limit]
    return select_shard(chosen, ctx.config.shard, key=sample_id)


def predictions_path(ctx: RunContext, task: str) -> Path:
    """The file `task` reads under `--model predictions:FILE` or, with one file per task,
    `--model predictions:TASK=FILE,...` (the runner records its sha256 in the manifest)."""
    from clineval.models.predictions_files import predictions_file

    return predictions_file(ctx.model, task)


# A row of a predictions file -> its value, given the row's (known, first-seen) id. It raises
# InputError without a path for a row it refuses; the reader adds the file and line.
RowParser = Callable[[str, dict[str, Any]], Any]


def read_predictions(
    path: Path,
    known_ids: Collection[str],
    field: str | None = None,
    check: Callable[[Any], str | None] | None = None,
    selected: Collection[str] | None = None,
    *,
    parse: RowParser | None = None,
    noun: str = "sample",
) -> dict[str, Any]:
    """`predictions:FILE`: JSON Lines, one object per sample with its "id", checked strictly
    (a skipped line would change the score). The value of a line is its `field` as given
    (`check` may refuse it: it returns the reason), or, for a richer row, what `parse(id, row)`
    makes of the row (give one of `field` and `parse`). A line without "id" (or `field`), an
    id that is not one of `known_ids` (the whole dataset, not only what this run evaluates;
    `noun` names what an id stands for in the message), an id given twice, or a value refused
    is an InputError naming file and line. With `selected` (the ids `--limit` / `--shard`
    kept), every line is still checked but only those ids are returned: a file made for the
    whole dataset serves any part of it. The benchmark decides what counts as a valid answer."""
    if (field is None) == (parse is None):
        raise TypeError("read_predictions: give one of field and parse")
    known = known_ids if isinstance(known_ids, set | frozenset | dict) else set(known_ids)
    keys = 'the key "id"' if field is None else f'the keys "id" and "{field}"'
    out: dict[str, Any] = {}
    first_line: dict[str, int] = {}
    for lineno, row in iter_json_objects(path, what="predictions file"):
        if "id" not in row or (field is not None and field not in row):
            raise InputError(f"expected {keys}", path=path, line=lineno)
        raw_id = row["id"]
        if isinstance(raw_id, bool) or not isinstance(raw_id, str | int):
            raise InputError('"id" must be a string', path=path, line=lineno)
        sample_id = str(raw_id)
        if sample_id not in known:
            raise InputError(f"unknown id {sample_id!r} (not a {noun})", path=path, line=lineno)
        if sample_id in first_line:
            where = f"first on line {first_line[sample_id]}"
            raise InputError(f"id {sample_id!r} given twice ({where})", path=path, line=lineno)
        first_line[sample_id] = lineno
        if parse is not None:
            out[sample_id] = _parsed(parse, sample_id, row, path, lineno)
            continue
        assert field is not None
        if check is not None and (problem := check(row[field])) is not None:
            raise InputError(problem, path=path, line=lineno)
        out[sample_id] = row[field]
    if selected is not None:
        keep = selected if isinstance(selected, set | frozenset | dict) else set(selected)
        out = {i: v for i, v in out.items() if i in keep}
    return out


def _parsed(parse: RowParser, sample_id: str, row: dict[str, Any], path: Path, line: int) -> Any:
    try:
        return parse(sample_id, row)
    except InputError as exc:
        if exc.path is not None:  # the parser read a file of its own: its place stands
            raise
        raise InputError(exc.message, path=path, line=line) from None


@overload
def pending(
    ctx: RunContext, task: str, samples: Sequence[str], *, kind: str = PREDICTION
) -> list[str]: ...
@overload
def pending(
    ctx: RunContext,
    task: str,
    samples: Sequence[T],
    sample_id: Callable[[T], str],
    kind: str = PREDICTION,
) -> list[T]: ...
def pending(
    ctx: RunContext,
    task: str,
    samples: Sequence[Any],
    sample_id: Callable[[Any], str] = str,
    kind: str = PREDICTION,
) -> list[Any]:
    """The samples of `task` without a stored record of `kind` (what `predict` still has to
    compute), in their order: ids, or samples with `sample_id` giving each one's id."""
    stored = ctx.store.records(task, kind)
    return [s for s in samples if sample_id(s) not in stored]


# A reply's record, from the sample's id and the reply's text (the id finds what the parser
# needs of the sample): e.g. {"pred": "B", "raw_output": text}.
ReplyParser = Callable[[str, str], dict[str, Any]]


def predict_by_chat(
    ctx: RunContext,
    task: str,
    requests: Sequence[tuple[str, ChatRequest]],
    parse: ReplyParser,
    *,
    invalid: Callable[[dict[str, Any]], bool] | None = None,
    format_fallback: bool = False,
    description: str | None = None,
) -> dict[str, Any]:
    """One chat call per (id, request), through the run's chat model (cached in the run store,
    the run's concurrency limit, bounded retries). Each reply is parsed (`parse(id, text)`)
    and stored as the id's prediction the moment it arrives; a call that fails after its
    retries stores nothing (counted as `errors_<kind>`), so the sample stays pending for the
    next run. Returns the progress counters, for the task's manifest notes.

    `invalid(record)`: True for a reply the parser could not read; counted as "invalid" in the
    progress line as they arrive. `format_fallback`: a server that refuses a request's
    `response_format` (a bad request) is asked once more without it, counted as
    "format_fallbacks". `description` names the progress line (default: the task)."""
    asking = _Asking(ctx, task, parse, invalid, format_fallback)
    return run_model_calls(asking.run(requests, description or task))


class _Asking:
    """`predict_by_chat`'s settings, shared by its calls."""

    def __init__(
        self,
        ctx: RunContext,
        task: str,
        parse: ReplyParser,
        invalid: Callable[[dict[str, Any]], bool] | None,
        format_fallback: bool,
    ) -> None:
        self.ctx, self.task, self.parse = ctx, task, parse
        self.invalid, self.format_fallback = invalid, format_fallback

    async def run(
        self, requests: Sequence[tuple[str, ChatRequest]], description: str
    ) -> dict[str, Any]:
        from clineval.models.llm import open_chat_model  # the HTTP and llama.cpp stacks: lazily

        runtime = self.ctx.runtime
        async with open_chat_model(self.ctx.model, runtime, "candidate") as model:
            with task_progress(description, len(requests), runtime.calls) as progress:
                await gather_bounded(
                    runtime.calls, (self._one(model, k, r, progress) for k, r in requests)
                )
                return counters_of(progress)

    async def _one(
        self, model: ChatModel, key: str, request: ChatRequest, progress: TaskProgress
    ) -> None:
        try:
            reply = await self._ask(model, request, progress)
        except ChatError as exc:
            progress.count(f"errors_{exc.kind}")
            progress.advance()
            return
        record = self.parse(key, reply.text)
        self.ctx.store.put_record(self.task, PREDICTION, key, record)
        if self.invalid is not None and self.invalid(record):
            progress.count("invalid")
        progress.advance(cached=reply.cached)

    async def _ask(
        self, model: ChatModel, request: ChatRequest, progress: TaskProgress
    ) -> ChatResponse:
        try:
            return await model.chat(request)
        except ChatError as exc:
            refused = exc.kind == "bad_request" and request.response_format is not None
            if not (self.format_fallback and refused):
                raise
        # A server that does not know this response_format (e.g. no json_schema): once more
        # without one; the request differs, so it has its own place in the call cache.
        progress.count("format_fallbacks")
        return await model.chat(replace(request, response_format=None))


def plan_by_chat(
    ctx: RunContext,
    task: str,
    calls: CallPlan,
    requests: Sequence[tuple[str, ChatRequest]],
    n_stored: int,
) -> None:
    """`--dry-run`: the calls `predict_by_chat` would make (and the ones already stored)."""
    label = ctx.model.label
    calls.add_stored(task, "candidate", label, n_stored)
    for _, request in requests:
        calls.add(task, "candidate", label, request)


_CHOICE_PATTERNS = (
    # an explicit statement wins: "答案：B", "Answer: (C)", "正确答案是 D", "选 A"
    r"(?:答案|answer|选项|选择|选)\s*(?:是|为|is|:|：)?\s*[(（\[]?\s*([{letters}])\b",
    # the reply is the letter alone, maybe bracketed or followed by punctuation
    r"^\s*[(（\[]?\s*([{letters}])\s*[)）\].。、:：]?\s*$",
    # the reply starts with the letter and a separator: "B. 肝郁", "C) ...", "A、..."
    r"^\s*[(（\[]?\s*([{letters}])\s*[)）\].。、:：]",
)


def parse_choice(text: str | None, letters: str) -> str | None:
    """The option letter a reply chooses, or None (invalid: counted, never guessed). Letters
    are matched in ASCII upper or lower case and full-width forms (Ａ..Ｚ) are read as ASCII;
    a reply that names two different letters in the same way is invalid."""
    if not text:
        return None
    folded = text.translate({0xFF21 + i: 0x41 + i for i in range(26)})
    folded = folded.translate({0xFF41 + i: 0x41 + i for i in range(26)})
    allowed = re.escape(letters.upper() + letters.lower())
    for pattern in _CHOICE_PATTERNS:
        found: set[str] = {
            str(m).upper() for m in re.findall(pattern.format(letters=allowed), folded, re.I | re.M)
        }
        if len(found) == 1:
            return found.pop()
        if len(found) > 1:
            return None
    return None


def accuracy_with_interval(
    correct: Sequence[bool], seed: int, n_resamples: int = DEFAULT_RESAMPLES
) -> tuple[float, tuple[float, float] | None]:
    """Accuracy and its 95% percentile bootstrap interval over samples (None for fewer than
    two samples: there is nothing to resample)."""
    values = np.asarray(correct, dtype=np.float64)
    if values.size == 0:
        return float("nan"), None
    accuracy = float(values.mean())
    if values.size < 2:
        return accuracy, None
    draws = bootstrap_indices(values.size, n_resamples, seed)
    return accuracy, percentile_interval(values[draws].mean(axis=1))
