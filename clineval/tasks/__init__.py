"""Task registry: task name -> Task instance. Each family registers its tasks here."""

from __future__ import annotations

from collections.abc import Callable

from clineval.errors import InputError
from clineval.tasks.base import Task

# Factories, imported lazily so that `clineval tasks` does not import torch & co.
_FACTORIES: dict[str, Callable[[], Task]] = {}


def register(name: str, factory: Callable[[], Task]) -> None:
    _FACTORIES[name] = factory


def _load_builtin() -> None:
    if _FACTORIES:
        return
    from clineval.tasks import clinconsensus, ner, tcm_sd

    for module in (ner, tcm_sd, clinconsensus):
        module.register_tasks(register)


def task_names() -> list[str]:
    _load_builtin()
    return list(_FACTORIES)


def get_task(name: str) -> Task:
    _load_builtin()
    if name not in _FACTORIES:
        raise InputError(f"unknown task {name!r} (known: {', '.join(_FACTORIES)})")
    return _FACTORIES[name]()
