"""A rubric judge's prompt: one (query, response, criterion) -> a JSON verdict.

Each judged benchmark brings its own wording (a template with the placeholders {query},
{response} and {criterion}, a system turn, a version that goes into every judge call's cache
key, and optionally its own verdict schema); ClinConsensus's is in its package.
`--judge-prompt FILE` replaces it with a user's text holding the three placeholders; only those
are substituted, so JSON braces in the text are left alone.

The candidate's response is wrapped in delimiters that the parser knows (judge/parse.py), and
any delimiter text inside the inserted fields is defused, so the response cannot close its own
block and speak as the instructions.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from clineval.errors import InputError
from clineval.jsonio import parse_json

RESPONSE_START = "<<<CANDIDATE_RESPONSE>>>"
RESPONSE_END = "<<<END_CANDIDATE_RESPONSE>>>"
PLACEHOLDERS = ("{query}", "{response}", "{criterion}")

VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "explanation": {"type": "string"},
        "criteria_met": {"type": "boolean"},
    },
    "required": ["explanation", "criteria_met"],
    "additionalProperties": False,
}


def verdict_schema(explanation_chars: int | None = None) -> dict[str, Any]:
    """VERDICT_SCHEMA, with the explanation bounded to `explanation_chars` characters when
    given. A server that turns the schema into a grammar (llama.cpp) then has to close the
    string and write `criteria_met` after at most that many characters: a small model that
    loops inside the explanation still gives a verdict, instead of running to max_tokens
    with the JSON unfinished and being asked again (BENCHMARKS.md, embedded defaults)."""
    if explanation_chars is None:
        return VERDICT_SCHEMA
    properties = {
        **VERDICT_SCHEMA["properties"],
        "explanation": {"type": "string", "maxLength": explanation_chars},
    }
    return {**VERDICT_SCHEMA, "properties": properties}


def verdict_token_bound(explanation_chars: int) -> int:
    """Tokens enough for a whole verdict whose explanation has at most `explanation_chars`
    characters: 3 a character (a byte-level tokenizer, SmolLM2's, writes a CJK character as
    up to 3 byte tokens; English far fewer) plus room for the JSON around it."""
    return 3 * explanation_chars + 64


def _keeps_verdict_field(schema: str) -> bool:
    try:
        value = parse_json(schema, source="judge schema")
    except ValueError:
        return False
    properties = value.get("properties") if isinstance(value, dict) else None
    field = properties.get("criteria_met") if isinstance(properties, dict) else None
    return isinstance(field, dict) and field.get("type") == "boolean"


def _defuse(text: str) -> str:
    """Break any delimiter inside an inserted field so it cannot end the response block."""
    for marker in (RESPONSE_START, RESPONSE_END):
        text = text.replace(marker, marker.replace("<<<", "<< <"))
    return text


@dataclass(frozen=True)
class JudgePrompt:
    """A judge's wording: `template` with {query}, {response} and {criterion}, its `version`
    (in the cache key of every judge call: change it with the words), an optional `system`
    turn, and the options below. `custom` marks a template read from a `--judge-prompt`
    file rather than a benchmark's own."""

    template: str
    version: str  # part of the cache key of every judge call
    system: str | None = None
    custom: bool = False
    # Whether the judge call asks the server for JSON output (the response_format ladder of
    # clineval.judge.run). False for a prompt whose model was trained to answer in its own
    # format (the official one: a ```json fence): its calls are plain text, as in training.
    constrained: bool = True
    # Whether clineval's delimiter text inside inserted fields is broken up (`_defuse`). Only
    # a template that uses those delimiters needs it; the official prompt does not, and its
    # authors' str.format sends inserted text exactly as it is, so it says False.
    defuse: bool = True
    # A benchmark's own verdict schema as JSON text (None: VERDICT_SCHEMA). It must keep the
    # boolean `criteria_met` (and may add fields): judge.parse reads that field.
    schema: str | None = None

    def __post_init__(self) -> None:
        # A benchmark author's mistake, caught where the prompt is made (at import of the
        # benchmark's module), not as a judge_error on every criterion of a run.
        if self.schema is not None and not _keeps_verdict_field(self.schema):
            raise ValueError(
                f"judge prompt {self.version}: its verdict schema must be a JSON object schema "
                'with a boolean "criteria_met" property (the field the verdict is read from)'
            )

    @cached_property
    def _pieces(self) -> tuple[str, ...]:
        """The template split at its placeholders: text, placeholder, text, ... (once)."""
        pieces: list[str] = []
        pos = 0
        while True:
            hits = [(self.template.find(p, pos), p) for p in PLACEHOLDERS]
            hits = [(at, p) for at, p in hits if at != -1]
            if not hits:
                pieces.append(self.template[pos:])
                return tuple(pieces)
            at, name = min(hits)
            pieces += [self.template[pos:at], name]
            pos = at + len(name)

    def messages(self, query: str, response: str, criterion: str) -> tuple[tuple[str, str], ...]:
        # Substituted in one pass over the pre-split template, so text inserted for one
        # placeholder is never searched for another ({criterion} inside an answer stays text).
        clean = _defuse if self.defuse else str
        values = {
            "{query}": clean(query),
            "{response}": clean(response),
            "{criterion}": clean(criterion),
        }
        user = "".join(
            values.get(piece, piece) if i % 2 else piece for i, piece in enumerate(self._pieces)
        )
        if self.system is None:
            return (("user", user),)
        return (("system", self.system), ("user", user))

    @property
    def delimiters(self) -> tuple[str, str] | None:
        """The response delimiters, when the template uses clineval's own."""
        if RESPONSE_START in self.template and RESPONSE_END in self.template:
            return (RESPONSE_START, RESPONSE_END)
        return None


def load_judge_prompt(path: str | Path | None, default: JudgePrompt) -> JudgePrompt:
    """`default` (the benchmark's own wording), or a user's template file (`--judge-prompt`)
    with all three placeholders. (A benchmark may name prompts of its own, e.g.
    ClinConsensus's `official`.)"""
    if path is None:
        return default
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("judge prompt file not found", path=p) from None
    except UnicodeDecodeError:
        raise InputError("judge prompt file is not UTF-8 text", path=p) from None
    except OSError as exc:  # a directory, no permission
        raise InputError(f"cannot read the judge prompt file: {exc.strerror}", path=p) from None
    missing = [ph for ph in PLACEHOLDERS if ph not in text]
    if missing:
        raise InputError(f"judge prompt lacks placeholder(s) {', '.join(missing)}", path=p)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    return JudgePrompt(text, f"custom-{digest}", None, custom=True)
