"""The `clineval` executable: a Ctrl-C or SIGTERM while the command's modules are still being
imported ends with the same one-line message as one during a run, not a traceback."""

from __future__ import annotations

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
        print(_STARTUP_MESSAGE.format(why="terminated by SIGTERM"), file=sys.stderr)
        return 143
    except KeyboardInterrupt:
        print(_STARTUP_MESSAGE.format(why="interrupted"), file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
    return cli_main()
