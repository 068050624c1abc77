"""`--option KEY=VALUE`: every key is declared once, with a parser, a default and a help line.

A run refuses an unknown key or a value its parser rejects before anything is loaded or written,
with one line that names the option and lists the valid keys. Each layer declares its own
group (tasks their `ner.*` / `tcm.*` / `clinconsensus.*` keys, the model layer `llm.*` and
`llamacpp.*`); `clineval tasks --options` prints them all. An option may keep a flag of its own
(`Flag`: `--cases` is `clinconsensus.cases`), another spelling of the same setting, a rule
refusing a value that cannot apply to a run (`Option.unusable`, over `RunFacts`), and may be a
file of the task's outputs that stands in for the model (`Option.replaces_model`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from clineval.errors import InputError
from clineval.messages import did_you_mean

Parser = Callable[[str], Any]
_FLAG_NAME = re.compile(r"--[a-z][a-z0-9]*(-[a-z0-9]+)*")


@dataclass(frozen=True)
class Flag:
    """A command-line flag a benchmark keeps for one of its options (`--cases FILE` for
    `clinconsensus.cases`): another spelling of the same setting, never a second value of it.
    The CLI (`clineval run --help` lists them), a `--config` file, the Python API and the
    manifests written when the setting was a run field all spell it by its name without the
    dashes (`cases`, `dedupe`); clineval.options.flag_settings turns them into the option."""

    name: str  # "--cases"
    metavar: str = "VALUE"
    # A flag that takes no value ("--dedupe") sets the option to this; absent, it is not set.
    value: str | None = None

    def __post_init__(self) -> None:
        if not _FLAG_NAME.fullmatch(self.name):  # a declaration's mistake, found at import
            raise ValueError(f"flag {self.name!r} is not --name (lower case, digits, -)")

    @property
    def setting(self) -> str:
        """The flag as a key of a config file or the Python API: "--no-x" -> "no_x"."""
        return self.name.removeprefix("--").replace("-", "_")


@dataclass(frozen=True)
class RunFacts:
    """What a run is, as far as an option's `unusable` rule asks: its models (label -> what
    each is, as Option.models names it: backend, kind, backend:name), the candidate's, the
    run settings given (RunConfig field names, e.g. "judges") and the options given (full
    keys, e.g. "clinconsensus.verdicts")."""

    candidate: frozenset[str]
    models: Mapping[str, frozenset[str]]
    given: frozenset[str] = frozenset()
    options: frozenset[str] = frozenset()


# The reason a value cannot apply to a run (it would be ignored, or fail after work was done),
# or None when it can.
Unusable = Callable[[Any, RunFacts], "str | None"]


@dataclass(frozen=True)
class Option:
    """One `--option NAMESPACE.NAME=VALUE` key: its parser (a function of the text that raises
    ValueError with the reason), help and default as written, and what it touches: whether it
    changes the requests (resume refuses another value), whether `score` may change it, the
    models that read it, an optional flag of its own, and a rule for values the run cannot
    use."""

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
    # The models that read it, when not every model does: a backend ("llamacpp"), a kind
    # ("chat", "checkpoint", "span_tagger", "predictions") or a whole spec ("baseline:crf").
    # A run none of whose models (the candidate and the judges) matches refuses the key, as
    # an unknown one: it would be ignored silently. () = every model (the group's `models`).
    models: tuple[str, ...] = ()
    # A command-line flag of its own for the same setting (see Flag).
    flag: Flag | None = None
    # A rule over the typed value and the run (see RunFacts): a value that depends on what
    # the run is to matter (ner.tokenizer=model needs a checkpoint with its own tokenizer) is
    # refused before anything runs, with the reason this returns.
    unusable: Unusable | None = None
    # The value is a file of the task's outputs made elsewhere, which stands in for the model
    # (ClinConsensus's verdicts): a run given it needs no --model (the file is then the model
    # `predictions:FILE`, clineval.option_flags.model_from_options), the file must be readable
    # before anything is written, and the tasks reading it are not refused for the model's kind.
    replaces_model: bool = False


@dataclass(frozen=True)
class OptionGroup:
    """A namespace of options (`ner.*`, a benchmark's own), who reads them (for messages),
    their default `models`, and an optional rule across their values; `value(options,
    name)` reads one typed, given or default."""

    namespace: str  # "ner"
    applies_to: str  # who reads the group, for messages: "ner:* tasks"
    options: tuple[Option, ...]
    models: tuple[str, ...] = ()  # the default of its options' `models` (see Option)
    # A rule across its values ({name: typed value, given or default}) that no one value can
    # check, e.g. a product of two sizes; raises ValueError with the reason.
    joint: Callable[[Mapping[str, Any]], None] | None = None
    # The model backends' names, so that a selector naming one reads "llamacpp: models" rather
    # than "llamacpp models": handed over with the groups (clineval.benchmarks.registry's
    # option_groups), as this module lies below the models and keeps no list of them.
    backends: tuple[str, ...] = ()

    def check_joint(self, options: Mapping[str, str]) -> None:
        """InputError when the group's values together break its `joint` rule."""
        if self.joint is None:
            return
        try:
            self.joint({o.name: self.value(options, o.name) for o in self.options})
        except ValueError as exc:
            given = ", ".join(k for k in self.full_keys() if k in options)
            raise InputError(f"--option {given or self.namespace + '.*'}: {exc}") from None

    def models_of(self, option: Option) -> tuple[str, ...]:
        """The models that read `option` (() = every model)."""
        return option.models or self.models

    def models_text(self, option: Option) -> str:
        """`models_of` as a user reads it: "span tagger models", "llamacpp: models", ..."""
        shown = (_shown_model(selector, self.backends) for selector in self.models_of(option))
        return " or ".join(shown) or "every model"

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
# ASCII only: int() and float() also read "1_024", "+5", fullwidth and other scripts' digits
# (`５１２`), which no other tool reading the same command line or manifest would take.
_INTEGER = re.compile(r"[+-]?[0-9]+")
_NUMBER = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?")
# A C int: the ceiling of every count a native consumer (llama.cpp, torch, a JSON schema's
# maxLength turned into a grammar) keeps in 32 bits.
INT32_MAX = 2**31 - 1
# The most tokens any count of tokens may be (a context, a reply, a truncation): above every
# context length a model is trained for today, and 256 slots of it still fit no C int, which
# is why llama.cpp's own sizes are checked together (models/options.py).
MAX_TOKENS = 2**24


def integer(*, minimum: int, maximum: int) -> Parser:
    """An integer in [minimum, maximum], written in ASCII digits. Both bounds are required:
    every count reaches a consumer that has a ceiling (a C int, memory, a server's limit)."""
    digits = len(str(max(abs(minimum), abs(maximum))))

    def parse(text: str) -> int:
        stripped = text.strip()
        if not _INTEGER.fullmatch(stripped):
            raise ValueError("not an integer (ASCII digits only)")
        negative = stripped.startswith("-")
        if len(stripped.lstrip("+-").lstrip("0")) > digits:  # before int() reads 5,000 digits
            raise ValueError(f"must be >= {minimum}" if negative else f"must be <= {maximum}")
        value = int(stripped)
        if value < minimum:
            raise ValueError(f"must be >= {minimum}")
        if value > maximum:
            raise ValueError(f"must be <= {maximum}")
        return value

    return parse


def number(minimum: float, *, maximum: float, above_minimum: bool = False) -> Parser:
    """A finite float in [minimum, maximum] (or (minimum, maximum] with `above_minimum`),
    written in ASCII: nan and inf would silently disable a bound or a wait, and a wait of
    1e300 seconds overflows the event loop's clock."""

    def parse(text: str) -> float:
        stripped = text.strip()
        if stripped.lower().lstrip("+-") in ("nan", "inf", "infinity"):
            raise ValueError("must be a finite number")
        if not _NUMBER.fullmatch(stripped):
            raise ValueError("not a number (ASCII digits only)")
        value = float(stripped)  # digits past a float's range read as inf: too large
        if value <= minimum if above_minimum else value < minimum:
            raise ValueError(f"must be {'>' if above_minimum else '>='} {minimum:g}")
        if value > maximum:
            raise ValueError(f"must be <= {maximum:g}")
        return value

    return parse


def choice(*values: str) -> Parser:
    """A parser accepting exactly one of `values`."""

    def parse(text: str) -> str:
        if text not in values:
            raise ValueError(f"must be one of {', '.join(values)}")
        return text

    return parse


def text(nonempty: bool = True) -> Parser:
    """A parser keeping the text as given (refusing blank text unless `nonempty=False`)."""

    def parse(value: str) -> str:
        if nonempty and not value.strip():
            raise ValueError("must not be empty")
        return value

    return parse


def integer_list(*, minimum: int, maximum: int) -> Parser:
    """Comma-separated integers, e.g. `k=3,5`, each in [minimum, maximum]."""
    item = integer(minimum=minimum, maximum=maximum)

    def parse(value: str) -> tuple[int, ...]:
        parts = [p for p in (s.strip() for s in value.split(",")) if p]
        if not parts:
            raise ValueError("expected comma-separated integers")
        return tuple(item(p) for p in parts)

    return parse


def boolean(value: str) -> bool:
    """true/false, yes/no, on/off or 1/0, in any case."""
    lowered = value.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError("must be true or false (1/0)")


# ---- checking a run's options ---------------------------------------------------------------
def check_options(
    options: Mapping[str, str],
    groups: Iterable[OptionGroup],
    active: Iterable[str],
    facts: RunFacts | None = None,
) -> dict[str, Any]:
    """The parsed values of `options` (by full key), or InputError for the first bad one.

    `groups` are every declared group; `active` the namespaces the run's tasks and model read;
    `facts` what the run is (its models: see Option.models and Option.unusable), None to skip
    those rules. A key that this run would not read (of a group its tasks do not use, for a
    kind of model it does not have, or with a value its `unusable` rule refuses for this run)
    is refused too: it would be ignored silently, and a user who set it expected it to matter.
    """
    models = facts.models if facts is not None else None
    all_groups = list(groups)
    by_key = _by_key(all_groups)
    active_set = set(active)
    parsed = parse_items(options, all_groups)
    for key, raw in options.items():
        group, option = by_key[key]
        named = _named(key, option)
        if group.namespace not in active_set:
            raise InputError(f"{named} applies to {group.applies_to}, which this run does not use")
        wanted = group.models_of(option)
        if wanted and models is not None and not any(set(wanted) & m for m in models.values()):
            raise InputError(
                f"{named} applies only to {group.models_text(option)}, "
                f"and this run has none ({', '.join(models) or 'no model'}): it would be ignored"
            )
        if option.unusable is not None and facts is not None:
            reason = option.unusable(parsed[key], facts)
            if reason is not None:
                raise InputError(f"{_named(key, option, raw)}: {reason}")
    for group in all_groups:
        if any(key in options for key in group.full_keys()):
            group.check_joint(options)
    return parsed


def _by_key(groups: list[OptionGroup]) -> dict[str, tuple[OptionGroup, Option]]:
    return {group.key(option): (group, option) for group in groups for option in group.options}


def parse_items(
    options: Mapping[str, str], groups: Iterable[OptionGroup], given_as: str = "--option"
) -> dict[str, Any]:
    """The parsed values of `options` by key, or InputError for the first unknown key or bad
    value: the checks that need no run (`check_options` makes the rest). `given_as` is how
    the message names where a key was given (a --config file's `option` table: "option")."""
    all_groups = list(groups)
    by_key = _by_key(all_groups)
    parsed: dict[str, Any] = {}
    for key, raw in options.items():
        if key not in by_key:
            raise InputError(
                f"{given_as} {_clip(key)!r} is not a known option{did_you_mean(key, by_key)}; "
                f"{_valid(all_groups, key)}"
            )
        try:
            parsed[key] = by_key[key][1].parse(raw)
        except ValueError as exc:
            raise InputError(f"{given_as} {key}={_clip(raw)!r}: {exc}") from None
    return parsed


# Where each option key of the run being checked was given, when not on the command line:
# {KEY: a --config file's path}. The CLI sets it (`given_in`) around its check of the run.
_GIVEN_IN: ContextVar[Mapping[str, str] | None] = ContextVar("option_keys_given_in", default=None)


@contextmanager
def given_in(files: Mapping[str, str]) -> Iterator[None]:
    """Within it, a message about an option key of `files` names that file and its `option`
    key, not a --option the user never typed."""
    token = _GIVEN_IN.set(files)
    try:
        yield
    finally:
        _GIVEN_IN.reset(token)


def _named(key: str, option: Option, raw: str | None = None) -> str:
    """How a message names an option a run gives: `--option KEY` (`=VALUE`), and its flag
    when it has one, since the user may have given it by either spelling; or the --config
    file and its `option` key, where it came from there."""
    value = "" if raw is None else f"={_clip(raw)}"
    file = (_GIVEN_IN.get() or {}).get(key)
    if file is not None:
        return f"{file}: option {key}{value}"
    text = f"--option {key}{value}"
    return text if option.flag is None else f"{option.flag.name} ({text})"


def _shown_model(selector: str, backends: tuple[str, ...]) -> str:
    """A `models` selector as a user reads it: "llamacpp" -> "llamacpp: models",
    "span_tagger" -> "span tagger models", "baseline:crf" as it is."""
    if ":" in selector:
        return selector
    return f"{selector}: models" if selector in backends else f"{selector.replace('_', ' ')} models"


def _valid(groups: list[OptionGroup], key: str) -> str:
    """The keys of `key`'s namespace, else the namespaces (all keys outgrow an error line)."""
    namespace = key.partition(".")[0]
    keys = [k for g in groups if g.namespace == namespace for k in g.full_keys()]
    if keys:
        return f"valid keys of {namespace}.*: " + ", ".join(keys)
    spaces = ", ".join(dict.fromkeys(f"{g.namespace}.*" for g in groups))
    return f"valid keys: {spaces} (clineval tasks --options lists each)"


def _clip(value: str, limit: int = 80) -> str:
    return value if len(value) <= limit else value[:limit] + "..."


def split_option_items(items: Iterable[str], given_as: str = "--option") -> dict[str, str]:
    """`KEY=VALUE` items of the command line -> {KEY: VALUE}; InputError for anything else
    (naming them as `given_as`: see `parse_items`)."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InputError(f"{given_as} {_clip(item)!r} is not KEY=VALUE")
        if key.strip() in out:  # last-wins would drop one of two values the user gave
            raise InputError(f"{given_as} {_clip(key.strip())} is given twice; give it once")
        out[key.strip()] = value
    return out


# ---- flags a benchmark keeps for its options --------------------------------------------------
def flagged(groups: Iterable[OptionGroup]) -> dict[str, tuple[OptionGroup, Option, Flag]]:
    """The options that have a flag of their own, by the flag's setting name ("cases")."""
    out: dict[str, tuple[OptionGroup, Option, Flag]] = {}
    for group in groups:
        for option in group.options:
            if option.flag is not None:
                out.setdefault(option.flag.setting, (group, option, option.flag))
    return out


def flag_settings(
    options: Mapping[str, str], given: Mapping[str, Any], groups: Iterable[OptionGroup]
) -> dict[str, str]:
    """`options` with the declared flags' values in `given` ({setting name: value}: a string,
    a path, or True / False for a flag without a value) turned into their options. A flag and
    `--option` of the same key together are refused: one setting, one value. A value the
    option's parser refuses is an InputError naming the flag; False (or None) is a flag not
    given."""
    by_setting = flagged(groups)
    out = dict(options)
    for setting, value in given.items():
        group, option, flag = by_setting[setting]
        if value is None or value is False:
            continue
        if flag.value is not None:
            if value is not True:
                raise InputError(f"{flag.name} takes no value; {_clip(str(value))!r} is not one")
            text = flag.value
        elif isinstance(value, str | os.PathLike):
            text = os.fspath(value)
        else:
            raise InputError(f"{flag.name}: {_clip(str(value))!r} is not a string")
        key = group.key(option)
        if key in out:
            raise InputError(
                f"{flag.name} and --option {key} are one setting; give it once ({flag.name})"
            )
        try:
            option.parse(text)
        except ValueError as exc:
            raise InputError(f"{flag.name} {_clip(text)!r}: {exc}") from None
        out[key] = text
    return out
