"""Task registry: task name -> Task instance. Each family registers its tasks here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from clineval.errors import InputError
from clineval.options import OptionGroup
from clineval.tasks.base import Task

# Factories, imported lazily so that `clineval tasks` does not import torch & co.
_FACTORIES: dict[str, Callable[[], Task[Any]]] = {}


def register(name: str, factory: Callable[[], Task[Any]]) -> None:
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


def get_task(name: str) -> Task[Any]:
    _load_builtin()
    if name not in _FACTORIES:
        raise InputError(f"unknown task {name!r} (known: {', '.join(_FACTORIES)})")
    return _FACTORIES[name]()


def option_groups() -> list[OptionGroup]:
    """Every declared `--option` group: the task families' and the model layer's."""
    from clineval.models.options import MODEL_OPTION_GROUPS

    groups: list[OptionGroup] = []
    for name in task_names():
        group = get_task(name).option_group
        if group is not None and group not in groups:
            groups.append(group)
    return [*groups, *MODEL_OPTION_GROUPS]


def active_namespaces(tasks: list[str]) -> set[str]:
    """The option namespaces a run of `tasks` reads (the model layer's always: any task may
    use a chat model, as candidate or judge)."""
    from clineval.models.options import MODEL_OPTION_GROUPS

    active = {group.namespace for group in MODEL_OPTION_GROUPS}
    for name in tasks:
        group = get_task(name).option_group
        if group is not None:
            active.add(group.namespace)
    return active
