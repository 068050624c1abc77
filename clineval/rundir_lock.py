"""One clineval process at a time in a run directory: an OS file lock on `<run dir>/.lock`.

`clineval run`, `score` and `merge` hold the lock for as long as they write into a run
directory, so two processes never send the same model calls twice or mix two runs' outputs in
one store. The lock is `flock` on an open file: the kernel releases it when its holder exits,
however it exits (SIGKILL included), so a lock left behind never blocks the next run. The file
holds the holder's pid, only to name it in the refusal; it is never deleted (deleting it while a
second process waits on it would let a third take a lock on a new file beside it), except with
the directory itself by `remove_made`: a run refused before it kept anything leaves no
directory it created (a second process waiting on that new directory then finds it gone and
fails to write, one line, instead of running in it).

Taking the lock again in the process that holds it is a no-op (merge writes, then re-scores),
counted so that the outer holder is the one that releases it.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from clineval.errors import InputError
from clineval.rundir import cannot_write, make_dir

LOCK_FILENAME = ".lock"

log = logging.getLogger("clineval")

# Run directories this process holds: resolved path -> (open lock file descriptor, depth).
_held: dict[Path, tuple[int, int]] = {}


def _holder_pid(fd: int) -> str:
    """The pid the holder wrote into the lock file ("?" while it has not written it yet)."""
    try:
        text = os.pread(fd, 64, 0).decode("ascii", "replace").strip()
    except OSError:
        return "?"
    return text if text.isdigit() else "?"


def _acquire(run_dir: Path, wait: bool, wait_hint: str) -> int:
    path = run_dir / LOCK_FILENAME
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise cannot_write(path, exc) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = _holder_pid(fd)
            if not wait:
                # `run` can wait or write elsewhere; `score` and `merge` mean this directory
                advice = (
                    f"{wait_hint}or use another directory"
                    if wait_hint
                    else "run the command again once it has finished"
                )
                raise InputError(
                    f"another clineval process (pid {pid}) is using this run directory; {advice}",
                    path=run_dir,
                ) from None
            log.warning("waiting for clineval (pid %s) to finish with %s", pid, run_dir)
            fcntl.flock(fd, fcntl.LOCK_EX)  # Ctrl-C interrupts the wait (KeyboardInterrupt)
        except OSError as exc:  # a file system without locks (some network mounts)
            message = f"cannot lock the run directory: {exc.strerror}"
            raise InputError(message, path=path) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
    except BaseException:
        os.close(fd)  # closing the descriptor also drops a lock taken on it
        raise
    return fd


@contextmanager
def run_dir_lock(
    run_dir: Path, *, create: bool = False, wait: bool = False, wait_hint: str = ""
) -> Iterator[None]:
    """Hold the lock of `run_dir` for the body of the `with`; with `create` the directory is
    made if missing, else a missing one is an InputError.

    Another process holding it: InputError at once naming its pid, or, with `wait`, block
    until it is released. `wait_hint` completes the refusal ("pass --wait to wait for it, ").
    """
    if create:
        make_dir(run_dir)
    elif not run_dir.is_dir():
        raise InputError("no such run directory", path=run_dir)
    key = run_dir.resolve()
    if key in _held:
        fd, depth = _held[key]
        _held[key] = (fd, depth + 1)
    else:
        _held[key] = (_acquire(run_dir, wait, wait_hint), 1)
    try:
        yield
    finally:
        fd, depth = _held[key]
        if depth > 1:
            _held[key] = (fd, depth - 1)
        else:
            del _held[key]
            # The pid is left in the file: harmless, as only a held flock means "in use".
            os.close(fd)


def missing_dirs(path: Path) -> list[Path]:
    """The directories a `make_dir(path)` would create, outermost first (none when `path`
    exists)."""
    missing: list[Path] = []
    for candidate in (path.absolute(), *path.absolute().parents):
        if os.path.lexists(candidate):
            break
        missing.append(candidate)
    return missing[::-1]


def remove_made(made: list[Path]) -> None:
    """Remove the directories `missing_dirs` listed before this command made them, with what
    it put in them (the lock file, a fixture it generated): for a run refused before it kept
    anything. A failure to remove is only logged: the refusal is what the user must see."""
    if not made:
        return
    try:
        shutil.rmtree(made[0])
    except OSError as exc:
        log.warning("could not remove %s, made for the refused run: %s", made[0], exc.strerror)
