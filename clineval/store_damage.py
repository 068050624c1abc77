"""A run store that is damaged (truncated, overwritten, a torn page) or cannot be used (no
permission, a full disk): one-line errors naming the file, wherever SQLite meets the problem."""

from __future__ import annotations

import contextlib
import functools
import sqlite3
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Concatenate, ParamSpec, Protocol, TypeVar, cast

from clineval.errors import InputError

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


@contextlib.contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """BEGIN ... COMMIT on a connection in autocommit mode (isolation_level=None); on any error
    a ROLLBACK, but only of a transaction that is still open: after SQLITE_FULL or an I/O
    error (also a failed COMMIT) SQLite has already rolled back, and a second ROLLBACK would
    raise "no transaction is active", hiding the error that says what happened."""
    conn.execute("BEGIN")
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            # A failing ROLLBACK must not replace the error that got us here.
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
        raise


_P = ParamSpec("_P")
_R = TypeVar("_R")


class _HasPath(Protocol):
    path: Path


_S = TypeVar("_S", bound=_HasPath)


def guarded(
    method: Callable[Concatenate[_S, _P], _R],
) -> Callable[Concatenate[_S, _P], _R]:
    """Every store method: an SQLite error caused by the file (damage, permissions, a full
    disk) leaves as the one-line InputError naming the file, wherever it surfaces (a torn
    page is only met by the first query that reads it)."""

    @functools.wraps(method)
    def wrapper(self: _S, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.DatabaseError as exc:
            error = store_error(self.path, exc)
            if error is None:
                raise
            raise error from exc

    return cast("Callable[Concatenate[_S, _P], _R]", wrapper)


def guarded_read(
    method: Callable[Concatenate[_S, _P], _R],
) -> Callable[Concatenate[_S, _P], _R]:
    """A method that decodes stored JSON: a value that does not decode was overwritten (SQLite
    keeps no checksum of a page's content), which is damage too."""
    inner = guarded(method)

    @functools.wraps(method)
    def wrapper(self: _S, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return inner(self, *args, **kwargs)
        except ValueError as exc:  # json / orjson JSONDecodeError, UnicodeDecodeError
            raise StoreDamaged(self.path, "a stored value is not valid JSON") from exc

    return cast("Callable[Concatenate[_S, _P], _R]", wrapper)
