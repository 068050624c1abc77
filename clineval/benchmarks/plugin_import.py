"""Importing a benchmark plugin without letting it take the command down.

A plugin is outside code run at import time. It may hang (a network call, a sleep), end the
process (`os._exit`, a signal), or write to file descriptor 1 below Python (a C library, an
`os.write`), where a redirection of `sys.stdout` cannot catch it and where it would corrupt a
command's machine-read output (`tasks --json`, `compare --format csv`).

So the plugins are first imported in a child process, one after another, each within a bound
(`CLINEVAL_PLUGIN_IMPORT_TIMEOUT`, a few seconds by default): a child whose plugin hangs is
killed with its process group, one that a plugin ends is reported with its status, the
plugins after either are tried in a new child, and what any of them prints goes nowhere.
Only the plugins the child imported are imported here, in a daemon thread with the same bound
and with file descriptors 1 and 2 on the null device meanwhile. The cost is one short-lived
interpreter (one more per plugin that breaks it), paid only by a command that needs the
plugins (registry: a listing, or a task no built-in declares).
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from importlib import metadata
from typing import Any

from clineval.jsonio import parse_json

IMPORT_TIMEOUT_VARIABLE = "CLINEVAL_PLUGIN_IMPORT_TIMEOUT"
# A plugin should import in well under a second (a heavy stack is imported in `make_task`, not
# at the top of its module); the bound only keeps a broken one from holding every command.
DEFAULT_IMPORT_TIMEOUT = 5.0

# The child: its own file descriptors 1 and 2 go to the null device before any plugin runs;
# it says "ready" once clineval's authoring surface is imported (shared by every plugin, so
# not counted against any one), then one JSON line per plugin imported, in order, on a
# duplicate of the original stdout (a pipe).
_CHILD = r"""
import json, os, sys
out = os.fdopen(os.dup(1), "w")
null = os.open(os.devnull, os.O_WRONLY)
os.dup2(null, 1)
os.dup2(null, 2)
sys.path[:] = json.loads(sys.argv[1])
from importlib.metadata import EntryPoint
try:
    import clineval.benchmarks
except BaseException:
    pass
out.write("ready\n")
out.flush()
for name, value, group in json.loads(sys.argv[2]):
    try:
        EntryPoint(name, value, group).load()
        outcome = ["ok", ""]
    except BaseException as exc:
        text = str(exc)
        outcome = ["raised", f"{type(exc).__name__}: {text}" if text else type(exc).__name__]
    out.write(json.dumps(outcome) + "\n")
    out.flush()
os._exit(0)
"""
# How long the child may take to import clineval itself (not a plugin's time).
_READY_TIMEOUT = 120.0


def import_timeout() -> float:
    raw = os.environ.get(IMPORT_TIMEOUT_VARIABLE, "")
    try:
        value = float(raw)
    except ValueError:
        return DEFAULT_IMPORT_TIMEOUT
    return value if math.isfinite(value) and value > 0 else DEFAULT_IMPORT_TIMEOUT


def probe(entries: Sequence[metadata.EntryPoint], timeout: float) -> list[str | None]:
    """For each entry point, None when a child process imported it, else why not (one
    phrase: "failed to load: ValueError: ...", "did not finish importing in 3 s", "ended the
    process with status 7 while importing"). One child imports them in turn, each within
    `timeout` of its start; a plugin that ends or hangs the child costs it, and the plugins
    after it are tried in a new one."""
    outcomes: list[str | None] = []
    while len(outcomes) < len(entries):
        outcomes.extend(_probe_child(entries[len(outcomes) :], timeout))
    return outcomes


def _probe_child(entries: Sequence[metadata.EntryPoint], timeout: float) -> list[str | None]:
    """The outcomes of a prefix of `entries` (at least one): up to the first that ended or
    hung the child."""
    listed = json.dumps([[e.name, e.value, e.group] for e in entries])
    try:
        child = subprocess.Popen(
            [sys.executable, "-c", _CHILD, json.dumps(sys.path), listed],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # its own process group: killed whole if it hangs
        )
    except OSError as exc:
        return [f"could not be imported in a child process: {exc}"] * len(entries)
    lines: queue.Queue[bytes | None] = queue.Queue()
    threading.Thread(target=_read_lines, args=(child, lines), daemon=True).start()
    outcomes: list[str | None] = []
    ready = False
    try:
        # clineval itself not imported there (ended, or slower than the bound): no verdict
        # on any plugin, which is then imported here only (still bounded)
        if lines.get(timeout=_READY_TIMEOUT) is None:
            return [None] * len(entries)
        ready = True
        for _ in entries:
            line = lines.get(timeout=timeout)
            if line is None:
                outcomes.append(_ended(child))
                return outcomes
            outcomes.append(_verdict(line))
        return outcomes
    except queue.Empty:
        _kill(child)
        if not ready:
            return [None] * len(entries)
        outcomes.append(f"did not finish importing in {timeout:g} s ({IMPORT_TIMEOUT_VARIABLE})")
        return outcomes
    finally:
        _kill(child)


def _read_lines(child: subprocess.Popen[bytes], lines: queue.Queue[bytes | None]) -> None:
    assert child.stdout is not None
    with contextlib.suppress(OSError, ValueError):
        for line in child.stdout:
            lines.put(line)
    lines.put(None)


def _verdict(line: bytes) -> str | None:
    try:
        status, text = parse_json(line)
    except (ValueError, TypeError):  # JsonProblem is a ValueError
        return "wrote an unreadable answer while importing"
    return None if status == "ok" else f"failed to load: {text}"


def _ended(child: subprocess.Popen[bytes]) -> str:
    try:
        code = child.wait(timeout=5)
    except subprocess.TimeoutExpired:
        return "closed its output while importing"
    if code < 0:
        return f"was killed by signal {-code} while importing"
    return f"ended the process with status {code} while importing"


def _kill(child: subprocess.Popen[bytes]) -> None:
    if child.poll() is None:
        with contextlib.suppress(OSError):
            os.killpg(child.pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            child.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        child.wait(timeout=5)


def load_entry(entry: metadata.EntryPoint, timeout: float) -> tuple[str, Any]:
    """("ok", value), ("raised", exception) or ("hung", None): the import in this process,
    after its child's succeeded. It runs in a daemon thread, so that one which never returns
    is left behind (it dies with the process), and what it raises (SystemExit and
    KeyboardInterrupt too) is caught there. What it writes, through Python or below it, goes
    to the null device: a command's output stays its own."""
    outcome: list[tuple[str, Any]] = []

    def load() -> None:
        try:
            outcome.append(("ok", entry.load()))
        except BaseException as exc:  # outside code: whatever it raises is a failed load
            outcome.append(("raised", exc))

    sink = io.StringIO()
    worker = threading.Thread(target=load, name=f"clineval-plugin-{entry.name}", daemon=True)
    with _quiet_descriptors(), contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        worker.start()
        worker.join(timeout)
    return outcome[0] if outcome else ("hung", None)


@contextlib.contextmanager
def _quiet_descriptors() -> Iterator[None]:
    """File descriptors 1 and 2 on the null device meanwhile (restored after), for what a
    plugin writes below Python. Nothing is changed where they cannot be duplicated (closed)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    try:
        saved = [os.dup(1), os.dup(2)]
    except OSError:
        yield
        return
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        os.dup2(null, 2)
        yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, null):
            os.close(fd)
