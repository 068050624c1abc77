"""Judging one call's slots (a rubric's query, response and criterion; a pairwise item's
question and two answers ...): the request ladder, bounded retries, judge_error. The reply is
read by the prompt's verdict kind (judge/kinds.py).

Response format ladder, per judge model: json_schema -> json_object -> plain text. A server that
rejects a format answers 400 (ChatError kind "bad_request"); the judge then drops one level for
that model for the rest of the run (`FormatLadder`, shared by all its concurrent calls, and
remembered in the run store so a resumed run does not ask again). A 400 on plain text is a real
error.

Unparseable replies are retried a bounded number of times. A retry changes the seed and uses a
non-zero temperature: at temperature 0 a deterministic server would repeat the same reply, and
the run store would serve it from the cache anyway. When no verdict can be had the outcome is a
judge_error carrying the reason; it is never turned into "not met" here.
"""

from __future__ import annotations

import functools
import hashlib
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from clineval.jsonio import parse_json
from clineval.judge.prompt import VERDICT_SCHEMA, JudgePrompt, verdict_schema
from clineval.judge.verdict import VerdictRecord
from clineval.models.llm_base import ChatError, ChatModel, ChatRequest

FORMAT_LEVELS = ("json_schema", "json_object", "text")
RETRY_TEMPERATURE = 0.7
DEFAULT_PARSE_RETRIES = 2
DEFAULT_JUDGE_MAX_TOKENS = 1024


def _schema_format(schema: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "json_schema",
        "json_schema": {"name": "verdict", "strict": True, "schema": schema},
    }


_FORMATS: dict[str, dict[str, Any] | None] = {
    "json_schema": _schema_format(VERDICT_SCHEMA),
    "json_object": {"type": "json_object"},
    "text": None,
}


def response_format(
    level: str, explanation_chars: int | None = None, schema: str | None = None
) -> dict[str, Any] | None:
    """The OpenAI `response_format` of a ladder level (shared objects: never mutate them).
    `explanation_chars` bounds the explanation in the json_schema level's schema; the other
    levels cannot say it. `schema` is a benchmark's own verdict schema (JSON text, see
    JudgePrompt.schema), sent as it is at the json_schema level."""
    if level == "json_schema" and schema is not None:
        return _declared_schema_format(schema)
    if level == "json_schema" and explanation_chars is not None:
        return _bounded_schema_format(explanation_chars)
    return _FORMATS[level]


@functools.lru_cache(maxsize=16)
def _declared_schema_format(schema: str) -> dict[str, Any]:
    return _schema_format(parse_json(schema, source="judge schema"))


@functools.lru_cache(maxsize=16)
def _bounded_schema_format(explanation_chars: int) -> dict[str, Any]:
    # one shared object per bound, like _FORMATS: built once, not for every judge call
    return _schema_format(verdict_schema(explanation_chars))


class FormatLadder:
    """The response_format level one judge model accepts; only ever moves down."""

    def __init__(
        self, level: str = FORMAT_LEVELS[0], on_change: Callable[[str], None] | None = None
    ):
        if level not in FORMAT_LEVELS:
            level = FORMAT_LEVELS[0]
        self._index = FORMAT_LEVELS.index(level)
        self._on_change = on_change
        self._lock = threading.Lock()

    @property
    def level(self) -> str:
        return FORMAT_LEVELS[self._index]

    def rejected(self, level: str) -> bool:
        """The server refused `level`. Returns False when there is nothing lower to try."""
        index = FORMAT_LEVELS.index(level)
        if index == len(FORMAT_LEVELS) - 1:
            return False
        with self._lock:
            changed = self._index <= index
            if changed:
                self._index = index + 1
        if changed and self._on_change is not None:
            self._on_change(self.level)
        return True


@dataclass
class JudgeOutcome:
    met: bool | None  # a binary verdict; None = judge_error (or another kind's verdict)
    explanation: str = ""
    error: str | None = None
    method: str | None = None  # how the verdict was read (parse.Verdict.method)
    attempts: int = 0  # chat calls made (or served from the cache)
    retries: int = 0  # attempts beyond the first, format fallbacks included
    cached: bool = True  # every call came from the run store
    format: str | None = None  # response_format level of the last call
    usage: dict[str, int] = field(default_factory=dict)
    calls: list[str] = field(default_factory=list)  # the run store's keys of its calls
    grade: str | float | None = None  # a categorical label or a graded number

    @property
    def has_verdict(self) -> bool:
        return self.met is not None or self.grade is not None

    def record(self, judge: str, prompt_version: str) -> VerdictRecord:
        """What goes to the run store for this (judge, sample, criterion)."""
        return VerdictRecord.judged(
            met=self.met,
            grade=self.grade,
            explanation=self.explanation,
            error=self.error,
            method=self.method,
            attempts=self.attempts,
            format=self.format,
            usage=self.usage,
            judge=judge,
            prompt=prompt_version,
            calls=tuple(self.calls),
        )


def _add_usage(total: dict[str, int], usage: dict[str, int]) -> None:
    for name, value in usage.items():
        if isinstance(value, int):
            total[name] = total.get(name, 0) + value


def judge_prefix_key(template_version: str, *shared: str) -> str:
    """The prefix key of a case's judge calls (routing only, see ChatRequest.prefix_key):
    they share everything before the criterion (a rubric's query and response), which comes
    last in every judge prompt."""
    blob = "\0".join((template_version, *shared)).encode("utf-8", "surrogatepass")
    return hashlib.sha256(blob).hexdigest()[:32]


def judge_request(
    messages: tuple[tuple[str, str], ...],
    template_version: str,
    level: str,
    seed: int,
    max_tokens: int | None,
    parse_failures: int = 0,
    prefix_key: str | None = None,
    max_input_tokens: int | None = None,
    explanation_chars: int | None = None,
    schema: str | None = None,
) -> ChatRequest:
    """The judge call after `parse_failures` unparseable replies, at ladder `level`."""
    return ChatRequest(
        messages=messages,
        temperature=0.0 if parse_failures == 0 else RETRY_TEMPERATURE,
        max_tokens=max_tokens,
        seed=seed + parse_failures,
        response_format=response_format(level, explanation_chars, schema),
        template_version=template_version,
        prefix_key=prefix_key,
        max_input_tokens=max_input_tokens,
    )


def shared_slots(prompt: JudgePrompt, slots: dict[str, str]) -> tuple[str, ...]:
    """What an item's judge calls share (every slot but the criterion): its prefix key."""
    return tuple(slots[name] for name in prompt.slots if name != "criterion")


async def judge_criterion(
    model: ChatModel,
    prompt: JudgePrompt,
    query: str,
    response: str,
    criterion: str,
    ladder: FormatLadder,
    **settings: Any,
) -> JudgeOutcome:
    """One rubric verdict (`judge_call` with the rubric's three slots)."""
    slots = {"query": query, "response": response, "criterion": criterion}
    return await judge_call(model, prompt, slots, ladder, **settings)


async def judge_call(
    model: ChatModel,
    prompt: JudgePrompt,
    slots: dict[str, str],
    ladder: FormatLadder,
    *,
    seed: int = 0,
    max_tokens: int | None = DEFAULT_JUDGE_MAX_TOKENS,
    parse_retries: int = DEFAULT_PARSE_RETRIES,
    max_input_tokens: int | None = None,
    explanation_chars: int | None = None,
) -> JudgeOutcome:
    """One verdict, or a judge_error after at most 1 + parse_retries parseable-reply attempts."""
    messages = prompt.fill(slots)
    prefix_key = judge_prefix_key(prompt.version, *shared_slots(prompt, slots))
    answers = [slots[name] for name in prompt.answer_slots]
    outcome = JudgeOutcome(met=None)
    parse_failures = 0
    last_text = ""
    while parse_failures <= parse_retries:
        level = ladder.level
        request = judge_request(
            messages,
            prompt.version,
            level,
            seed,
            max_tokens,
            parse_failures,
            prefix_key,
            max_input_tokens,
            explanation_chars,
            prompt.verdict_schema,
        )
        outcome.attempts += 1
        outcome.format = level
        try:
            reply = await model.chat(request)
        except ChatError as exc:
            outcome.cached = False  # a call was made (and failed): not served from the store
            if exc.kind == "bad_request" and ladder.rejected(level):
                continue
            outcome.error = str(exc)
            break
        outcome.cached = outcome.cached and reply.cached
        _add_usage(outcome.usage, reply.usage)
        if reply.key is not None:
            outcome.calls.append(reply.key)
        reading = prompt.kind.read(reply.text, answers, prompt.delimiters)
        if reading is not None:
            if isinstance(reading.value, bool):
                outcome.met = reading.value
            else:
                outcome.grade = reading.value
            outcome.explanation = reading.explanation
            outcome.method = reading.method
            break
        parse_failures += 1
        last_text = reply.text
    else:
        snippet = last_text.strip().replace("\n", " ")[:120]
        outcome.error = f"unparseable judge reply after {parse_failures} attempts: {snippet!r}"
    outcome.retries = outcome.attempts - 1
    return outcome
