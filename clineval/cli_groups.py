"""The command groups `clineval data ...` and `clineval skills ...` (added to the app in
clineval.cli)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from clineval.cli_output import stdout
from clineval.errors import EMPTY_PATH, InputError


def path_text(text: str) -> str:
    """The parser of every path flag and argument: its value as given, refused when empty.
    typer would turn "" into Path("."), the working directory, so the check is on the text
    before that (click then names the flag, under any of its spellings)."""
    if not text.strip():
        raise typer.BadParameter(EMPTY_PATH)
    return text


def path_value(text: str) -> Path:
    """`path_text` as a Path, for the flags typed Path."""
    return Path(path_text(text))


data_app = typer.Typer(
    no_args_is_help=True, help="Data files: verify checksums, fetch, synthesize."
)
skills_app = typer.Typer(
    no_args_is_help=True, help="Agent Skills that drive clineval: list them, install them."
)


@data_app.command("verify")
def data_verify(
    data_dir: Annotated[str | None, typer.Option("--data-dir", parser=path_text)] = None,
    cache_dir: Annotated[
        str | None,
        typer.Option(
            "--cache-dir", help="Check this cache of `clineval data fetch`.", parser=path_text
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
    name: str,
    cache_dir: Annotated[Path | None, typer.Option("--cache-dir", parser=path_value)] = None,
    base_url: Annotated[
        str | None, typer.Option("--base-url", help="Mirror to fetch from instead.")
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
    task: str,
    out: Annotated[Path, typer.Option("--out", parser=path_value)],
    seed: Annotated[int, typer.Option("--seed")] = 0,
    data_dir: Annotated[str | None, typer.Option("--data-dir", parser=path_text)] = None,
    scale: Annotated[
        float, typer.Option("--scale", help="Size relative to the official splits, (0, 1].")
    ] = 1.0,
) -> None:
    """Write a synthetic (fixture) dataset in a benchmark's official format."""
    from clineval.benchmarks.registry import synthesizers

    available = synthesizers()
    if task not in available:
        known = ", ".join(available) or "none"
        raise InputError(f"no synthetic generator for {task!r} (available: {known})")
    for path in available[task](out, seed, data_dir, scale):
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
    stdout.print("install: clineval skills install [NAME...] --target DIR", markup=False)


@skills_app.command("install")
def skills_install(
    target: Annotated[
        Path,
        typer.Option(
            "--target", help="The agent's skills folder, e.g. .claude/skills.", parser=path_value
        ),
    ],
    names: Annotated[
        list[str] | None, typer.Argument(help="Skills to install (default: all).")
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Replace an existing skill folder that differs.")
    ] = False,
) -> None:
    """Copy skill folders into DIR/NAME; a different existing one is kept unless --force."""
    from clineval.skills_install import install

    for done in install(names or [], target, force=force):
        print(f"{done.status} {done.name}: {done.path}")
