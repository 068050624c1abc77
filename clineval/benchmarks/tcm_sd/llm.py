"""TCM-SD zero-shot with a chat model (`openai:...`, `llamacpp:...`) via the kit's
`predict_by_chat`.

Every record is one call (prompt: answer.py). The kit caches each finished call in the run
store, applies the run's concurrency limit and bounded retries, and stores each reply as a
`prediction` record the moment it arrives: here, what the label parser makes of it (the raw
reply, the parse status and the reason when it is invalid; invalid replies are counted live).
A call that still fails after the retries stores nothing: the sample stays pending, is
reported as missing (scored invalid), and the next run with the same --output-dir asks again.
"""

from __future__ import annotations

from typing import Any

from clineval.benchmarks.base import RunContext
from clineval.benchmarks.kit import predict_by_chat
from clineval.benchmarks.tcm_sd.answer import TEMPLATE_VERSION, AnswerParser, build_messages
from clineval.benchmarks.tcm_sd.dataset import TcmRecord
from clineval.benchmarks.tcm_sd.norm import NormTable
from clineval.models.llm_base import ChatRequest

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


def predict_llm(
    ctx: RunContext,
    labels: list[str],
    norm: NormTable | None,
    todo: list[tuple[str, TcmRecord]],
    fields: tuple[str, ...],
) -> None:
    parser = AnswerParser(labels, norm)
    records = dict(todo)

    def record_of(key: str, reply: str) -> dict[str, Any]:
        answer = parser.parse(reply, records[key].lcd_name)  # the norm table reads the disease
        value = {"pred": answer.label, "raw_output": reply, "parse": answer.status}
        if answer.reason:
            value["reason"] = answer.reason
        return value

    requests = [(key, make_request(ctx, record, labels, fields)) for key, record in todo]
    counters = predict_by_chat(
        ctx, TASK, requests, record_of, invalid=lambda value: value["pred"] is None
    )
    ctx.note(TASK, "llm", {"template_version": TEMPLATE_VERSION, **counters})
