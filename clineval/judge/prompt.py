"""A judge's prompt: named slots filled per call -> a verdict of the prompt's kind.

Each judged benchmark brings its own wording: a template with named slots, a system turn, a
version that goes into every judge call's cache key, its verdict kind (judge/kinds.py: binary by
default, categorical or graded) and optionally its own verdict schema. A rubric prompt's slots are
{query}, {response} and {criterion}; a pairwise one's might be {question}, {answer_a},
{answer_b}; ClinConsensus's wording is in its package. `--judge-prompt FILE` replaces the
template with a user's text holding the same slots; only those are substituted (by plain
replacement, in one pass), so JSON braces in the text are left alone.

The candidate's answers are wrapped in delimiters that the parser knows (judge/parse.py), and
any delimiter text inside the inserted fields is defused, so an answer cannot close its own
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
from clineval.judge.kinds import BINARY, VerdictKind

RESPONSE_START = "<<<CANDIDATE_RESPONSE>>>"
RESPONSE_END = "<<<END_CANDIDATE_RESPONSE>>>"
RUBRIC_SLOTS = ("query", "response", "criterion")
PLACEHOLDERS = tuple("{" + slot + "}" for slot in RUBRIC_SLOTS)

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


def _keeps_verdict_field(schema: str, kind: VerdictKind = BINARY) -> bool:
    if kind.field is None:
        return False
    try:
        value = parse_json(schema, source="judge schema")
    except ValueError:
        return False
    properties = value.get("properties") if isinstance(value, dict) else None
    field = properties.get(kind.field) if isinstance(properties, dict) else None
    return isinstance(field, dict) and field.get("type") == kind.field_schema()["type"]


def _defuse(text: str) -> str:
    """Break any delimiter inside an inserted field so it cannot end the response block."""
    for marker in (RESPONSE_START, RESPONSE_END):
        text = text.replace(marker, marker.replace("<<<", "<< <"))
    return text


@dataclass(frozen=True)
class JudgePrompt:
    """A judge's wording: `template` with its `slots` ({query}, {response} and {criterion}
    unless given), its `version` (in the cache key of every judge call: change it with the
    words), an optional `system` turn, its verdict `kind`, and the options below. `custom`
    marks a template read from a `--judge-prompt` file rather than a benchmark's own."""

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
    # boolean `criteria_met` (and may add fields): judge.parse reads that field. (Another
    # kind's field: the kind's JSON type.)
    schema: str | None = None
    # What the judge decides and how its reply is read (judge/kinds.py).
    kind: VerdictKind = BINARY
    # The named slots of the template, filled per call by `fill`.
    slots: tuple[str, ...] = RUBRIC_SLOTS
    # The slots that hold answers (the candidate's, a reference's): their text is defused and
    # what the judge quotes of it never counts as its verdict.
    answer_slots: tuple[str, ...] = ("response",)

    def __post_init__(self) -> None:
        # A benchmark author's mistake, caught where the prompt is made (at import of the
        # benchmark's module), not as a judge_error on every criterion of a run.
        if self.schema is not None and not _keeps_verdict_field(self.schema, self.kind):
            field = self.kind.field or "(none: this kind reads a pattern)"
            raise ValueError(
                f"judge prompt {self.version}: its verdict schema must be a JSON object schema "
                f"with a {self.kind.field_schema()['type']} {field!r} property (the field the "
                "verdict is read from)"
            )
        unknown = [s for s in self.answer_slots if s not in self.slots]
        if unknown or len(set(self.slots)) != len(self.slots):
            raise ValueError(f"judge prompt {self.version}: bad slots {self.slots}")

    @property
    def placeholders(self) -> tuple[str, ...]:
        return tuple("{" + slot + "}" for slot in self.slots)

    @property
    def asks_json(self) -> bool:
        """Whether its calls ask the server for JSON output (a pattern kind never does)."""
        return self.constrained and self.kind.field is not None

    @property
    def verdict_schema(self) -> str | None:
        """The json_schema level's schema as JSON text (None: the rubric's VERDICT_SCHEMA)."""
        return self.schema if self.schema is not None else self.kind.schema()

    @cached_property
    def _pieces(self) -> tuple[str, ...]:
        """The template split at its placeholders: text, placeholder, text, ... (once)."""
        pieces: list[str] = []
        pos = 0
        placeholders = self.placeholders
        while True:
            hits = [(self.template.find(p, pos), p) for p in placeholders]
            hits = [(at, p) for at, p in hits if at != -1]
            if not hits:
                pieces.append(self.template[pos:])
                return tuple(pieces)
            at, name = min(hits)
            pieces += [self.template[pos:at], name]
            pos = at + len(name)

    def messages(self, query: str, response: str, criterion: str) -> tuple[tuple[str, str], ...]:
        """A rubric prompt's messages (its three slots)."""
        return self.fill({"query": query, "response": response, "criterion": criterion})

    def fill(self, slots: dict[str, str]) -> tuple[tuple[str, str], ...]:
        """The messages with every slot of the template filled from `slots` (by name)."""
        # Substituted in one pass over the pre-split template, so text inserted for one
        # placeholder is never searched for another ({criterion} inside an answer stays text).
        clean = _defuse if self.defuse else str
        values = {"{" + name + "}": clean(slots[name]) for name in self.slots}
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
    with all of the default's placeholders, read as the default's kind. (A benchmark may name
    prompts of its own, e.g. ClinConsensus's `official`.)"""
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
    missing = [ph for ph in default.placeholders if ph not in text]
    if missing:
        raise InputError(f"judge prompt lacks placeholder(s) {', '.join(missing)}", path=p)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    rubric = default.slots == RUBRIC_SLOTS and default.answer_slots == ("response",)
    if default.kind.name == "binary" and rubric:  # the rubric path's, as it always was
        return JudgePrompt(text, f"custom-{digest}", None, custom=True)
    return JudgePrompt(
        text,
        f"custom-{digest}",
        None,
        custom=True,
        constrained=default.constrained,
        kind=default.kind,
        slots=default.slots,
        answer_slots=default.answer_slots,
    )
