"""`clineval ARGS` called in this process, for the tests of settings, checks and rendering
where a fresh interpreter adds nothing but its start-up (about a second of CPU a call).

`clineval_inprocess` has the shape of `cli_process.clineval_process`'s answer (returncode,
stdout, stderr), so a test reads the same either way. What a process would drop at exit and
this one keeps is put back after each call: the environment, the working directory, the
progress mode, the credentials the call registered. Tests of what only a process shows (the
exact streams of the console script, import-time behaviour, signals, plugins on the path)
keep using `cli_process`.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from clineval import progress, secrets
from clineval.cli import main


@dataclass(frozen=True)
class Done:
    """What the call left: its exit code and what it printed on each stream."""

    args: list[str]
    returncode: int
    stdout: str
    stderr: str


def clineval_inprocess(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None, quiet: bool = True
) -> Done:
    """`clineval [--quiet] ARGS` run by `clineval.cli.main` in this process, in `cwd` if given,
    with `env` added to the environment for the call only."""
    argv = ["--quiet", *args] if quiet else list(args)
    out, err = io.StringIO(), io.StringIO()
    saved_env = dict(os.environ)
    saved_secrets = set(secrets._registered)
    # pytest's log capture holds the root logger, so `logging.basicConfig` in the command
    # would add nothing: without its handlers, the command's warnings reach `stderr` as in a
    # process (and not pytest's caplog)
    root = logging.getLogger()
    saved_handlers, saved_level = root.handlers[:], root.level
    root.handlers = []
    try:
        os.environ.update(env or {})
        with contextlib.ExitStack() as stack:
            if cwd is not None:
                stack.enter_context(contextlib.chdir(cwd))
            stack.enter_context(contextlib.redirect_stdout(out))
            stack.enter_context(contextlib.redirect_stderr(err))
            try:
                code = main(argv)
            except SystemExit as exc:  # ends a process the same way (click's completion)
                code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    finally:
        os.environ.clear()
        os.environ.update(saved_env)
        with secrets._lock:
            secrets._registered.clear()
            secrets._registered.update(saved_secrets)
        progress.set_quiet(False)
        root.handlers = saved_handlers
        root.setLevel(saved_level)
    return Done(argv, code, out.getvalue(), err.getvalue())


def bash_completion(words: str) -> list[str]:
    """What bash's tab completion is offered for the command line `words` (its last word the
    one being completed), asked of the CLI in this process as the bash script asks it."""
    cword = str(len(words.split()) - 1)
    asked = {"_CLINEVAL_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": cword}
    done = clineval_inprocess(env=asked, quiet=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()
