"""What run and score share: --json on stdout, and the results of a run that failed a bound."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from clineval.cli_output import print_results
from clineval.errors import InputError
from clineval.jsonio import json_document as json_text
from clineval.secrets import redact


@contextlib.contextmanager
def _json_stdout(enabled: bool) -> Iterator[Callable[[Any], None] | None]:
    """With --json, stdout carries one JSON document and nothing else: whatever the command
    prints meanwhile (tables, notes) goes to stderr. Yields the writer of that document."""
    if not enabled:
        yield None
        return
    out = sys.stdout

    def emit(payload: Any) -> None:
        out.write(json_text(payload))
        out.flush()

    with contextlib.redirect_stdout(sys.stderr):
        yield emit


@contextlib.contextmanager
def _results_shown_on_failure(run_dir: Path, command: str) -> Iterator[None]:
    """A task failed a bound after its results were written (exit 1): the end of the run is
    printed as on success, then the error line says what failed."""
    from clineval.run_record import read_run_files
    from clineval.runner import TaskFailures

    try:
        yield
    except TaskFailures:
        with contextlib.suppress(InputError, OSError):
            results = read_run_files(run_dir, with_samples=False).results
            print_results(results, run_dir, command=command)
        raise


def _results_payload(run_dir: Path, results: dict[str, Any], error: str | None) -> dict[str, Any]:
    """The --json document of run and score: the run directory, its status and its results."""
    return {
        "run_dir": str(run_dir),
        "status": "done" if error is None else "failed",
        "error": error,
        "results": results,
    }


@contextlib.contextmanager
def _on_failure(emit: Callable[[Any], None] | None, run_dir: Path, command: str) -> Iterator[None]:
    """A run or score whose results were written but that failed a bound (exit 1) still shows
    those results: under --json as the document on stdout, with status "failed" and the
    reason; else as the end of a run is shown."""
    if emit is None:
        with _results_shown_on_failure(run_dir, command):
            yield
        return
    from clineval.runner import TaskFailures

    try:
        yield
    except TaskFailures as exc:
        from clineval.run_record import read_manifest, read_results

        results = read_results(run_dir, read_manifest(run_dir))
        emit(_results_payload(run_dir, results, redact(str(exc))))
        raise
