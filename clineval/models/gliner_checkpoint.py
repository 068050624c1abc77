"""`gliner:PATH`: what a GLiNER checkpoint directory must hold and the package it needs, checked
before a run writes anything (the span tagger itself, which prompts the model with a
benchmark's types, belongs to the benchmark that uses it)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from clineval.models.spec import ModelSpec

from clineval.errors import InputError

GLINER_CONFIG = "gliner_config.json"
INSTALL_HINT = "pip install 'clineval[gliner]'"


def check_checkpoint_dir(path: str | Path) -> Path:
    """`path` is a directory holding a GLiNER checkpoint's config, else InputError."""
    directory = Path(path).expanduser()
    if not directory.is_dir():
        raise InputError("gliner model directory not found", path=directory)
    if not (directory / GLINER_CONFIG).is_file():
        raise InputError(
            f"not a GLiNER checkpoint (no {GLINER_CONFIG}; a Hugging Face token classifier "
            "runs as hf:PATH)",
            path=directory,
        )
    return directory


def require_package() -> None:
    """InputError when the `gliner` package is not installed (checked without importing it)."""
    try:
        found = importlib.util.find_spec("gliner") is not None
    except (ImportError, ValueError):  # a broken or half-imported installation
        found = False
    if not found:
        raise InputError(f"gliner:PATH needs the gliner package ({INSTALL_HINT})")


def check_spec_files(spec: ModelSpec, task_names: Callable[[], Sequence[str]]) -> None:
    """The registry's file check of `gliner:DIR` (clineval.models.registry): the checkpoint,
    and the package that reads it, before the run writes anything."""
    check_checkpoint_dir(spec.name)
    require_package()
