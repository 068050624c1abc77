"""Where JSON text enters clineval: input files, run-directory files, model replies, and the
JSON a model writes inside its reply. See docs/input-boundary.md for the decisions.

1. Text that is not valid Unicode. JSON can spell a lone UTF-16 surrogate ("\\ud800"): valid
   JSON, but no UTF-8 text can hold it, so it would fail much later (storing a reply, hashing a
   prompt, printing an id). Every value decoded here has each lone surrogate replaced by U+FFFD
   at once, and each replacement is counted (`count_replacements`: the run's manifest notes it
   under "invalid_unicode_replaced", per file or "model replies").
2. JSON the parser cannot take: nesting deeper than the interpreter's recursion limit
   (RecursionError) and integers longer than its digit limit (ValueError). For a file they are
   an InputError naming the file and line, like any invalid JSON; for a reply, JsonProblem,
   which the HTTP layer turns into a retryable bad_response.

File readers call `read_json_file` (a whole file) or `loads_input` (text they read themselves,
e.g. one JSON Lines line); reply handling calls `parse_json`, `decode_prefix` and
`replace_invalid_unicode`.
"""

from __future__ import annotations

import json
import math
import re
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from clineval.errors import InputError

REPLIES = "model replies"  # the tally's name for text that came from a model
TALLY_KEY = "invalid_unicode_replaced"  # the manifest key of the tally

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")
# JSON tokens that matter when locating a problem: strings (skipped whole, so brackets and
# digits inside them do not count), brackets, and numbers.
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?')

_DECODER = json.JSONDecoder()


class JsonProblem(ValueError):
    """Text that does not decode as JSON: `reason` says why, `lineno` (1-based, within the
    text) where, when known."""

    def __init__(self, reason: str, lineno: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.lineno = lineno


# ---- counting replacements ------------------------------------------------------------------

_tally: ContextVar[dict[str, Any] | None] = ContextVar("clineval_unicode_tally", default=None)
_tally_lock = threading.Lock()


@contextmanager
def count_replacements(record: dict[str, Any]) -> Iterator[None]:
    """While active (in this context and the event loops it starts), every replaced lone
    surrogate is counted in record[TALLY_KEY][source]; the key is absent while there are none.
    The count is of this command only: a count already in `record` is dropped first."""
    record.pop(TALLY_KEY, None)
    token = _tally.set(record)
    try:
        yield
    finally:
        _tally.reset(token)


def _count(source: str, n: int) -> None:
    record = _tally.get()
    if record is None or n == 0:
        return
    with _tally_lock:  # replies are counted on the event loop, files on the main thread
        counts = record.setdefault(TALLY_KEY, {})
        counts[source] = counts.get(source, 0) + n


# ---- replacing lone surrogates --------------------------------------------------------------


def _fix(text: str) -> tuple[str, int]:
    return _LONE_SURROGATE.subn("\ufffd", text)


def _replace_in(value: Any) -> tuple[Any, int]:
    """`value` (decoded JSON) with every lone surrogate in its strings and keys replaced, and
    how many were. Containers are fixed in place; iterative, so depth costs no stack."""
    if isinstance(value, str):
        return _fix(value)
    total = 0
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            for i, item in enumerate(node):
                if isinstance(item, str):
                    node[i], n = _fix(item)
                    total += n
                elif isinstance(item, list | dict):
                    stack.append(item)
        elif isinstance(node, dict):
            if any(_LONE_SURROGATE.search(key) for key in node):
                items = list(node.items())
                node.clear()
                for key, item in items:  # keys equal once fixed: the last wins, as in JSON
                    fixed, n = _fix(key)
                    total += n
                    node[fixed] = item
            for key, item in node.items():
                if isinstance(item, str):
                    node[key], n = _fix(item)
                    total += n
                elif isinstance(item, list | dict):
                    stack.append(item)
    return value, total


def replace_invalid_unicode(value: Any, source: str = REPLIES) -> Any:
    """Decoded JSON from `source` with its lone surrogates replaced by U+FFFD (counted)."""
    value, n = _replace_in(value)
    _count(source, n)
    return value


# ---- decoding -------------------------------------------------------------------------------


def _line_at(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def deepest_nesting(text: str) -> tuple[int, int | None]:
    """(deepest nesting, line where it is first reached) of JSON text (of TOML's arrays and
    inline tables too: their brackets and double-quoted strings read the same)."""
    depth = best = 0
    where: int | None = None
    for match in _TOKEN.finditer(text):
        char = match.group()[0]
        if char in "[{":
            depth += 1
            if depth > best:
                best, where = depth, match.start()
        elif char in "]}":
            depth -= 1
    return best, None if where is None else _line_at(text, where)


def _longest_int_line(text: str, limit: int) -> int | None:
    """The line of the first integer of JSON text with more than `limit` digits."""
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token[0] in "-0123456789" and token.lstrip("-").isdigit() and len(token) > limit:
            return _line_at(text, match.start())
    return None


def _problem(exc: BaseException, text: str | bytes) -> JsonProblem:
    """What went wrong decoding `text`, for a message (located in the text where possible)."""
    if isinstance(exc, json.JSONDecodeError):
        # Text cut short is "expecting a value" after its last newline: point at its last line.
        last = exc.doc.rstrip().count("\n") + 1
        return JsonProblem(exc.msg, min(exc.lineno, last))
    if isinstance(exc, UnicodeDecodeError):
        return JsonProblem(f"not UTF-8 text ({exc.reason})")
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if isinstance(exc, RecursionError):
        depth, line = deepest_nesting(text)
        return JsonProblem(f"nested too deeply ({depth:,} levels)", line)
    limit = sys.get_int_max_str_digits()
    line = _longest_int_line(text, limit)
    return JsonProblem(f"an integer with more than {limit:,} digits", line)


def _may_hold_surrogates(text: str) -> bool:
    """Whether a value decoded from `text` can hold a lone surrogate: from a \\u escape of one,
    or one already in the text (bytes decoded as the json module does, with "surrogatepass").
    Text with neither needs no walk over its value. Tested in steps that run in C (a substring
    test, an ASCII test, a UTF-8 encode) because one regex with both alternatives stepped
    through every character and cost as much as decoding the JSON (BENCHMARKS.md)."""
    if "\\u" in text and _SURROGATE_ESCAPE.search(text):
        return True
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # only a surrogate cannot be encoded
        return True
    return False


def parse_json(text: str | bytes, source: str = REPLIES) -> Any:
    """The JSON value of `text` (the json module's reading: NaN and Infinity accepted), lone
    surrogates replaced and counted for `source`; JsonProblem when it does not decode."""
    try:
        if isinstance(text, bytes):  # decoded as json.loads would (UTF-8/16/32, surrogatepass)
            text = text.decode(json.detect_encoding(text), "surrogatepass")
        value = json.loads(text)
    except (RecursionError, ValueError) as exc:  # JSONDecodeError and UnicodeDecodeError too
        raise _problem(exc, text) from None
    if _may_hold_surrogates(text):
        value = replace_invalid_unicode(value, source)
    return value


def decode_prefix(text: str, pos: int) -> tuple[Any, int] | None:
    """(value, end) of the JSON value that starts at text[pos] (json.JSONDecoder.raw_decode),
    lone surrogates replaced; None when none decodes there. For JSON inside a model's reply."""
    try:
        value, end = _DECODER.raw_decode(text, pos)
    except (RecursionError, ValueError):
        return None
    if _may_hold_surrogates(text[pos:end]):
        value = replace_invalid_unicode(value, REPLIES)
    return value, end


def loads_input(text: str, path: str | Path, line: int | None = None) -> Any:
    """The JSON value of `text` read from `path` (starting at `line`, 1-based, if it is part
    of the file); InputError naming the file and the line when it does not decode."""
    try:
        return parse_json(text, str(path))
    except JsonProblem as exc:
        where = line
        if exc.lineno is not None:
            where = exc.lineno if line is None else line + exc.lineno - 1
        raise InputError(f"invalid JSON: {exc.reason}", path=path, line=where) from None


def read_text_file(path: str | Path, what: str = "file") -> str:
    """The UTF-8 text of a file (a byte-order mark dropped); InputError for a missing file, a
    directory, an unreadable file or bytes that are not UTF-8 (with the line they are on)."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{what} not found", path=path) from None
    except IsADirectoryError:
        raise InputError(f"expected a {what}, got a directory", path=path) from None
    except OSError as exc:
        raise InputError(f"cannot read {what}: {exc.strerror or exc}", path=path) from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(f"not UTF-8 text ({exc.reason})", path=path, line=line) from None


def read_json_file(path: str | Path, what: str = "file") -> Any:
    """The JSON value of a whole file (see `read_text_file` and `loads_input`)."""
    return loads_input(read_text_file(path, what), path)


def _plain_json(value: Any) -> Any:
    """`value` as strict JSON values: a non-finite float (a metric of an empty split) is null,
    as jq and JavaScript parsers refuse NaN; a tuple is a list; anything else its str."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(key): _plain_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain_json(item) for item in value]
    if value is None or isinstance(value, str | int | bool):
        return value
    if hasattr(value, "item"):  # a numpy scalar
        return _plain_json(value.item())
    return str(value)


def json_document(payload: Any) -> str:
    """`payload` as one strict JSON document and a newline: what a --json command prints."""
    return json.dumps(_plain_json(payload), ensure_ascii=False, indent=2, allow_nan=False) + "\n"
