"""The command groups `clineval data ...` and `clineval skills ...` (added to the app in
clineval.cli)."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from clineval.cli_output import stdout
from clineval.errors import InputError
from clineval.messages import EMPTY_PATH


def path_text(text: str) -> str:
    """The parser of every path flag and argument: its value as given, refused when empty.
    typer would turn "" into Path("."), the working directory, so the check is on the text
    before that (click then names the flag, under any of its spellings)."""
    if not text.strip():
        raise typer.BadParameter(EMPTY_PATH)
    return text


# ASCII only, as every `--option` value (clineval.options): typer's own conversion reads
# "1_0" as 10, which no other tool reading the same command line would.
_WHOLE = re.compile(r"[+-]?[0-9]+")
_DECIMAL = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?")


def whole_number(text: str | int) -> int:
    """The parser of every integer flag: ASCII digits only (bounds are the config's). typer
    hands a value it has already converted back to its parser: that passes as it is."""
    if isinstance(text, int):
        return text
    if not _WHOLE.fullmatch(text.strip()):
        raise typer.BadParameter(f"{text[:40]!r} is not an integer (ASCII digits only)")
    return int(text)


def decimal_number(text: str | float) -> float:
    """The parser of every number flag: an ASCII decimal. nan and inf pass, for the run's
    config to refuse them in its own words ("must be a finite number")."""
    if isinstance(text, float | int):
        return float(text)
    if text.strip().lower().lstrip("+-") in ("nan", "inf", "infinity"):
        return float(text)
    if not _DECIMAL.fullmatch(text.strip()):
        raise typer.BadParameter(f"{text[:40]!r} is not a number (ASCII digits only)")
    value = float(text)
    if math.isinf(value):  # 1e400: written as a number, read as inf; say what was written
        raise typer.BadParameter(f"{text.strip()[:40]!r} is too large (not a finite number)")
    return value


def path_value(text: str) -> Path:
    """`path_text` as a Path, for the flags typed Path."""
    return Path(path_text(text))


data_app = typer.Typer(
    no_args_is_help=True, help="Data files: verify checksums, fetch, synthesize."
)
skills_app = typer.Typer(
    no_args_is_help=True, help="Agent Skills that drive clineval: list them, install them."
)


def _missing_output_dir(ctx: typer.Context, param: object, value: Path | None) -> Path | None:
    """Callback of an old, hidden spelling of --output-dir (declared after it, so processed
    after it): with neither given, click's own "Missing option" usage error, raised while
    parsing as for any required option (so a parse-only check of a command line sees it)."""
    if value is None and ctx.params.get("output_dir") is None and not ctx.resilient_parsing:
        import typer.core

        click = getattr(typer.core, "_click", None) or getattr(typer.core, "click")  # noqa: B009
        canonical = next(p for p in ctx.command.params if p.name == "output_dir")
        raise click.exceptions.MissingParameter(ctx=ctx, param=canonical)
    return value


def output_dir_of(canonical: Path | None, old: Path | None, old_flag: str) -> Path:
    """The directory of `--output-dir` / `-o` or of its older spelling `old_flag`, which still
    works but is no longer shown (one of the two, checked to be given by the callback)."""
    if canonical is not None and old is not None:
        raise InputError(f"give --output-dir or {old_flag} (its old spelling), not both")
    found = canonical if canonical is not None else old
    assert found is not None  # _missing_output_dir refused the command line otherwise
    return found


def _complete_corpora(incomplete: str) -> list[str]:
    # imported only when the shell asks: the registry loads every benchmark
    from clineval.benchmarks.registry import data_sources

    return [name for name in data_sources() if name.startswith(incomplete)]


def _complete_synthesizers(incomplete: str) -> list[str]:
    from clineval.benchmarks.registry import synthesizers

    return [name for name in synthesizers() if name.startswith(incomplete)]


@data_app.command("verify")
def data_verify(
    data_dir: Annotated[
        str | None,
        typer.Option("--data-dir", metavar="DIR", help="Data root to check.", parser=path_text),
    ] = None,
    cache_dir: Annotated[
        str | None,
        typer.Option(
            "--cache-dir",
            metavar="DIR",
            help="Check this cache of `clineval data fetch`.",
            parser=path_text,
        ),
    ] = None,
) -> None:
    """Check every known data file's sha256 against the manifest shipped in the package.

    Checks the directories named; with neither option, the data root and the default fetch
    cache ($CLINEVAL_CACHE_DIR or ~/.cache/clineval/data) where they exist."""
    from clineval.data.checksums import verify_all

    if not verify_all(data_dir, console=stdout, cache_dir=cache_dir):
        raise typer.Exit(code=2)


@data_app.command("fetch")
def data_fetch(
    name: Annotated[
        str,
        typer.Argument(
            metavar="NAME",
            help="Corpus to fetch (an unknown name lists the known ones).",
            autocompletion=_complete_corpora,
        ),
    ],
    cache_dir: Annotated[
        Path | None,
        typer.Option(
            "--cache-dir",
            metavar="DIR",
            help="Cache to fetch into (default: $CLINEVAL_CACHE_DIR or ~/.cache/clineval/data).",
            parser=path_value,
        ),
    ] = None,
    base_url: Annotated[
        str | None,
        typer.Option("--base-url", metavar="URL", help="Mirror to fetch from instead."),
    ] = None,
) -> None:
    """Download a corpus from its official public address into a cache, checking sha256.

    Each file streams to a staging file, bounded by its size in the package manifest, and
    enters the cache only once its sha256 matched; cached files are checked again first."""
    from clineval.benchmarks.registry import data_sources
    from clineval.data.fetch import fetch

    sources = data_sources()
    if name not in sources:
        raise InputError(f"unknown corpus {name!r} (known: {', '.join(sources)})")
    source = sources[name]
    for path in fetch(source, cache_dir=cache_dir, base_url=base_url):
        stdout.print(f"ok {path}")
    if source.notice is not None:
        stdout.print(source.notice)


@data_app.command("synth")
def data_synth(
    task: Annotated[
        str,
        typer.Argument(
            metavar="TASK",
            help="A benchmark's synthetic fixture (a name it declares; a wrong one lists them).",
            autocompletion=_complete_synthesizers,
        ),
    ],
    output_dir: Annotated[
        Path | None,
        typer.Option(
            "--output-dir", "-o", metavar="DIR", help="Directory to write into.", parser=path_value
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", hidden=True, callback=_missing_output_dir, parser=path_value),
    ] = None,
    seed: Annotated[
        int, typer.Option("--seed", parser=whole_number, metavar="N", help="Seed of the generator.")
    ] = 0,
    data_dir: Annotated[
        str | None,
        typer.Option(
            "--data-dir",
            metavar="DIR",
            help="Data root with the label and knowledge files.",
            parser=path_text,
        ),
    ] = None,
    scale: Annotated[
        float,
        typer.Option(
            "--scale",
            parser=decimal_number,
            metavar="S",
            help="Size relative to the official splits, (0, 1].",
        ),
    ] = 1.0,
) -> None:
    """Write a synthetic (fixture) dataset in a benchmark's official format."""
    from clineval.benchmarks.registry import synthesizers

    target = output_dir_of(output_dir, out, "--out")

    available = synthesizers()
    if task not in available:
        known = ", ".join(available) or "none"
        raise InputError(f"no synthetic generator for {task!r} (available: {known})")
    for path in available[task](target, seed, data_dir, scale):
        stdout.print(f"wrote {path}")


@skills_app.command("list")
def skills_list() -> None:
    """The skills shipped with clineval: name and when an agent should use it."""
    from clineval.skills_install import list_skills

    table = Table(show_header=True)
    table.add_column("skill", no_wrap=True)
    table.add_column("description", overflow="fold")
    for skill in list_skills():
        table.add_row(skill.name, skill.description)
    stdout.print(table)
    stdout.print("install: clineval skills install [NAME...] --output-dir DIR", markup=False)


@skills_app.command("install")
def skills_install(
    names: Annotated[
        list[str] | None,
        typer.Argument(metavar="NAME", help="Skills to install (default: all)."),
    ] = None,
    output_dir: Annotated[
        Path | None,
        typer.Option(
            "--output-dir",
            "-o",
            metavar="DIR",
            help="The agent's skills folder, e.g. .claude/skills.",
            parser=path_value,
        ),
    ] = None,
    target: Annotated[
        Path | None,
        typer.Option("--target", hidden=True, callback=_missing_output_dir, parser=path_value),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Replace an existing skill folder that differs.")
    ] = False,
) -> None:
    """Copy skill folders into DIR/NAME; a different existing one is kept unless --force."""
    from clineval.skills_install import install

    folder = output_dir_of(output_dir, target, "--target")
    for done in install(names or [], folder, force=force):
        print(f"{done.status} {done.name}: {done.path}")
