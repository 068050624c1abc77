"""Errors a user can act on. The CLI turns InputError into a one-line message and exit code 2.

However a caller builds the message, an error line stays printable and short: an input value
quoted whole (a 5 MB id, a reply pasted into a message) must not become a 5 MB error line.
`clip` is how a message quotes a value; InputError bounds whatever it is given anyway.
"""

from __future__ import annotations

import difflib
import re
import reprlib
from collections.abc import Iterable
from pathlib import Path

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


class InputError(Exception):
    """Bad input from the user: a malformed file, a missing file, a wrong checksum, a bad spec.

    The message names the file and, where there is one, the line (1-based), so the CLI can print
    ``path:line: message`` and nothing else. The message is bounded when the error is made
    (see `bounded`), so `message` is safe to embed in another error or a manifest.
    """

    def __init__(self, message: str, path: str | Path | None = None, line: int | None = None):
        self.message = bounded(message)
        self.path = str(path) if path is not None else None
        self.line = line
        super().__init__(self.one_line())

    def one_line(self) -> str:
        where = ""
        if self.path is not None:
            where = self.path if self.line is None else f"{self.path}:{self.line}"
            where = bounded(where, clip_runs=False) + ": "
        return where + self.message


class BatchFilesWritten(Exception):
    """`--batch-file-out`: a round's batch request files are written and the run stops there
    (exit 0: the files are what was asked for; clineval.models.batch). The message is the
    one-line hint for running them."""

    def __init__(self, paths: list[Path], lines: int) -> None:
        self.paths = paths
        self.lines = lines
        first = paths[0]
        super().__init__(
            f"wrote {lines} batch request line(s) to {len(paths)} file(s) in {first.parent}; "
            f"run e.g. 'vllm run-batch -i {first} -o {first.with_suffix('.out.jsonl')} "
            "--model MODEL' for each, then rerun this command with --batch-file-in OUT..."
        )
