"""Errors a user can act on. The CLI turns InputError into a one-line message and exit code 2;
BatchFilesWritten stops a run where its batch files are the result (exit 0). How a message
quotes a value and how long it may be is messages.py's.
"""

from __future__ import annotations

from pathlib import Path

from clineval.messages import bounded


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
