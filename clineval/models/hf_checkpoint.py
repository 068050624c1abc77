"""Loading a local Hugging Face checkpoint for `hf:PATH`: offline, with one-line errors.

Every hf backend (TCM-SD sequence classifier, NER token classifier, causal-LM chat model)
loads its tokenizer and model the same way: from a directory only (`local_files_only`, no hub
at run time), with an InputError naming the path for a missing directory, a missing
torch/transformers install, or files transformers cannot read.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from clineval.models.spec import ModelSpec


def require_packages() -> None:
    """InputError when torch or transformers is not installed, found without importing them
    (seconds each): checked before a run writes anything (clineval.run_inputs)."""
    from clineval.errors import InputError

    missing = []
    for name in ("torch", "transformers"):
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):  # a broken or half-imported installation
            found = False
        if not found:
            missing.append(name)
    if missing:
        raise InputError(
            f"hf:PATH needs torch and transformers (pip install 'clineval[hf]'): "
            f"{' and '.join(missing)} not installed"
        )


def check_spec_files(spec: ModelSpec, task_names: Callable[[], Sequence[str]]) -> None:
    """The registry's file check of `hf:DIR` (clineval.models.registry): a checkpoint
    directory, and torch and transformers installed (else the run would write its manifest,
    then fail to import torch)."""
    from clineval.errors import InputError

    directory = Path(spec.name)
    if not directory.is_dir():
        raise InputError("hf model directory not found", path=directory)
    if not (directory / "config.json").is_file():
        raise InputError("not a Hugging Face checkpoint (no config.json)", path=directory)
    require_packages()


def load_checkpoint(path: str | Path, model_class: str) -> tuple[Any, Any]:
    """(tokenizer, model in eval mode) of `path`; `model_class` is a transformers Auto class
    name such as "AutoModelForCausalLM"."""
    from clineval.errors import InputError

    directory = Path(path)
    if not directory.is_dir():
        raise InputError("hf model directory not found", path=directory)
    if not (directory / "config.json").is_file():
        raise InputError("not a Hugging Face checkpoint (no config.json)", path=directory)
    require_packages()
    try:
        import torch  # noqa: F401  (fail early with a clear message)
        import transformers
    except ImportError as exc:
        raise InputError(
            f"hf:PATH needs torch and transformers (pip install 'clineval[hf]'): {exc}"
        ) from None
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(directory, local_files_only=True)
        model = getattr(transformers, model_class).from_pretrained(directory, local_files_only=True)
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot load the checkpoint: {exc}", path=directory) from None
    model.eval()
    return tokenizer, model
