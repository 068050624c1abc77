"""The text of error messages: how a message quotes a value (`clip`), how long and how
printable any message may be (`bounded`), the hint after a misspelt name (`did_you_mean`),
and the one wording of the empty-path rule.

Below errors.py (InputError bounds its message here) and below every layer that quotes an
input value, so that errors.py holds the error types alone.

However a caller builds the message, an error line stays printable and short: an input value
quoted whole (a 5 MB id, a reply pasted into a message) must not become a 5 MB error line.
`clip` is how a message quotes a value; InputError bounds whatever it is given anyway.
"""

from __future__ import annotations

import difflib
import re
import reprlib
from collections.abc import Iterable

# How much of one quoted value an error message shows.
QUOTE_LIMIT = 200
# The longest unbroken run of characters a message keeps: longer runs are the pasted value of
# an input, not prose. Lists of choices ("valid keys: a, b, c") are broken by spaces and stay.
_RUN_LIMIT = QUOTE_LIMIT
# The most a message keeps at all (a list of 30 valid option keys is ~550 characters).
MESSAGE_LIMIT = 1000

_QUOTER = reprlib.Repr()
_QUOTER.maxstring = QUOTE_LIMIT
_QUOTER.maxother = QUOTE_LIMIT
_QUOTER.maxlong = 60

_LONG_RUN = re.compile(rf"\S{{{_RUN_LIMIT + 1},}}")
# Code points that cannot be written as UTF-8 (lone surrogates): printing them would fail.
_SURROGATE = re.compile("[\ud800-\udfff]")


# Every path a user gives is refused when empty: "" (and Path("")) is the working directory, and
# `run -o ""` once wrote a whole run into it. One rule for every flag and API parameter.
EMPTY_PATH = "must not be empty (an empty path is the working directory; write . to mean it)"


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """The hint every lookup of a name (a task, an option key, a setting, a format) adds to
    its error: " (did you mean 'x'?)" for the closest choice, or "" when none is close. One
    helper, so every misspelt name is answered alike. The cutoff is above difflib's 0.6: keys
    share their namespace ("ner."), which alone would make any key of it "close"."""
    near = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.75)
    return f" (did you mean {near[0]!r}?)" if near else ""


def is_empty_path(value: object) -> bool:
    """Whether `value` is a path given as an empty or whitespace-only string."""
    return isinstance(value, str) and not value.strip()


def clip(value: object) -> str:
    """`repr(value)` for an error message, showing at most about QUOTE_LIMIT characters of it
    (and how long a clipped string was)."""
    if isinstance(value, str) and len(value) > QUOTE_LIMIT:
        return f"{_QUOTER.repr(value)} ({len(value):,} characters)"
    return _QUOTER.repr(value)


def _clip_run(match: re.Match[str]) -> str:
    run = match.group()
    return f"{run[:_RUN_LIMIT]}...({len(run) - _RUN_LIMIT:,} more characters)"


def bounded(text: str, *, clip_runs: bool = True) -> str:
    """`text` on one line, printable, with overlong runs (unless `clip_runs` is false: a file
    path is one long run the user needs whole) and an overlong whole clipped."""
    text = _SURROGATE.sub("\ufffd", text.replace("\r", " ").replace("\n", " "))
    if clip_runs and len(text) > _RUN_LIMIT:
        text = _LONG_RUN.sub(_clip_run, text)
    if len(text) > MESSAGE_LIMIT:
        text = f"{text[:MESSAGE_LIMIT]}...({len(text) - MESSAGE_LIMIT:,} more characters)"
    return text
