"""The run store: one SQLite file (WAL) per run directory.

It holds every model call (keyed by a hash of everything that determines the answer), every
per-sample output of a task, and binary artifacts such as a trained baseline. Each write is
committed at once, so a run killed at any point keeps everything it finished; resume, re-scoring
and caching all read from here.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Collection, Iterable
from pathlib import Path
from typing import Any
from urllib import parse as urllib_parse

from clineval.rundir import make_dir
from clineval.secrets import holds_known, mask_known_value
from clineval.store_damage import (
    StoreDamaged,
    check_intact,
    guarded,
    guarded_read,
    store_error,
    transaction,
)
from clineval.store_json import (
    canonical_json,
    dumps,
    dumps_fast,
    hash_text,
    loads_fast,
    stable_hash,
)
from clineval.store_reuse import ReusedCalls

# Re-exported: callers import the store's hashing and damage checks from here.
__all__ = [
    "STORE_FILENAME",
    "RunStore",
    "StoreDamaged",
    "canonical_json",
    "check_intact",
    "hash_text",
    "stable_hash",
    "store_error",
    "transaction",
]

STORE_FILENAME = "store.sqlite"
_RESULT_PREFIX = "result:"  # meta keys of task results
_RESULT_RANGE = (_RESULT_PREFIX, _RESULT_PREFIX[:-1] + chr(ord(_RESULT_PREFIX[-1]) + 1))
SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS calls (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    request TEXT NOT NULL,
    response TEXT NOT NULL,
    usage TEXT,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS records (
    task TEXT NOT NULL,
    kind TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (task, kind, key)
);
CREATE TABLE IF NOT EXISTS artifacts (
    name TEXT PRIMARY KEY,
    blob BLOB NOT NULL,
    meta TEXT,
    created REAL NOT NULL
);
"""


def _stored(text: str, value: Any, encode: Callable[[Any], str] = dumps) -> str:
    """`text` (the JSON of `value`), or the JSON of `value` with every credential the run knows
    masked when the text holds one (a server that quotes the request's Authorization header
    back in an error, an output that repeats a key): the store is never a place for them."""
    if not holds_known(text):
        return text
    return encode(mask_known_value(value))


class RunStore:
    """Thread-safe access to one run's SQLite file. Cheap to call from asyncio code."""

    def __init__(self, path: str | Path, *, read_only: bool = False):
        """`read_only`: only to read an existing store (`judge-agreement`): nothing is created,
        and a store on a read-only file system still opens."""
        self.path = Path(path)
        self.read_only = read_only
        if not read_only:
            make_dir(self.path.parent)
        self._lock = threading.Lock()
        self._conn = self._open_read_only() if read_only else self._open()
        # put_calls has its own connection, so a commit of model calls running in a worker
        # thread never makes a read on the main connection wait (WAL: readers and one writer
        # proceed together).
        self._calls_lock = threading.Lock()
        self._calls_conn: sqlite3.Connection | None = None
        self._closed = False
        # Earlier run directories whose calls answer this run's requests (--reuse); the run
        # owns and closes them.
        self.reuse: ReusedCalls | None = None

    @guarded
    def _open(self) -> sqlite3.Connection:
        conn = self._connect()
        try:
            conn.executescript(_SCHEMA)
            conn.execute(
                "INSERT OR IGNORE INTO meta(key, value) VALUES ('schema_version', ?)",
                (str(SCHEMA_VERSION),),
            )
        except BaseException:
            conn.close()
            raise
        return conn

    @guarded
    def _open_read_only(self) -> sqlite3.Connection:
        # A WAL database needs its -shm file, which a reader must create when no writer left
        # one; in a directory that cannot be written, the file is opened as immutable (no one
        # can be writing it there).
        writable = os.access(self.path.parent, os.W_OK)
        query = "mode=ro" if writable else "mode=ro&immutable=1"
        uri = f"file:{urllib_parse.quote(str(self.path.absolute()))}?{query}"
        conn = sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None)
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # reads the header
            conn.execute("PRAGMA busy_timeout=10000")
        except BaseException:
            conn.close()
            raise
        return conn

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        try:
            # The first statement reads the file header: a file that is not a database fails
            # here.
            conn.execute("PRAGMA journal_mode=WAL")
            # NORMAL in WAL mode: a committed write survives a killed process (not a power
            # cut), at a fraction of FULL's fsync cost.
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA busy_timeout=10000")
        except BaseException:
            conn.close()
            raise
        return conn

    @classmethod
    def in_dir(cls, run_dir: str | Path) -> RunStore:
        return cls(Path(run_dir) / STORE_FILENAME)

    @guarded
    def close(self) -> None:
        with self._calls_lock:
            self._closed = True
            if self._calls_conn is not None:
                self._calls_conn.close()
                self._calls_conn = None
        with self._lock:
            self._conn.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- meta -------------------------------------------------------------------------------
    @guarded
    def set_meta(self, key: str, value: Any) -> None:
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
                (key, _stored(dumps(value), value)),
            )

    @guarded_read
    def get_meta(self, key: str) -> Any | None:
        with self._lock:
            row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    # ---- task results -------------------------------------------------------------------------
    # What each task's last evaluation gave (its metrics and per-sample rows). results.json and
    # samples.jsonl are written from these, so the files are a view of the store, never state
    # read back: a run of one task into a directory keeps the other tasks' results from here.
    @guarded
    def put_task_result(
        self, task: str, metrics: dict[str, Any], samples: list[dict[str, Any]]
    ) -> None:
        self.set_meta(_RESULT_PREFIX + task, {"metrics": metrics, "samples": samples})

    @guarded_read
    def has_task_results(self) -> bool:
        """Whether any task's results are stored (none decoded)."""
        with self._lock:
            row = self._conn.execute(
                "SELECT 1 FROM meta WHERE key >= ? AND key < ? LIMIT 1", _RESULT_RANGE
            ).fetchone()
        return row is not None

    @guarded_read
    def task_results(self) -> dict[str, dict[str, Any]]:
        """{task: {"metrics": ..., "samples": [...]}}, in the order they were (re)computed."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT key, value FROM meta WHERE key >= ? AND key < ? ORDER BY rowid",
                _RESULT_RANGE,
            ).fetchall()
        return {key[len(_RESULT_PREFIX) :]: json.loads(value) for key, value in rows}

    # ---- model calls ------------------------------------------------------------------------
    @guarded_read
    def get_call(self, key: str) -> dict[str, Any] | None:
        """The stored response of a call, or None. Returns {"response": ..., "usage": ...}."""
        with self._lock:
            row = self._conn.execute(
                "SELECT response, usage FROM calls WHERE key = ?", (key,)
            ).fetchone()
        if row is None:
            return None
        return {"response": loads_fast(row[0]), "usage": loads_fast(row[1]) if row[1] else None}

    def reused_call(self, key: str) -> tuple[str, dict[str, Any]] | None:
        """(source directory, stored call) of `key` in a --reuse directory, or None. The
        caller copies a call it uses into this store (with its source marked)."""
        return None if self.reuse is None else self.reuse.find(key)

    @guarded
    def put_call(
        self, key: str, model: str, request: Any, response: Any, usage: Any | None = None
    ) -> None:
        """Record a finished call. `request` must not contain secrets (callers pass no keys)."""
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO calls(key, model, request, response, usage, created)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (
                    key,
                    model,
                    _stored(dumps(request), request),
                    _stored(dumps(response), response),
                    None if usage is None else _stored(dumps(usage), usage),
                    time.time(),
                ),
            )

    @guarded
    def put_calls(self, rows: Iterable[tuple[str, str, str, Any, Any | None]]) -> None:
        """Many finished calls in one transaction: (key, model, request_json, response, usage),
        the request already encoded (the canonical JSON its key was hashed from: the chat
        client encodes each prompt once).

        The chat backends commit the calls that finish close together in one transaction, in a
        worker thread (safe: this method has its own connection and lock), and each call is
        still durable before its caller sees the answer.
        """
        now = time.time()
        encoded = [
            (
                key,
                model,
                canonical_json(mask_known_value(loads_fast(rq))) if holds_known(rq) else rq,
                _stored(dumps_fast(rs), rs, dumps_fast),
                None if u is None else _stored(dumps_fast(u), u, dumps_fast),
                now,
            )
            for key, model, rq, rs, u in rows
        ]
        with self._calls_lock:
            if self._closed:
                raise sqlite3.ProgrammingError(f"{self.path}: the run store is closed")
            if self._calls_conn is None:
                self._calls_conn = self._connect()
            conn = self._calls_conn
            with transaction(conn):
                conn.executemany(
                    "INSERT OR REPLACE INTO calls(key, model, request, response, usage, created)"
                    " VALUES (?, ?, ?, ?, ?, ?)",
                    encoded,
                )

    @guarded
    def count_calls(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM calls").fetchone()[0])

    @guarded_read
    def call_usage(self) -> list[tuple[str, Any | None]]:
        """(model, usage) of every stored call: what token and cost totals need, without
        decoding the (large) requests and responses."""
        with self._lock:
            rows = self._conn.execute("SELECT model, usage FROM calls ORDER BY created").fetchall()
        return [(m, json.loads(u) if u else None) for m, u in rows]

    @guarded_read
    def call_usage_of(self, keys: Collection[str]) -> list[tuple[str, Any | None]]:
        """(model, usage) of the stored calls among `keys`, each once (a task's usage)."""
        wanted = keys if isinstance(keys, set | frozenset) else set(keys)
        with self._lock:
            rows = self._conn.execute(
                "SELECT key, model, usage FROM calls ORDER BY created"
            ).fetchall()
        return [(m, json.loads(u) if u else None) for k, m, u in rows if k in wanted]

    @guarded_read
    def iter_calls(self) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT key, model, request, response, usage FROM calls ORDER BY created"
            ).fetchall()
        return [
            {
                "key": k,
                "model": m,
                "request": json.loads(rq),
                "response": json.loads(rs),
                "usage": json.loads(u) if u else None,
            }
            for k, m, rq, rs, u in rows
        ]

    # ---- per-sample records -----------------------------------------------------------------
    @guarded
    def put_record(self, task: str, kind: str, key: str, value: Any) -> None:
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO records(task, kind, key, value, created)"
                " VALUES (?, ?, ?, ?, ?)",
                (task, kind, key, _stored(dumps(value), value), time.time()),
            )

    @guarded
    def put_records(self, task: str, kind: str, items: Iterable[tuple[str, Any]]) -> None:
        """Many records in one transaction (fast for bulk outputs such as a whole test split)."""
        now = time.time()
        rows = [(task, kind, k, _stored(dumps(v), v), now) for k, v in items]
        with self._lock, transaction(self._conn):
            self._conn.executemany(
                "INSERT OR REPLACE INTO records(task, kind, key, value, created)"
                " VALUES (?, ?, ?, ?, ?)",
                rows,
            )

    @guarded_read
    def records(self, task: str, kind: str) -> dict[str, Any]:
        """All records of one (task, kind), keyed by record key, in insertion order."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT key, value FROM records WHERE task = ? AND kind = ? ORDER BY rowid",
                (task, kind),
            ).fetchall()
        return {k: json.loads(v) for k, v in rows}

    @guarded
    def tasks(self) -> list[str]:
        with self._lock:
            rows = self._conn.execute("SELECT DISTINCT task FROM records ORDER BY task").fetchall()
        return [r[0] for r in rows]

    @guarded
    def record_kinds(self, task: str) -> list[str]:
        """The kinds of record one task has stored (e.g. a judged task's `verdict:LABEL`)."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT DISTINCT kind FROM records WHERE task = ? ORDER BY kind", (task,)
            ).fetchall()
        return [str(r[0]) for r in rows]

    @guarded
    def record_counts(self) -> dict[str, int]:
        """How many per-sample records each task has stored: what its results are computed
        from (a run directory's results are never replaced by ones computed from fewer)."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT task, COUNT(*) FROM records GROUP BY task ORDER BY task"
            ).fetchall()
        return {str(task): int(n) for task, n in rows}

    @guarded
    def count_records(self, task: str, kind: str) -> int:
        with self._lock:
            row = self._conn.execute(
                "SELECT COUNT(*) FROM records WHERE task = ? AND kind = ?", (task, kind)
            ).fetchone()
        return int(row[0])

    @guarded
    def holds_outputs(self) -> bool:
        """Whether any model call or per-sample record is stored (artifacts such as a trained
        baseline are keyed by their own content and belong to no particular run)."""
        with self._lock:
            row = self._conn.execute(
                "SELECT EXISTS (SELECT 1 FROM records) OR EXISTS (SELECT 1 FROM calls)"
            ).fetchone()
        return bool(row[0])

    @guarded
    def is_empty(self) -> bool:
        """Nothing stored at all: no call, no record, no artifact."""
        with self._lock:
            row = self._conn.execute(
                "SELECT EXISTS (SELECT 1 FROM records) OR EXISTS (SELECT 1 FROM calls)"
                " OR EXISTS (SELECT 1 FROM artifacts)"
            ).fetchone()
        return not row[0]

    # ---- artifacts (trained baselines, etc.) ------------------------------------------------
    @guarded
    def put_artifact(self, name: str, blob: bytes, meta: Any | None = None) -> None:
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO artifacts(name, blob, meta, created) VALUES (?, ?, ?, ?)",
                (name, blob, None if meta is None else _stored(dumps(meta), meta), time.time()),
            )

    @guarded
    def get_artifact(self, name: str) -> bytes | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT blob FROM artifacts WHERE name = ?", (name,)
            ).fetchone()
        return None if row is None else bytes(row[0])
