"""TCM-SD zero-shot with a chat model (`openai:...`, `llamacpp:...`) via clineval.models.llm.

Every record is one call (prompt: answer.py). The backend caches each finished
call in the run store and applies the run's concurrency limit and bounded retries; here each
reply is parsed and stored as a `prediction` record the moment it arrives, with the raw reply,
the parse status and the reason when it is invalid. A call that still fails after the retries
stores nothing: the sample stays pending, is reported as missing (scored invalid), and the
next run with the same --output-dir asks again.
"""

from __future__ import annotations

from typing import Any

from clineval.benchmarks.base import RunContext
from clineval.benchmarks.tcm_sd.answer import TEMPLATE_VERSION, AnswerParser, build_messages
from clineval.benchmarks.tcm_sd.dataset import TcmRecord
from clineval.benchmarks.tcm_sd.norm import NormTable
from clineval.concurrency import gather_bounded, run_model_calls
from clineval.models.llm_base import ChatError, ChatModel, ChatRequest
from clineval.progress import TaskProgress, counters_of, task_progress

TASK = "tcm-sd"
DEFAULT_MAX_TOKENS = 64


def make_request(
    ctx: RunContext, record: TcmRecord, labels: list[str], fields: tuple[str, ...]
) -> ChatRequest:
    return ChatRequest(
        messages=build_messages(record, labels, fields),
        temperature=ctx.config.temperature,
        max_tokens=ctx.config.max_tokens or DEFAULT_MAX_TOKENS,
        seed=ctx.config.seed,
        template_version=TEMPLATE_VERSION,
    )


async def _one(
    ctx: RunContext,
    model: ChatModel,
    parser: AnswerParser,
    key: str,
    record: TcmRecord,
    labels: list[str],
    fields: tuple[str, ...],
    progress: TaskProgress,
) -> None:
    try:
        reply = await model.chat(make_request(ctx, record, labels, fields))
    except ChatError as exc:
        progress.count(f"errors_{exc.kind}")
        progress.advance()
        return
    answer = parser.parse(reply.text, record.lcd_name)
    value = {"pred": answer.label, "raw_output": reply.text, "parse": answer.status}
    if answer.reason:
        value["reason"] = answer.reason
    ctx.store.put_record(TASK, "prediction", key, value)
    if answer.label is None:
        progress.count("invalid")
    progress.advance(cached=reply.cached)


async def _run(
    ctx: RunContext,
    labels: list[str],
    norm: NormTable | None,
    todo: list[tuple[str, TcmRecord]],
    fields: tuple[str, ...],
) -> dict[str, Any]:
    from clineval.models.llm import open_chat_model

    parser = AnswerParser(labels, norm)
    async with open_chat_model(ctx.model, ctx.runtime, "candidate") as model:
        with task_progress(TASK, len(todo), ctx.runtime.calls) as progress:
            await gather_bounded(
                ctx.runtime.calls,
                (_one(ctx, model, parser, k, r, labels, fields, progress) for k, r in todo),
            )
            return counters_of(progress)


def predict_llm(
    ctx: RunContext,
    labels: list[str],
    norm: NormTable | None,
    todo: list[tuple[str, TcmRecord]],
    fields: tuple[str, ...],
) -> None:
    counters = run_model_calls(_run(ctx, labels, norm, todo, fields))
    ctx.note(TASK, "llm", {"template_version": TEMPLATE_VERSION, **counters})
