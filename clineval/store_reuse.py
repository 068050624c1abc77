"""`clineval run --reuse DIR`: the stored model calls of earlier run directories, read only.

A call is found by the run store's own key (clineval.store_json: the hash of model label,
messages and every setting that decides the answer), so a reused answer is exactly the one
the same request got before. The directories are never written: not the store, not its lock,
not a `-wal` / `-shm` file beside it, and they may sit on a read-only disk:

- a store with no `-wal` file beside it was closed by its last writer, and nothing writes it
  now: it is opened `immutable` (SQLite then creates no file and takes no lock, which is
  what a read-only directory needs);
- a store with a `-wal` file (a run still writing it, or one that was killed) is opened
  `mode=ro`, which reads the WAL's committed calls beside a live writer.

The check is made once, when the run opens the directory: a run that starts writing into a
directory that another run is reusing (opened immutable) could change pages under the
reader, which SQLite would report as damage (one `error:` line naming the flag); so resume a
run only when no other run reuses it, which the docs say.

The run copies every call it reuses into its own store (with a `reused_from` mark in the
call's usage), so it is whole without the directories it reused from: it resumes, re-scores
and reports on its own, and its manifest counts what came from where.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import urllib.parse
from pathlib import Path
from typing import Any

from clineval.errors import InputError
from clineval.store_json import loads_fast

STORE_NAME = "store.sqlite"  # clineval.store.STORE_FILENAME (that module imports this one)
FLAG = "--reuse"
# The mark a reused call's usage carries in the run that reused it: the source directory.
REUSED_FROM = "reused_from"


def _uri(path: Path, *, immutable: bool) -> str:
    query = "mode=ro&immutable=1" if immutable else "mode=ro"
    return f"file:{urllib.parse.quote(str(path))}?{query}"


def _refuse(directory: str, why: str) -> InputError:
    return InputError(f"{FLAG} {directory}: {why}")


class ReusedSource:
    """One earlier run directory's store, opened read-only."""

    def __init__(self, directory: str):
        self.shown = directory  # as the user wrote it (error lines)
        self.path = Path(os.path.abspath(directory))  # as the manifest names it
        store = self.path / STORE_NAME
        if not os.path.isdir(self.path):
            why = "not a directory" if os.path.exists(self.path) else "no such run directory"
            raise _refuse(directory, why)
        if not os.path.isfile(store):
            raise _refuse(directory, f"not a run directory (no {STORE_NAME}): nothing to reuse")
        live = os.path.exists(f"{store}-wal")
        self._lock = threading.Lock()  # one connection, shared by the run's threads
        try:
            self._conn = sqlite3.connect(
                _uri(store, immutable=not live), uri=True, check_same_thread=False
            )
            try:
                self._conn.execute("SELECT key, response, usage FROM calls LIMIT 1").fetchall()
            except BaseException:
                self._conn.close()
                raise
        except sqlite3.DatabaseError as exc:
            raise _refuse(directory, f"cannot read its run store: {exc}") from None

    def get(self, key: str) -> dict[str, Any] | None:
        """{"response": ..., "usage": ...} of the stored call `key`, or None."""
        try:
            with self._lock:
                row = self._conn.execute(
                    "SELECT response, usage FROM calls WHERE key = ?", (key,)
                ).fetchone()
        except sqlite3.DatabaseError as exc:
            raise _refuse(self.shown, f"cannot read its run store: {exc}") from None
        if row is None:
            return None
        return {"response": loads_fast(row[0]), "usage": loads_fast(row[1]) if row[1] else None}

    def close(self) -> None:
        with self._lock:
            self._conn.close()


class ReusedCalls:
    """The stores of every --reuse directory, searched in the order they were named."""

    def __init__(self, directories: list[str], own_dir: Path | None = None):
        self.sources: list[ReusedSource] = []
        try:
            for directory in directories:
                source = ReusedSource(directory)
                self.sources.append(source)
                # by the real path: a symlink to the output directory is the same directory
                if own_dir is not None and os.path.realpath(source.path) == os.path.realpath(
                    own_dir
                ):
                    raise _refuse(
                        directory,
                        "is this run's own --output-dir (its stored calls are reused already)",
                    )
        except BaseException:
            self.close()
            raise

    def find(self, key: str) -> tuple[str, dict[str, Any]] | None:
        """(source directory, stored call) of the first source that answered `key`."""
        for source in self.sources:
            stored = source.get(key)
            if stored is not None:
                return str(source.path), stored
        return None

    def close(self) -> None:
        for source in self.sources:
            source.close()
        self.sources = []

    def __enter__(self) -> ReusedCalls:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def reused_summary(calls: list[tuple[str, Any]]) -> list[dict[str, Any]]:
    """From (model, usage) of a store's calls: per source directory, the calls reused from it
    (in all and per model), in the order the sources first appear."""
    out: dict[str, dict[str, Any]] = {}
    for model, usage in calls:
        source = usage.get(REUSED_FROM) if isinstance(usage, dict) else None
        if not isinstance(source, str):
            continue
        row = out.setdefault(source, {"path": source, "calls": 0, "by_model": {}})
        row["calls"] += 1
        row["by_model"][model] = row["by_model"].get(model, 0) + 1
    return list(out.values())
