"""Errors a user can act on. The CLI turns InputError into a one-line message and exit code 2."""

from __future__ import annotations

from pathlib import Path


class InputError(Exception):
    """Bad input from the user: a malformed file, a missing file, a wrong checksum, a bad spec.

    The message names the file and, where there is one, the line (1-based), so the CLI can print
    ``path:line: message`` and nothing else.
    """

    def __init__(self, message: str, path: str | Path | None = None, line: int | None = None):
        self.message = message
        self.path = str(path) if path is not None else None
        self.line = line
        super().__init__(self.one_line())

    def one_line(self) -> str:
        where = ""
        if self.path is not None:
            where = self.path if self.line is None else f"{self.path}:{self.line}"
            where += ": "
        return (where + self.message).replace("\n", " ")


class JudgeErrorRateExceeded(Exception):
    """The share of criteria without a verdict is above the user's bound (exit code 1)."""
