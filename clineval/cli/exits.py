"""The one place where a command ends: every error becomes its exit code and one line."""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
import traceback
from collections.abc import Iterator
from typing import Any

import typer

from clineval.cli.app import _state, app
from clineval.cli.help import (
    _click_module,
    _command_words,
    _completed_words,
    _enable_completion,
    _help_as_written,
    _usage_error_line,
)
from clineval.errors import BatchFilesWritten, InputError
from clineval.jsonio import json_document as json_text
from clineval.secrets import MaskedStream, redact, register_environment

INTERRUPTED = 130  # the shell's code for a process stopped by SIGINT
TERMINATED = 143  # ... and by SIGTERM (128 + 15)
# What a stopped command leaves behind and what to do, by command: only a run has model
# calls in a run store to resume from.
_AFTER_STOP = {
    ("run",): "every model call that finished is in the run store; "
    "run the same command again to resume",
    ("merge",): "the shards are unchanged; run the same command again to finish the merge",
    ("score",): "the results already written are unchanged; run the same command again",
    ("data", "fetch"): "every file in the cache passed its check (partial downloads are "
    "removed); run the same command again to fetch the rest",
}
_DEFAULT_AFTER_STOP = "files are written whole or not at all; run the same command again"


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C would be, so that it stops a run the same way: the runner
    writes "stopped" into the manifest, asyncio cancels calls in flight, stored calls stay."""


def _raise_terminated(signum: int, frame: object) -> None:
    # Remembered apart from the exception: typer turns a KeyboardInterrupt into Exit(130) and
    # asyncio may re-raise a plain one, so the type alone does not survive to main().
    _state["terminated"] = True
    raise Terminated()


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM raises Terminated while the command runs (restored after: tests call main)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _stopped(terminated: bool, args: list[str]) -> int:
    # plain print: a rich Console wraps at 80 columns when stderr is not a terminal
    why = "terminated by SIGTERM" if terminated else "interrupted"
    words = _command_words(args)
    after = next(
        (text for command, text in _AFTER_STOP.items() if words[: len(command)] == command),
        _DEFAULT_AFTER_STOP,
    )
    _say(f"aborted ({why}): {after}")
    return TERMINATED if terminated else INTERRUPTED


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    _state["terminated"] = False
    _state["last_line"] = _state["exit_code"] = None
    with _masked_console(), _json_envelope(json_requested(args)):
        try:
            with _sigterm_as_interrupt():
                code = _main(args)
        except KeyboardInterrupt:  # Ctrl-C, or SIGTERM (Terminated)
            code = _stopped(terminated=_state["terminated"], args=args)
        _state["exit_code"] = code
        return code


def json_requested(args: list[str]) -> bool:
    """Whether the command line asks for JSON on stdout (`--json`, before any `--`)."""
    words = args[: args.index("--")] if "--" in args else args
    return "--json" in words


class _Watched:
    """stdout, noting whether anything was written to it."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self.written = False

    def write(self, text: str) -> int:
        if text:
            self.written = True
        return int(self._stream.write(text))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextlib.contextmanager
def _json_envelope(enabled: bool) -> Iterator[None]:
    """Under --json, stdout is one JSON document whatever happens: a command that ends
    without writing its own (a bad flag, a missing file, an unknown task, Ctrl-C, SIGTERM,
    an internal error) leaves `{"status": "error", "error": LINE, "exit_code": N}`, LINE
    being the one line it printed on stderr (stopped, exit 0, for --batch-file-out)."""
    if not enabled:
        yield
        return
    watched = _Watched(sys.stdout)
    saved, sys.stdout = sys.stdout, watched  # type: ignore[assignment]
    try:
        yield
    finally:
        sys.stdout = saved
        code = _state.get("exit_code")
        if not watched.written and isinstance(code, int):
            line = str(_state.get("last_line") or "")
            document: dict[str, Any]
            if code:
                document = {"status": "error", "error": line.removeprefix("error: ")}
            else:
                document = {"status": "stopped", "message": line.removeprefix("stopped: ")}
            document["exit_code"] = code
            saved.write(json_text(document))
            saved.flush()


def _say(line: str) -> None:
    """One line on stderr that ends the command (kept for the --json document)."""
    _state["last_line"] = line
    print(line, file=sys.stderr)


@contextlib.contextmanager
def _masked_console() -> Iterator[None]:
    """stdout and stderr through secrets.MaskedStream while the command runs: whatever prints
    a line (rich, logging, print) prints no credential the run knows."""
    register_environment()  # the environment's keys, known before anything is printed
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = MaskedStream(saved[0]), MaskedStream(saved[1])
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


def _run_needs_plugins(args: list[str]) -> bool:
    """Whether `clineval run` with `args` may need a plugin's benchmark: unless its tasks are
    all built-in and every flag is one of clineval's or a built-in benchmark's (read as click
    reads them, on a copy of the command), or when it asks for help or reads a --config
    file (whose tasks and keys are not read yet)."""
    from clineval.benchmarks.registry import builtin_task_names, defer_plugins

    words = args[args.index("run") + 1 :]
    if any(w in ("--help", "-h") or w.split("=", 1)[0] == "--config" for w in words):
        return True
    defer_plugins(True)  # the copy's benchmark flags: the built-in benchmarks' only
    probe = getattr(typer.main.get_command(app), "commands", {})["run"]
    try:
        parsed = probe.make_context(
            "run", words, resilient_parsing=True, ignore_unknown_options=True,
            allow_extra_args=True,
        )  # fmt: skip
    except Exception:  # whatever the parse says, the real one says it again
        return True
    tasks = parsed.params.get("tasks") or []
    return bool(parsed.args) or not tasks or not set(tasks) <= set(builtin_task_names())


def _main(args: list[str]) -> int:
    click = _click_module()
    try:
        # Without standalone mode click returns a `typer.Exit(code)` as the call's value.
        command = typer.main.get_command(app)
        from clineval.benchmarks.registry import defer_plugins

        is_run = _command_words(args or _completed_words())[:1] == ("run",)
        # run's options (and the benchmarks' flags among them) are made when it is parsed,
        # after this: a run of built-in tasks imports no plugin
        defer_plugins(is_run and bool(args) and not _run_needs_plugins(args))
        _help_as_written(command)
        _enable_completion()
        result = command.main(args=args, standalone_mode=False, prog_name="clineval")
        if result == INTERRUPTED:  # typer's answer to Ctrl-C (KeyboardInterrupt) or SIGTERM
            raise KeyboardInterrupt
        if isinstance(result, int) and not isinstance(result, bool):
            return result
    except typer.Exit as exc:  # typer's public names: the right classes in every version
        return int(exc.exit_code)
    except typer.Abort:
        raise KeyboardInterrupt from None
    except click.ClickException as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":
            # `clineval` or `clineval data` alone: the help, as asked for, and success
            print(exc.format_message())
            return 0
        _say(redact(_usage_error_line(exc)))
        return 2
    except BatchFilesWritten as exc:
        # Not an error: the request files are the output the user asked for.
        _say(f"stopped: {redact(str(exc))}")
        return 0
    except InputError as exc:
        if _state["debug"]:
            print(redact(traceback.format_exc()), file=sys.stderr, end="")
        _say(f"error: {redact(exc.one_line())}")
        return 2
    except Exception as exc:
        from clineval.runner import TaskFailures

        if isinstance(exc, TaskFailures):
            _say(f"error: {redact(str(exc))}")
            return 1
        if _state["debug"]:
            print(redact(traceback.format_exc()), file=sys.stderr, end="")
        _say(f"internal error: {type(exc).__name__}: {redact(str(exc))}")
        return 1
    finally:
        from clineval.benchmarks.registry import defer_plugins

        defer_plugins(False)  # the next command or the Python API in this process: all plugins
    return 0
