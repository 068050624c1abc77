"""Progress display shared by every task: rich bars on a terminal, quiet log lines otherwise."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from typing import TypeVar

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

T = TypeVar("T")
log = logging.getLogger("clineval")

_quiet = False
console = Console(stderr=True)


def set_quiet(quiet: bool) -> None:
    global _quiet
    _quiet = quiet


def is_quiet() -> bool:
    return _quiet


def make_progress() -> Progress:
    """A rich Progress with done/total, rate-friendly columns and ETA; disabled when quiet."""
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        TextColumn("{task.fields[status]}"),
        console=console,
        disable=_quiet,
        transient=False,
    )


def track(items: Iterable[T], total: int | None = None, description: str = "") -> Iterator[T]:
    """Iterate with a progress bar (or a single log line when quiet)."""
    if _quiet:
        log.info("%s (%s items)", description, total if total is not None else "?")
        yield from items
        return
    with make_progress() as progress:
        task_id = progress.add_task(description, total=total, status="")
        for item in items:
            yield item
            progress.advance(task_id)
