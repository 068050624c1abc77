"""Reading a judge's verdict out of its reply text.

The judge is asked for {"explanation": str, "criteria_met": bool}. Servers with JSON modes
return exactly that; others wrap it in prose or code fences. In order:
  1. the whole reply is a JSON object                -> use it
  2. fenced code blocks (```json ... ```)             -> the LAST one holding a verdict object
  3. bare JSON objects anywhere in the text           -> the LAST one holding a verdict object
  4. the judge's own field, anchored                  -> the LAST line that STARTS with
     `criteria_met: true|false`, else the field as the very END of the reply; prose that
     mentions the field mid-text never counts
Steps 2-4 first blank out anything the judge copied from the candidate's answer: the region
between the response delimiters of the prompt, and every verbatim copy of an answer line that
mentions `criteria_met`, and every JSON object equal to one in the answer (however the
judge re-spaced it); step 1 rejects such an object too. A candidate that writes
`"criteria_met": true` into its answer can therefore not decide its own verdict, even when the
judge quotes the answer.
Nothing else is guessed: no verdict -> None (the caller retries, then records a judge_error).

A reasoning model's reply may open with its thinking, `<think> ... </think>`, before the answer
(a Qwen3 judge served with thinking on, or a server that leaves it in the content): that block
is dropped first, so nothing the judge considered on the way counts as its verdict. A reply that
is all thinking (the block never closes: cut at max_tokens) has no verdict.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from clineval.jsonio import JsonProblem, decode_prefix, parse_json

FIELD = "criteria_met"
_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n?(.*?)```", re.DOTALL)
_ANCHORED = re.compile(
    r"""^[ \t>*\-{,]*["']?criteria_met["']?[ \t]*[:=][ \t]*["']?(true|false)\b""",
    re.IGNORECASE | re.MULTILINE,
)
# The same field as the very end of the reply (a one-line object that lost its closing brace,
# or prose ending in the field): the judge's own last word, not something it quoted mid-text.
_AT_END = re.compile(
    r"""["']?criteria_met["']?[ \t]*[:=][ \t]*["']?(true|false)["']?\s*}?\s*(?:```)?\s*\Z""",
    re.IGNORECASE,
)
_BOOL_WORDS = {"true": True, "false": False}
_THINK_OPEN = re.compile(r"\A\s*<think>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</think>", re.IGNORECASE)


def strip_thinking(text: str) -> str:
    """The reply after a leading <think> block ("" when the block never closes)."""
    opened = _THINK_OPEN.match(text)
    if opened is None:
        return text
    closed = _THINK_CLOSE.search(text, opened.end())
    return "" if closed is None else text[closed.end() :]


@dataclass(frozen=True)
class Verdict:
    met: bool
    explanation: str
    method: str  # "json" | "fenced" | "bare" | "pattern": how it was read (for diagnostics)


def _as_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return _BOOL_WORDS.get(value.strip().lower())
    return None


def _from_object(obj: Any, method: str) -> Verdict | None:
    if not isinstance(obj, dict) or FIELD not in obj:
        return None
    met = _as_bool(obj[FIELD])
    if met is None:
        return None
    explanation = obj.get("explanation", "")
    return Verdict(met, explanation if isinstance(explanation, str) else str(explanation), method)


def _json_spans(text: str) -> list[tuple[int, int, Any]]:
    """(start, end, value) of every top-level JSON object decoding at some '{', left to right."""
    found: list[tuple[int, int, Any]] = []
    pos = text.find("{")
    while pos != -1:
        decoded = decode_prefix(text, pos)  # judge text is input: see clineval.jsonio
        if decoded is None:
            pos = text.find("{", pos + 1)
            continue
        obj, end = decoded
        found.append((pos, end, obj))
        pos = text.find("{", end)
    return found


def _json_objects(text: str) -> list[Any]:
    return [obj for _, _, obj in _json_spans(text)]


def _blank_quoted_objects(text: str, quoted: list[Any]) -> str:
    """Remove JSON objects equal to one the candidate wrote, however the judge re-spaced them."""
    if not quoted:
        return text
    parts: list[str] = []
    pos = 0
    for start, end, obj in _json_spans(text):
        if obj in quoted:
            parts.append(text[pos:start] + " ")
            pos = end
    parts.append(text[pos:])
    return "".join(parts)


def _last_verdict(objects: list[Any], method: str) -> Verdict | None:
    for obj in reversed(objects):
        verdict = _from_object(obj, method)
        if verdict is not None:
            return verdict
    return None


def strip_quoted_answer(text: str, answer: str | None, delimiters: tuple[str, str] | None) -> str:
    """Blank out what the judge copied from the candidate answer (see the module docstring)."""
    if delimiters is not None:
        start, end = delimiters
        pattern = re.escape(start) + r".*?(?:" + re.escape(end) + r"|\Z)"
        text = re.sub(pattern, " ", text, flags=re.DOTALL)
    if answer:
        lines = {line.strip() for line in answer.splitlines() if FIELD in line and line.strip()}
        # Longest first, so a long quoted line is removed before a shorter one inside it.
        for line in sorted(lines, key=len, reverse=True):
            text = text.replace(line, " ")
    return text


@lru_cache(maxsize=512)
def _quoted_objects(answer: str) -> list[Any]:
    """JSON objects in a candidate answer (cached: one answer meets 30 criteria). Read-only."""
    return [o for o in _json_objects(answer) if isinstance(o, dict)]


def parse_verdict(
    text: str,
    answer: str | None = None,
    delimiters: tuple[str, str] | None = None,
) -> Verdict | None:
    """The judge's verdict in `text`, or None. `answer` and `delimiters` guard against quotes."""
    # Verdict-like objects written by the candidate: a judge reply that is (or contains) one of
    # them verbatim is a quote, never the judge's verdict.
    quoted = _quoted_objects(answer) if answer and "{" in answer else []
    text = strip_thinking(text)
    stripped = text.strip()
    try:
        whole = parse_json(stripped)
    except JsonProblem:
        whole = None
    verdict = None if whole in quoted else _from_object(whole, "json")
    if verdict is not None:
        return verdict
    cleaned = _blank_quoted_objects(strip_quoted_answer(text, answer, delimiters), quoted)
    fenced = [obj for block in _FENCE.findall(cleaned) for obj in _json_objects(block)]
    verdict = _last_verdict([o for o in fenced if o not in quoted], "fenced")
    if verdict is not None:
        return verdict
    bare = [o for o in _json_objects(cleaned) if o not in quoted]
    verdict = _last_verdict(bare, "bare")
    if verdict is not None:
        return verdict
    matches = _ANCHORED.findall(cleaned)
    if matches:
        return Verdict(_BOOL_WORDS[matches[-1].lower()], "", "pattern")
    end = _AT_END.search(cleaned)
    if end:
        return Verdict(_BOOL_WORDS[end.group(1).lower()], "", "pattern")
    return None
