"""The run store: one SQLite file (WAL) per run directory.

It holds every model call (keyed by a hash of everything that determines the answer), every
per-sample output of a task, and binary artifacts such as a trained baseline. Each write is
committed at once, so a run killed at any point keeps everything it finished; resume, re-scoring
and caching all read from here.
"""

from __future__ import annotations

import functools
import hashlib
import json
import sqlite3
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

import orjson

from clineval.errors import InputError

STORE_FILENAME = "store.sqlite"
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


def canonical_json(obj: Any) -> str:
    """The one JSON text of `obj` that keys are hashed from: sorted keys, no spaces, UTF-8."""
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def hash_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def stable_hash(obj: Any) -> str:
    """sha256 of a canonical JSON encoding: the same content always gives the same key."""
    return hash_text(canonical_json(obj))


def _loads_fast(text: str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:  # e.g. NaN, which the json module writes and orjson refuses
        return json.loads(text)


def _dumps_fast(value: Any) -> str:
    """JSON for the hot path of model calls (orjson: ~20x faster on a judge prompt). Values
    that orjson refuses (big ints, non-string keys) go through the json module."""
    try:
        return orjson.dumps(value).decode("utf-8")
    except TypeError:
        return _dumps(value)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# SQLite result codes (the low byte of an extended code) of a file that is not an intact
# database: truncated, overwritten, a torn page.
_DAMAGED = frozenset({sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB})
# ... and of one that cannot be used at all: no permission, read-only, disk full, I/O error.
_UNUSABLE = frozenset(
    {
        sqlite3.SQLITE_CANTOPEN,
        sqlite3.SQLITE_PERM,
        sqlite3.SQLITE_READONLY,
        sqlite3.SQLITE_FULL,
        sqlite3.SQLITE_IOERR,
    }
)


class StoreDamaged(InputError):
    """The run store is not an intact SQLite file, or holds values clineval never wrote."""

    def __init__(self, path: str | Path, detail: str):
        super().__init__(
            f"the run store is damaged ({detail}); `clineval score` cannot recover results "
            "from it: run the command again with a new --output-dir",
            path=path,
        )


def store_error(path: str | Path, exc: sqlite3.DatabaseError) -> InputError | None:
    """The one-line error for an SQLite error on the store at `path`: damage, or a file that
    cannot be used. None for other errors (a closed store, a bug): they stay internal."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is None:
        # Python's decoding of a TEXT column (no SQLite code): bytes that are not UTF-8, which
        # clineval never writes, so the page holding them was overwritten.
        if isinstance(exc, sqlite3.OperationalError) and str(exc).startswith("Could not decode"):
            return StoreDamaged(path, "stored text is not UTF-8")
        return None
    if code & 0xFF in _DAMAGED:
        return StoreDamaged(path, str(exc))
    if code & 0xFF in _UNUSABLE:
        return InputError(f"cannot use the run store: {exc}", path=path)
    return None


def check_intact(path: str | Path) -> None:
    """StoreDamaged unless every page of the store at `path` reads as a valid b-tree page
    (PRAGMA quick_check, read-only). Used before a command writes anything, so a torn page
    is reported then, not by whichever later query first reads it."""
    try:
        uri = f"file:{urllib.parse.quote(str(Path(path).absolute()))}?mode=ro"
        conn = sqlite3.connect(uri, uri=True)
        try:
            problem = conn.execute("PRAGMA quick_check(1)").fetchone()
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        error = store_error(path, exc)
        if error is None:
            raise
        raise error from exc
    if problem is None or problem[0] != "ok":
        raise StoreDamaged(path, str(problem[0]) if problem else "quick_check found problems")


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _guarded(
    method: Callable[Concatenate[RunStore, _P], _R],
) -> Callable[Concatenate[RunStore, _P], _R]:
    """Every store method: an SQLite error caused by the file (damage, permissions, a full
    disk) leaves as the one-line InputError naming the file, wherever it surfaces (a torn
    page is only met by the first query that reads it)."""

    @functools.wraps(method)
    def wrapper(self: RunStore, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.DatabaseError as exc:
            error = store_error(self.path, exc)
            if error is None:
                raise
            raise error from exc

    return wrapper


def _guarded_read(
    method: Callable[Concatenate[RunStore, _P], _R],
) -> Callable[Concatenate[RunStore, _P], _R]:
    """A method that decodes stored JSON: a value that does not decode was overwritten (SQLite
    keeps no checksum of a page's content), which is damage too."""
    guarded = _guarded(method)

    @functools.wraps(method)
    def wrapper(self: RunStore, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return guarded(self, *args, **kwargs)
        except ValueError as exc:  # json / orjson JSONDecodeError, UnicodeDecodeError
            raise StoreDamaged(self.path, "a stored value is not valid JSON") from exc

    return wrapper


class RunStore:
    """Thread-safe access to one run's SQLite file. Cheap to call from asyncio code."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = self._open()
        # put_calls has its own connection, so a commit of model calls running in a worker
        # thread never makes a read on the main connection wait (WAL: readers and one writer
        # proceed together).
        self._calls_lock = threading.Lock()
        self._calls_conn: sqlite3.Connection | None = None
        self._closed = False

    @_guarded
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

    @_guarded
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
    @_guarded
    def set_meta(self, key: str, value: Any) -> None:
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, _dumps(value))
            )

    @_guarded_read
    def get_meta(self, key: str) -> Any | None:
        with self._lock:
            row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    # ---- model calls ------------------------------------------------------------------------
    @_guarded_read
    def get_call(self, key: str) -> dict[str, Any] | None:
        """The stored response of a call, or None. Returns {"response": ..., "usage": ...}."""
        with self._lock:
            row = self._conn.execute(
                "SELECT response, usage FROM calls WHERE key = ?", (key,)
            ).fetchone()
        if row is None:
            return None
        return {"response": _loads_fast(row[0]), "usage": _loads_fast(row[1]) if row[1] else None}

    @_guarded
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
                    _dumps(request),
                    _dumps(response),
                    None if usage is None else _dumps(usage),
                    time.time(),
                ),
            )

    @_guarded
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
            (key, model, rq, _dumps_fast(rs), None if u is None else _dumps_fast(u), now)
            for key, model, rq, rs, u in rows
        ]
        with self._calls_lock:
            if self._closed:
                raise sqlite3.ProgrammingError(f"{self.path}: the run store is closed")
            if self._calls_conn is None:
                self._calls_conn = self._connect()
            conn = self._calls_conn
            conn.execute("BEGIN")
            try:
                conn.executemany(
                    "INSERT OR REPLACE INTO calls(key, model, request, response, usage, created)"
                    " VALUES (?, ?, ?, ?, ?, ?)",
                    encoded,
                )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    @_guarded
    def count_calls(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM calls").fetchone()[0])

    @_guarded_read
    def call_usage(self) -> list[tuple[str, Any | None]]:
        """(model, usage) of every stored call: what token and cost totals need, without
        decoding the (large) requests and responses."""
        with self._lock:
            rows = self._conn.execute("SELECT model, usage FROM calls ORDER BY created").fetchall()
        return [(m, json.loads(u) if u else None) for m, u in rows]

    @_guarded_read
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
    @_guarded
    def put_record(self, task: str, kind: str, key: str, value: Any) -> None:
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO records(task, kind, key, value, created)"
                " VALUES (?, ?, ?, ?, ?)",
                (task, kind, key, _dumps(value), time.time()),
            )

    @_guarded
    def put_records(self, task: str, kind: str, items: Iterable[tuple[str, Any]]) -> None:
        """Many records in one transaction (fast for bulk outputs such as a whole test split)."""
        now = time.time()
        rows = [(task, kind, k, _dumps(v), now) for k, v in items]
        with self._lock:
            self._conn.execute("BEGIN")
            try:
                self._conn.executemany(
                    "INSERT OR REPLACE INTO records(task, kind, key, value, created)"
                    " VALUES (?, ?, ?, ?, ?)",
                    rows,
                )
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise

    @_guarded_read
    def records(self, task: str, kind: str) -> dict[str, Any]:
        """All records of one (task, kind), keyed by record key, in insertion order."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT key, value FROM records WHERE task = ? AND kind = ? ORDER BY rowid",
                (task, kind),
            ).fetchall()
        return {k: json.loads(v) for k, v in rows}

    @_guarded
    def tasks(self) -> list[str]:
        with self._lock:
            rows = self._conn.execute("SELECT DISTINCT task FROM records ORDER BY task").fetchall()
        return [r[0] for r in rows]

    @_guarded
    def record_counts(self) -> dict[str, int]:
        """How many per-sample records each task has stored: what its results are computed
        from (a run directory's results are never replaced by ones computed from fewer)."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT task, COUNT(*) FROM records GROUP BY task ORDER BY task"
            ).fetchall()
        return {str(task): int(n) for task, n in rows}

    @_guarded
    def count_records(self, task: str, kind: str) -> int:
        with self._lock:
            row = self._conn.execute(
                "SELECT COUNT(*) FROM records WHERE task = ? AND kind = ?", (task, kind)
            ).fetchone()
        return int(row[0])

    @_guarded
    def holds_outputs(self) -> bool:
        """Whether any model call or per-sample record is stored (artifacts such as a trained
        baseline are keyed by their own content and belong to no particular run)."""
        with self._lock:
            row = self._conn.execute(
                "SELECT EXISTS (SELECT 1 FROM records) OR EXISTS (SELECT 1 FROM calls)"
            ).fetchone()
        return bool(row[0])

    # ---- artifacts (trained baselines, etc.) ------------------------------------------------
    @_guarded
    def put_artifact(self, name: str, blob: bytes, meta: Any | None = None) -> None:
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO artifacts(name, blob, meta, created) VALUES (?, ?, ?, ?)",
                (name, blob, None if meta is None else _dumps(meta), time.time()),
            )

    @_guarded
    def get_artifact(self, name: str) -> bytes | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT blob FROM artifacts WHERE name = ?", (name,)
            ).fetchone()
        return None if row is None else bytes(row[0])
