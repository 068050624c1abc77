"""Placeholder: this task family is being written (see the issues)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def register_tasks(register: Callable[[str, Callable[[], Any]], None]) -> None:
    return None
