"""`clineval run --dry-run`: the model calls a run would make, before it makes any.

Each LLM task lists the requests it would send (built by the same code that sends them) to a
`CallPlan`; the plan looks each one up in the run store, so a resumed run counts only what is
left, and totals calls, estimated prompt tokens, the completion-token ceiling (max_tokens) and,
with a price table, a cost range. Nothing is sent and nothing is written.

Prompt tokens are an estimate without the model's tokenizer: one token per CJK character and
one per four other characters (Chinese text is ~1-1.5 tokens a character in common
tokenizers; English ~4 characters a token). Calls whose prompt contains an answer that does
not exist yet (a ClinConsensus judge call before the candidate has answered) are counted with
the candidate's max_tokens in place of the answer: an upper bound. Retries are not counted.

Shared prefixes: calls with the same prefix key (ChatRequest.prefix_key: a ClinConsensus
case's judge calls) repeat the start of their prompt; `shared_prefix_tokens` counts, for every
such call after the first, the estimated tokens it shares with the key's first call: what a
server's prompt cache could skip.

The cost range is a range: its ends assume the least and the most a run can be charged, not
the estimate above.
- low: the fewest tokens a prompt can take (`token_bounds`), an answer not made yet as
  empty, every call's start that it shares with the first call of its prefix key or with the
  model's first call served from a prompt cache (at `cached_input_per_1m`), one completion
  token a call (a stored answer is never empty);
- high: the most tokens a prompt can take, an answer not made yet at its max_tokens, no
  prompt cache, every call writing its whole max_tokens; none (unbounded) when a call has no
  max_tokens.
Both at the rates the run is priced at: batch rates for batched models (clineval.models.usage;
a batched model whose price has no batch rate is priced at list, and `batch_price_warnings`
says so).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from clineval.models.chat_store import is_usable_stored_call
from clineval.models.extra_body import extra_body_for, with_extra_body
from clineval.models.llm_base import ChatRequest, request_key
from clineval.models.usage import Price, PriceTable, find_price
from clineval.store import RunStore

# CJK ideographs (basic + extension A + compatibility), kana, hangul and CJK punctuation /
# full-width forms: roughly one token each.
_WIDE = re.compile(
    "[\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]"
)


# Length assumed for a reply that has no max_tokens, where a prompt will contain it.
UNBOUNDED_REPLY_TOKENS = 2048


def estimate_tokens(text: str) -> int:
    """Rough token count: 1 per CJK character, 1 per 4 other characters (rounded up)."""
    wide = len(_WIDE.findall(text))
    narrow = len(text) - wide
    return wide + (narrow + 3) // 4


# How few and how many tokens a text can take, without its tokenizer. Fewest: one per 6 ASCII
# characters and 2 per 5 other characters, below what tokenizers with large vocabularies pack
# into a token of English or Chinese. Most: one per 2 ASCII characters (text of digits and
# punctuation) and one per UTF-8 byte of the others (a byte-level tokenizer never needs more
# than a token per byte). Chat framing: 0 to 8 tokens a message.
LOW_ASCII_CHARS_PER_TOKEN = 6
LOW_OTHER_TOKENS_PER_5_CHARS = 2
HIGH_ASCII_CHARS_PER_TOKEN = 2
HIGH_FRAMING_TOKENS = 8


def token_bounds(text: str) -> tuple[int, int]:
    """(fewest, most) tokens `text` can take (see above). Counted by encoding, in C: a
    plan sees every judge prompt of a run."""
    ascii_chars = len(text.encode("ascii", "ignore"))
    other_chars = len(text) - ascii_chars
    other_bytes = len(text.encode("utf-8", "surrogatepass")) - ascii_chars
    low = ascii_chars // LOW_ASCII_CHARS_PER_TOKEN + other_chars * LOW_OTHER_TOKENS_PER_5_CHARS // 5
    high = -(-ascii_chars // HIGH_ASCII_CHARS_PER_TOKEN) + other_bytes
    return low, high


def request_token_bounds(request: ChatRequest) -> tuple[int, int]:
    """(fewest, most) prompt tokens of a chat request, framing included."""
    low = high = 0
    for _, content in request.messages:
        message_low, message_high = token_bounds(content)
        low += message_low
        high += message_high + HIGH_FRAMING_TOKENS
    return low, high


def common_prefix_length(a: str, b: str) -> int:
    """Length of the longest common prefix of `a` and `b` (binary search over slice
    comparisons, which run in C: a judge prompt is thousands of characters)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def request_tokens(request: ChatRequest) -> int:
    """Estimated prompt tokens of a chat request (messages + ~4 tokens of framing each)."""
    return sum(estimate_tokens(content) + 4 for _, content in request.messages)


@dataclass
class PlannedCalls:
    """The calls of one (task, role, model) that a run would make."""

    task: str
    role: str  # "candidate" or "judge"
    model: str  # model label (no URL, no key)
    to_send: int = 0  # first attempts the run still has to make
    stored: int = 0  # answered by the run store: free
    prompt_tokens: int = 0  # estimated, of the calls to send
    max_completion_tokens: int = 0  # ceiling: max_tokens of each call to send
    bounded_prompts: int = 0  # of the calls to send: prompt estimated with an upper bound
    # the tokens each of those counts for the text not known yet (the candidate's reply cap),
    # and whether that cap is only assumed (UNBOUNDED_REPLY_TOKENS: the candidate has none)
    bound_tokens: int = 0
    bound_assumed: bool = False
    unbounded_replies: int = 0  # of the calls to send: no max_tokens, no completion ceiling
    shared_prefix_tokens: int = 0  # of prompt_tokens: prefixes repeated under one prefix key
    # Estimated wall seconds of the calls to send (None: no stored call to time them by)
    est_seconds: float | None = None
    timed_from: int = 0  # stored calls of this model and prompt template the estimate used
    reused: int = 0  # answered by a --reuse directory: free too (not counted in stored)
    # the bounds of the cost range (module doc): fewest and most prompt tokens of the calls
    # to send, and of the fewest the tokens a prompt cache could serve
    prompt_tokens_low: int = 0
    prompt_tokens_high: int = 0
    cacheable_tokens_low: int = 0

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class CallPlan:
    """Collects the requests tasks would send; tells stored calls from calls to make."""

    def __init__(self, store: RunStore, options: Mapping[str, str] | None = None):
        self._store = store
        self._options = options or {}  # the run's: a call's extra request fields come from it
        self._rows: dict[tuple[str, str, str], PlannedCalls] = {}
        # (model, prefix key) -> the prompt text of the key's first call to send
        self._prefixes: dict[tuple[str, str], str] = {}
        # row key -> the prompt templates of its calls to send (to time them by stored calls)
        self._templates: dict[tuple[str, str, str], set[str]] = {}
        # model -> the prompt text of its first call to send (the low end's prompt cache)
        self._firsts: dict[str, str] = {}

    def _shared_tokens(
        self, model: str, request: ChatRequest, unknown_tokens: int = 0
    ) -> tuple[int, int]:
        """(estimated prompt tokens this call shares with the first call of its prefix key
        (0 for that first call and for calls without a key), the fewest tokens of it a prompt
        cache could serve (`_cacheable_low`)). `unknown_tokens` of a bounded prompt stand
        inside the shared part (the answer comes before the criterion)."""
        text = "\n".join(content for _, content in request.messages)
        key_shared = 0
        if request.prefix_key is not None:
            key = (model, request.prefix_key)
            first = self._prefixes.get(key)
            if first is None:
                self._prefixes[key] = text
            else:
                key_shared = common_prefix_length(first, text)
        cacheable = self._cacheable_low(model, text, key_shared)
        if not key_shared:
            return 0, cacheable
        return estimate_tokens(text[:key_shared]) + unknown_tokens, cacheable

    def _cacheable_low(self, model: str, text: str, key_shared: int) -> int:
        """The fewest tokens of the part of `text` a prompt cache could serve: its start shared
        with its key's first call or with the model's first call (0 for the model's first)."""
        first = self._firsts.get(model)
        if first is None:
            self._firsts[model] = text
            return 0
        shared = max(key_shared, common_prefix_length(first, text))
        return token_bounds(text[:shared])[0]

    def _count(
        self, task: str, role: str, model: str, request: ChatRequest, unknown_tokens: int
    ) -> None:
        """One call to send, into its row: the estimate and the cost range's bounds."""
        row = self._row(task, role, model)
        row.to_send += 1
        self._templates.setdefault((task, role, model), set()).add(request.template_version)
        row.prompt_tokens += request_tokens(request) + unknown_tokens
        shared, cacheable = self._shared_tokens(model, request, unknown_tokens)
        row.shared_prefix_tokens += shared
        low, high = request_token_bounds(request)
        row.prompt_tokens_low += low  # an answer not made yet may be empty
        row.prompt_tokens_high += high + unknown_tokens
        row.cacheable_tokens_low += min(cacheable, low)
        row.max_completion_tokens += request.max_tokens or 0
        if request.max_tokens is None:
            row.unbounded_replies += 1

    def _row(self, task: str, role: str, model: str) -> PlannedCalls:
        key = (task, role, model)
        if key not in self._rows:
            self._rows[key] = PlannedCalls(task, role, model)
        return self._rows[key]

    def add(
        self, task: str, role: str, model: str, request: ChatRequest
    ) -> Mapping[str, Any] | None:
        """One request that the run would send; returns the stored call if the store has it
        (then it is free), else None."""
        row = self._row(task, role, model)
        # keyed as its model will send it: with the role's extra request fields
        request = with_extra_body(request, extra_body_for(self._options, role))
        _, key = request_key(request, model)
        stored = self._store.get_call(key)
        if is_usable_stored_call(stored):
            row.stored += 1
            return stored
        reused = self._store.reused_call(key)
        if reused is not None and is_usable_stored_call(reused[1]):
            row.reused += 1
            return reused[1]
        self._count(task, role, model, request, 0)
        return None

    def add_bounded(
        self,
        task: str,
        role: str,
        model: str,
        request: ChatRequest,
        unknown_tokens: int,
        assumed: bool = False,
    ) -> None:
        """A request whose prompt will also hold `unknown_tokens` tokens not known yet
        (`assumed`: a figure taken for text that has no bound of its own)."""
        row = self._row(task, role, model)
        row.bounded_prompts += 1
        row.bound_tokens = max(row.bound_tokens, unknown_tokens)
        row.bound_assumed = row.bound_assumed or assumed
        self._count(task, role, model, request, unknown_tokens)

    def add_stored(self, task: str, role: str, model: str, n: int) -> None:
        """Calls whose results the task already keeps (e.g. stored verdicts): no request."""
        self._row(task, role, model).stored += n

    def rows(self) -> list[PlannedCalls]:
        return list(self._rows.values())

    def estimate_time(self, parallel: Mapping[str, int]) -> None:
        """Set each row's `est_seconds`: its calls to send x the mean server time of the stored
        calls of the same model and prompt template (llama.cpp reports it with every reply:
        `timings.prompt_ms + predicted_ms`), over the calls `parallel[model]` serves at once.
        Measured, not guessed: token ceilings say nothing of speed, and a reply's length is
        the model's (a judge's JSON verdict is ~50 tokens under a 1,024 ceiling). A row with no
        such stored call keeps None: the dry run then says how to get one."""
        samples: dict[tuple[str, str], list[float]] = {}
        for call in self._store.iter_calls():
            timings = (call.get("usage") or {}).get("timings") or {}
            prompt_ms, predicted_ms = timings.get("prompt_ms"), timings.get("predicted_ms")
            if not (isinstance(prompt_ms, int | float) and isinstance(predicted_ms, int | float)):
                continue
            template = str((call.get("request") or {}).get("template_version"))
            seconds = (float(prompt_ms) + float(predicted_ms)) / 1000.0
            samples.setdefault((call["model"], template), []).append(seconds)
        for key, row in self._rows.items():
            if row.to_send == 0:
                row.est_seconds = 0.0
                continue
            times = [
                t for v in self._templates.get(key, ()) for t in samples.get((row.model, v), [])
            ]
            if times:
                mean = sum(times) / len(times)
                row.est_seconds = row.to_send * mean / max(1, parallel.get(row.model, 1))
                row.timed_from = len(times)


def batch_rounds(
    rows: list[PlannedCalls], batched: Mapping[str, bool], max_lines: int
) -> list[dict[str, Any]]:
    """--batch --dry-run: per batched model and role (a task's round: ClinConsensus answers,
    then judge calls), the lines to submit and the batches they take (max_lines per file;
    the 200 MB bound may split further)."""
    out = []
    for row in rows:
        if batched.get(row.model) and row.to_send:
            batches = -(-row.to_send // max_lines)
            out.append(
                {
                    "task": row.task,
                    "role": row.role,
                    "model": row.model,
                    "lines": row.to_send,
                    "batches": batches,
                }
            )
    return out


def plan_summary(
    rows: list[PlannedCalls], prices: PriceTable, batched: Mapping[str, bool] | None = None
) -> dict[str, Any]:
    """Rows as dicts with a cost range where a price is known (at batch rates for the models
    in `batched`), and the totals."""
    out = []
    total_low = 0.0
    total_high: float | None = 0.0
    priced_all = True
    for row in rows:
        item = row.as_dict()
        price = find_price(prices, row.model)
        if price is not None and batched and batched.get(row.model):
            price = price.batch()
        if price is None:
            item["cost_low"] = item["cost_high"] = None
            priced_all = priced_all and row.to_send == 0
        else:
            low, high = cost_bounds(row, price)
            item["cost_low"], item["cost_high"] = low, high
            total_low += low
            if high is None or total_high is None:
                total_high = None
            else:
                total_high += high
        out.append(item)
    return {
        "rows": out,
        "to_send": sum(r.to_send for r in rows),
        "stored": sum(r.stored for r in rows),
        "reused": sum(r.reused for r in rows),
        "prompt_tokens": sum(r.prompt_tokens for r in rows),
        "shared_prefix_tokens": sum(r.shared_prefix_tokens for r in rows),
        "max_completion_tokens": sum(r.max_completion_tokens for r in rows),
        # seconds, when every row with calls to send could be timed
        "est_seconds": (
            sum(r.est_seconds or 0.0 for r in rows)
            if all(r.est_seconds is not None for r in rows)
            else None
        ),
        "cost_low": total_low if priced_all else None,
        "cost_high": total_high if priced_all else None,
    }


def cost_bounds(row: PlannedCalls, price: Price) -> tuple[float, float | None]:
    """(least, most) the calls to send of `row` can cost at `price` (module doc); the most is
    None when a call has no max_tokens."""
    low = price.cost(row.prompt_tokens_low, row.to_send, row.cacheable_tokens_low)
    if row.unbounded_replies:
        return low, None
    return low, price.cost(row.prompt_tokens_high, row.max_completion_tokens)
