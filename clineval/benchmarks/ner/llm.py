"""NER by extraction with a chat model (`openai:...`, `llamacpp:...`).

The model reads one document and answers JSON `{"entities": [{"text": ..., "type": ...}]}`.
Each mention is then LOCATED in the document, which gives the character spans the metrics need:

* every occurrence is taken (the model names a mention once, the gold marks each occurrence);
* the match is exact and case-sensitive (the prompt asks for text copied verbatim; a
  case-insensitive match would turn "MS" into every "ms");
* an occurrence must start and end on boundaries of the benchmark's regex tokens
  (`\\w+(?:[-_]\\w+)*|\\S`), so "cancer" does not match inside "cancers" nor "flu" inside
  "flu-like" (one token);
* a (text, type) pair listed twice is located once; mentions not found are counted, not
  guessed (`not_found` in the stored record).

The reply parser accepts, in order: the JSON object above (bare, fenced with ```json, or
preceded by prose), a bare JSON list of entity objects, an object mapping each type to a
list of strings, and, for a truncated reply, the complete `{...}` entity objects it still
contains ("salvaged"). Types are matched case-insensitively, also through the corpus type names
NCER maps (Disease -> condition, Chemical -> drug, ...); an item of an unknown type is dropped.
A reply with no usable JSON is "invalid": an empty prediction, counted in the manifest.

The kit's `predict_by_chat` stores each finished reply at once (record kind "prediction", with
the raw reply and the parse status), so an interrupted run keeps its work; a call that fails
after the backend's bounded retries stores nothing and the document is asked again by the
next run; a server that refuses the response_format is asked again without one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from clineval.benchmarks.base import RunContext
from clineval.benchmarks.kit import predict_by_chat
from clineval.benchmarks.ner.bio import word_offsets
from clineval.benchmarks.ner.options import NER_OPTIONS
from clineval.benchmarks.ner.records import NerDocument, Span
from clineval.jsonio import JsonProblem, decode_prefix, parse_json
from clineval.models.llm_base import ChatRequest

TEMPLATE_VERSION = "ner-extract-v1"
DEFAULT_MAX_TOKENS = 1024

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)(?:```|$)", re.DOTALL)
_FLAT_OBJECT = re.compile(r"\{[^{}\[\]]*\}")


def build_messages(text: str, types: Sequence[str]) -> tuple[tuple[str, str], ...]:
    kinds = ", ".join(f'"{t}"' for t in types)
    system = (
        "You are a biomedical named entity recognition system. You extract entity mentions "
        "from text and answer with JSON only."
    )
    user = (
        f"Extract every mention of these entity types: {kinds}.\n"
        "Copy each mention exactly as it is written in the text (same characters, same case). "
        "List a mention once even if it occurs several times.\n"
        'Answer with a JSON object: {"entities": [{"text": "<mention>", "type": "<type>"}]}. '
        'If there is none, answer {"entities": []}.\n\n'
        f"Text:\n{text}"
    )
    return (("system", system), ("user", user))


def response_format(types: Sequence[str], kind: str) -> dict[str, Any] | None:
    if kind == "none":
        return None
    if kind == "json_object":
        return {"type": "json_object"}
    schema = {
        "type": "object",
        "properties": {
            "entities": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "text": {"type": "string"},
                        "type": {"type": "string", "enum": list(types)},
                    },
                    "required": ["text", "type"],
                },
            }
        },
        "required": ["entities"],
    }
    return {"type": "json_schema", "json_schema": {"name": "entities", "schema": schema}}


# ---- parsing --------------------------------------------------------------------------------
@dataclass
class ParsedReply:
    mentions: list[tuple[str, str]]  # (text, type), in reply order
    status: str  # "ok" | "salvaged" | "invalid"
    dropped: int = 0  # items without text or with a type outside the dataset


def _json_candidates(reply: str) -> list[Any]:
    """Every JSON array/object that decodes in the reply, fenced blocks first, left to right."""
    found: list[Any] = []
    texts = [m.group(1) for m in _FENCE.finditer(reply)] + [reply]
    for text in texts:
        i = 0
        while i < len(text):
            if text[i] not in "[{":
                i += 1
                continue
            decoded = decode_prefix(text, i)  # a reply is input: see clineval.jsonio
            if decoded is None:
                i += 1
                continue
            value, i = decoded
            found.append(value)
    return found


def _items(value: Any) -> list[Any] | None:
    """The entity items of a decoded value, or None when its shape is not one we read."""
    if isinstance(value, list):
        return value
    if not isinstance(value, dict):
        return None
    for key in ("entities", "Entities", "mentions"):
        if isinstance(value.get(key), list):
            return list(value[key])
    # {"condition": ["a", "b"], "drug": [...]}
    if value and all(isinstance(v, list) for v in value.values()):
        return [
            {"text": text, "type": kind}
            for kind, texts in value.items()
            for text in texts
            if isinstance(text, str)
        ]
    return None


def _mentions(items: list[Any], types: Sequence[str]) -> tuple[list[tuple[str, str]], int]:
    from clineval.benchmarks.ner.corpora import type_names

    lookup = type_names(types)
    out: list[tuple[str, str]] = []
    dropped = 0
    for item in items:
        text: Any
        kind: str | None
        if isinstance(item, str) and len(types) == 1:
            text, kind = item, types[0]  # one-type dataset: a bare string is a mention
        elif isinstance(item, dict):
            text = item.get("text", item.get("mention"))
            raw_type = item.get("type", item.get("label"))
            kind = lookup.get(raw_type.strip().lower()) if isinstance(raw_type, str) else None
            if kind is None and raw_type is None and len(types) == 1:
                kind = types[0]
        else:
            text, kind = None, None
        if not isinstance(text, str) or not text.strip() or kind is None:
            dropped += 1
            continue
        out.append((text, kind))
    return out, dropped


def parse_reply(reply: str, types: Sequence[str]) -> ParsedReply:
    """Mentions from a model's reply (see the module docstring for the accepted shapes)."""
    first: ParsedReply | None = None
    for value in _json_candidates(reply):
        items = _items(value)
        if items is None:
            continue
        mentions, dropped = _mentions(items, types)
        if mentions:
            return ParsedReply(mentions, "ok", dropped)
        first = first or ParsedReply([], "ok", dropped)
    if first is not None:  # e.g. {"entities": []}
        return first
    # Truncated or otherwise broken JSON: keep the complete flat objects it contains.
    salvaged: list[Any] = []
    for match in _FLAT_OBJECT.finditer(reply):
        try:
            salvaged.append(parse_json(match.group(0)))
        except JsonProblem:
            continue
    if salvaged:
        mentions, dropped = _mentions(salvaged, types)
        if mentions:
            return ParsedReply(mentions, "salvaged", dropped)
    return ParsedReply([], "invalid")


# ---- locating mentions ----------------------------------------------------------------------
def locate_mentions(text: str, mentions: Sequence[tuple[str, str]]) -> tuple[list[Span], list[str]]:
    """(spans of every case-sensitive occurrence on token boundaries; mentions not found)."""
    offsets = word_offsets(text)
    token_starts = {s for s, _ in offsets}
    token_ends = {e for _, e in offsets}
    spans: list[Span] = []
    not_found: list[str] = []
    seen: set[tuple[str, str]] = set()
    for mention, kind in mentions:
        if (mention, kind) in seen:
            continue
        seen.add((mention, kind))
        needle = mention.strip()
        hits = 0
        start = text.find(needle) if needle else -1
        while start >= 0:
            end = start + len(needle)
            if start in token_starts and end in token_ends:
                spans.append(Span(start, end, kind))
                hits += 1
                start = text.find(needle, end)
            else:
                start = text.find(needle, start + 1)
        if hits == 0:
            not_found.append(mention)
    return spans, not_found


# ---- running --------------------------------------------------------------------------------
def format_option(ctx: RunContext) -> str:
    """The response_format the run asks for (--option ner.response_format)."""
    return str(NER_OPTIONS.value(ctx.config.options, "response_format"))


def make_request(ctx: RunContext, text: str, types: Sequence[str], fmt: str) -> ChatRequest:
    return ChatRequest(
        messages=build_messages(text, types),
        temperature=ctx.config.temperature,
        max_tokens=ctx.config.max_tokens or DEFAULT_MAX_TOKENS,
        seed=ctx.config.seed,
        response_format=response_format(types, fmt),
        template_version=TEMPLATE_VERSION,
    )


def extract_entities_for_documents(
    ctx: RunContext, task: str, documents: Sequence[NerDocument], types: Sequence[str]
) -> dict[str, Any]:
    """Ask the run's chat model for each document's entities (through the kit: each stored as
    it arrives, record kind "prediction" of `task`; a server that refuses the response_format
    is asked again without one); returns the manifest's summary of the calls."""
    texts = {doc.id: doc.text for doc in documents}
    status: dict[str, int] = {}
    not_found_total = 0

    def record_of(doc_id: str, reply: str) -> dict[str, Any]:
        nonlocal not_found_total
        parsed = parse_reply(reply, types)
        spans, not_found = locate_mentions(texts[doc_id], parsed.mentions)
        status[parsed.status] = status.get(parsed.status, 0) + 1
        not_found_total += len(not_found)
        return {
            "entities": [[s.start, s.end, s.type] for s in spans],
            "raw_output": reply,
            "parse": parsed.status,
            "not_found": not_found,
            "dropped_items": parsed.dropped,
        }

    fmt = format_option(ctx)
    requests = [(doc.id, make_request(ctx, doc.text, types, fmt)) for doc in documents]
    progress = predict_by_chat(
        ctx, task, requests, record_of, format_fallback=True, description=f"{task} extraction"
    )
    # The manifest keeps its shape: call errors and fallbacks beside the progress counters.
    errors = {
        name.removeprefix("errors_"): progress.pop(name)
        for name in list(progress)
        if name.startswith("errors_")
    }
    return {
        "template_version": TEMPLATE_VERSION,
        "response_format": fmt,
        "parse_status": status,
        "call_errors": errors,
        "mentions_not_found": not_found_total,
        "format_fallbacks": progress.pop("format_fallbacks", 0),
        "progress": progress,
    }
