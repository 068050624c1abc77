"""User text printed through rich is shown as it is: `[...]` is no markup, `:name:` no emoji.

The commands are the real ones (`clineval.cli.main` in process, their stdout and stderr as
printed): a run into `out[/i]run` finished, then ended in `internal error: MarkupError`; a model
`openai:x[bold]y` was shown as `openai:xy` and `openai:smile:` as a smiling face. The root is
clineval.console.make_console, the one way to make a Console; the last test holds every module
to it.
"""

from __future__ import annotations

import ast
from pathlib import Path

from cli_inprocess import Done, clineval_inprocess
from test_run_directory import FIXTURE, _run_args, _verdicts

PACKAGE = Path(__file__).resolve().parents[1] / "clineval"
ROOT = PACKAGE.parent
# A name rich would read as a closing tag with nothing open (MarkupError), as a style, and as
# an emoji code.
HOSTILE = "out[/i]run[bold]x:smile:"


def _clineval(*argv: str, cwd: Path) -> Done:
    # The results console is made once, at import, so COLUMNS cannot widen it in process; a
    # wide one keeps the long hostile paths on one line, as the assertions read them.
    from clineval.cli_output import stdout

    saved, stdout.width = stdout.width, 200
    try:
        return clineval_inprocess(*argv, cwd=cwd, env={"COLUMNS": "200"})
    finally:
        stdout.width = saved


def test_a_run_report_and_dry_run_print_a_hostile_directory_as_it_is(tmp_path: Path) -> None:
    verdicts = _verdicts(tmp_path / "verdicts.jsonl")  # every case: the run succeeds
    out = tmp_path / HOSTILE
    done = _clineval(*_run_args(out, verdicts), cwd=tmp_path)
    assert "internal error" not in done.stderr, done.stderr
    assert done.returncode == 0, done.stderr
    assert f"run directory: {out}" in done.stdout
    assert (out / "results.json").is_file()

    report = tmp_path / f"{HOSTILE}.html"
    done = _clineval("report", str(out), "-o", str(report), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"report: {report}" in done.stdout and report.is_file()

    done = _clineval(*_run_args(out, verdicts), "--dry-run", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "internal error" not in done.stderr


def test_model_names_are_shown_unmangled_in_the_dry_run_table(tmp_path: Path) -> None:
    argv = ["run", "clinconsensus", "--cases", str(FIXTURE), "-o", str(tmp_path / "run")]
    for model in ("openai:x[bold]y", "openai:smile:"):
        done = _clineval(
            *argv, "-m", f"{model}@http://127.0.0.1:9/v1", "--dry-run", "--limit", "1", cwd=tmp_path
        )
        assert done.returncode == 0, done.stderr
        assert model in done.stdout, done.stdout
        assert "\N{SMILING FACE WITH SMILING EYES}" not in done.stdout
        assert "\N{GRINNING FACE}" not in done.stdout


def test_every_console_is_made_by_make_console() -> None:
    """A module that made its own rich Console would read markup in user text again."""
    makers = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PACKAGE / "console.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
                if name == "Console":
                    makers.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert makers == [], f"make a Console with clineval.console.make_console: {makers}"
