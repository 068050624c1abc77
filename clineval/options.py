"""`--option KEY=VALUE`: every key is declared once, with a parser, a default and a help line.

A run refuses an unknown key or a value its parser rejects before anything is loaded or written,
with one line that names the option and lists the valid keys. Each layer declares its own
group (tasks their `ner.*` / `tcm.*` / `clinconsensus.*` keys, the model layer `llm.*` and
`llamacpp.*`); `clineval tasks --options` prints them all.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from clineval.errors import InputError

Parser = Callable[[str], Any]


@dataclass(frozen=True)
class Option:
    name: str  # without the group's namespace: "tokenizer" of "ner.tokenizer"
    parse: Parser  # raises ValueError with a short reason for a bad value
    help: str
    default: str | None = None  # as the user would write it; None = unset / automatic
    # Changes what a model is asked: a resume with another value would mix the answers to two
    # different requests in one run directory, so the runner refuses it.
    changes_requests: bool = False
    # Read only when scoring (an aggregation rule, extra k values, bootstrap resamples):
    # `clineval score DIR --option KEY=VALUE` may change it without a model.
    scoring_only: bool = False


@dataclass(frozen=True)
class OptionGroup:
    namespace: str  # "ner"
    applies_to: str  # who reads the group, for messages: "ner:* tasks"
    options: tuple[Option, ...]

    def key(self, option: Option) -> str:
        return f"{self.namespace}.{option.name}"

    def full_keys(self) -> list[str]:
        return [self.key(o) for o in self.options]

    def scoring_keys(self) -> list[str]:
        """The full keys of the options that only scoring reads."""
        return [self.key(o) for o in self.options if o.scoring_only]

    def request_keys(self) -> list[str]:
        """The full keys of the options that change what a model is asked."""
        return [self.key(o) for o in self.options if o.changes_requests]

    def value(self, options: Mapping[str, str], name: str) -> Any:
        """The typed value of option `name` in a run's raw `options` (its parsed default when
        unset; None when it has no default). The run checked every value up front; a bad one
        here (a caller that skipped the check) is still a one-line InputError."""
        option = next((o for o in self.options if o.name == name), None)
        if option is None:
            raise KeyError(f"{self.namespace}.{name} is not declared")
        raw = options.get(self.key(option), option.default)
        if raw is None:
            return None
        try:
            return option.parse(raw)
        except ValueError as exc:
            raise InputError(f"--option {self.key(option)}={_clip(raw)!r}: {exc}") from None


# ---- parsers: each turns the text of a value into a value or raises ValueError ---------------
def integer(minimum: int | None = None, maximum: int | None = None) -> Parser:
    def parse(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            raise ValueError("not an integer") from None
        if minimum is not None and value < minimum:
            raise ValueError(f"must be >= {minimum}")
        if maximum is not None and value > maximum:
            raise ValueError(f"must be <= {maximum}")
        return value

    return parse


def number(minimum: float | None = None, *, above_minimum: bool = False) -> Parser:
    """A finite float (nan and inf would silently disable a bound or a wait)."""

    def parse(text: str) -> float:
        try:
            value = float(text.strip())
        except ValueError:
            raise ValueError("not a number") from None
        if not math.isfinite(value):
            raise ValueError("must be a finite number")
        if minimum is not None and (value <= minimum if above_minimum else value < minimum):
            raise ValueError(f"must be {'>' if above_minimum else '>='} {minimum:g}")
        return value

    return parse


def choice(*values: str) -> Parser:
    def parse(text: str) -> str:
        if text not in values:
            raise ValueError(f"must be one of {', '.join(values)}")
        return text

    return parse


def text(nonempty: bool = True) -> Parser:
    def parse(value: str) -> str:
        if nonempty and not value.strip():
            raise ValueError("must not be empty")
        return value

    return parse


def integer_list(minimum: int = 1) -> Parser:
    """Comma-separated integers, e.g. `k=3,5`."""
    item = integer(minimum)

    def parse(value: str) -> tuple[int, ...]:
        parts = [p for p in (s.strip() for s in value.split(",")) if p]
        if not parts:
            raise ValueError("expected comma-separated integers")
        return tuple(item(p) for p in parts)

    return parse


def boolean(value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError("must be true or false (1/0)")


# ---- checking a run's options ---------------------------------------------------------------
def check_options(
    options: Mapping[str, str], groups: Iterable[OptionGroup], active: Iterable[str]
) -> dict[str, Any]:
    """The parsed values of `options` (by full key), or InputError for the first bad one.

    `groups` are every declared group; `active` the namespaces the run's tasks and model read.
    A key of a known group that this run would not read is refused too: it would be ignored
    silently, and a user who set it expected it to matter.
    """
    by_key: dict[str, tuple[OptionGroup, Option]] = {}
    all_groups = list(groups)
    for group in all_groups:
        for option in group.options:
            by_key[group.key(option)] = (group, option)
    active_set = set(active)
    parsed: dict[str, Any] = {}
    for key, raw in options.items():
        if key not in by_key:
            raise InputError(f"--option {_clip(key)!r} is not a known option; {_valid(all_groups)}")
        group, option = by_key[key]
        if group.namespace not in active_set:
            raise InputError(
                f"--option {key} applies to {group.applies_to}, which this run does not use"
            )
        try:
            parsed[key] = option.parse(raw)
        except ValueError as exc:
            raise InputError(f"--option {key}={_clip(raw)!r}: {exc}") from None
    return parsed


def _valid(groups: list[OptionGroup]) -> str:
    return "valid keys: " + ", ".join(k for g in groups for k in g.full_keys())


def _clip(value: str, limit: int = 80) -> str:
    return value if len(value) <= limit else value[:limit] + "..."


def split_option_items(items: Iterable[str]) -> dict[str, str]:
    """`KEY=VALUE` items of the command line -> {KEY: VALUE}; InputError for anything else."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InputError(f"--option {_clip(item)!r} is not KEY=VALUE")
        out[key.strip()] = value
    return out
