"""The `clineval` command. Exit codes: 0 success, 2 bad input, 1 internal error.

One module per command group, each command a thin typer function (its flags, then one call
into the layer that does the work): `run` (clineval.cli.run), `score` and what run and score
print under --json (results), the commands that read a run directory (reports), `tasks`
(tasks); the app and its global options are in clineval.cli.app, help and usage errors in
clineval.cli.help, and the one place that turns errors into exit codes in clineval.cli.exits.
The `data` and `skills` groups are in clineval.cli_groups, what is printed in
clineval.cli_output.

Internal: not part of clineval's public API (`clineval`, `clineval.benchmarks`); `main` is
the entry point.
"""

from __future__ import annotations

# each module registers its commands on `app`, in the order `clineval --help` lists them
# isort: off
import clineval.cli.run
import clineval.cli.reports
import clineval.cli.head_to_head
import clineval.cli.tasks  # noqa: F401

# isort: on
from clineval.cli.app import app
from clineval.cli.exits import _main, _masked_console, main
from clineval.cli.help import _click_module, _help_as_written

__all__ = [
    "_click_module",
    "_help_as_written",
    "_main",
    "_masked_console",
    "app",
    "main",
]
