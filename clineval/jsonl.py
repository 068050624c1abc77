"""Reading JSON Lines input files (datasets, predictions, verdicts) with errors a user can act on.

Every reader of a user-supplied JSONL file goes through `iter_json_objects`, so a bad file gives
the same one-line error everywhere: the file, the line, and what is wrong with it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from clineval.errors import InputError
from clineval.jsonio import loads_input


def iter_json_objects(path: str | Path, what: str = "file") -> Iterator[tuple[int, dict[str, Any]]]:
    """(1-based line number, object) of every non-blank line, in file order.

    A missing file, a directory, text that is not UTF-8, invalid JSON or a line that is not a
    JSON object raises InputError naming the file (and the line). A UTF-8 byte-order mark is
    accepted: spreadsheet tools write one.
    """
    path = Path(path)
    if path.is_dir():
        raise InputError(f"expected a JSON Lines {what}, got a directory", path=path)
    try:
        handle = open(path, "rb")  # noqa: SIM115 (closed by the with below)
    except FileNotFoundError:
        raise InputError(f"{what} not found", path=path) from None
    except OSError as exc:
        raise InputError(f"cannot read {what}: {exc.strerror}", path=path) from None
    with handle:
        # Decoded line by line (not by a buffered text reader) so that a bad byte is reported
        # on its own line.
        for lineno, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(f"not UTF-8 text ({exc.reason})", path=path, line=lineno) from None
            if not line.strip():
                continue
            row = loads_input(line, path, lineno)
            if not isinstance(row, dict):
                raise InputError("expected a JSON object", path=path, line=lineno)
            yield lineno, row
