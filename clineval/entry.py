"""The `clineval` executable: a Ctrl-C or SIGTERM while the command's modules are still being
imported ends with the same one-line message as one during a run, not a traceback."""

from __future__ import annotations

import json
import signal
import sys

_STARTUP_MESSAGE = "aborted ({why}) while starting: nothing was run"


class _TerminatedAtStartup(KeyboardInterrupt):
    pass


def _raise(signum: int, frame: object) -> None:
    raise _TerminatedAtStartup()


def main() -> int:
    if sys.argv[1:] in (["--version"], ["-V"]):
        # Answered before typer, rich and pydantic load: a script or an agent asks this first.
        from clineval.version import version_line

        print(version_line())
        return 0
    previous = signal.signal(signal.SIGTERM, _raise)
    try:
        from clineval.cli import main as cli_main
    except _TerminatedAtStartup:
        return _stopped_at_startup("terminated by SIGTERM", 143)
    except KeyboardInterrupt:
        return _stopped_at_startup("interrupted", 130)
    finally:
        signal.signal(signal.SIGTERM, previous)
    return cli_main()


def _stopped_at_startup(why: str, code: int) -> int:
    """The one line, and under --json the document clineval.cli.exits.main would write."""
    message = _STARTUP_MESSAGE.format(why=why)
    print(message, file=sys.stderr)
    args = sys.argv[1:]
    if "--json" in (args[: args.index("--")] if "--" in args else args):
        document = {"status": "error", "error": message, "exit_code": code}
        print(json.dumps(document, indent=2, ensure_ascii=False))
    return code
