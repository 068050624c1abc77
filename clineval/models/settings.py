"""What a model backend reads of its run's settings, and nothing else.

The task layer builds one `ModelSettings` from the run's config (`RunConfig.model_settings`)
and hands it down inside the `ModelRuntime`; the model layer never sees the config itself, so
a backend's inputs are the fields below, and a setting a model does not read cannot change
what it does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from clineval.models.spec import ModelSpec


@dataclass(frozen=True)
class ModelSettings:
    timeout_s: float  # --timeout: one HTTP attempt
    max_retries: int  # --max-retries
    concurrency: int  # --concurrency: the run's one in-flight limit
    # the model layer's --option items only (llm.*, llamacpp.*), read through their groups
    options: Mapping[str, str]
    batch_server: bool  # --batch / --batch-model: batches go to the model's server
    batch_file_out: Path | None  # --batch-file-out: the directory request files go into
    batch_file_in: tuple[str, ...]  # --batch-file-in: output files of earlier batches
    # the specs (as written) whose calls go through batches
    batched: frozenset[str] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        # frozen all the way down: a backend cannot change what another one reads
        object.__setattr__(self, "options", MappingProxyType(dict(self.options)))

    @property
    def batch_mode(self) -> bool:
        """Whether any call of the run goes through batches (server or files)."""
        return self.batch_server or self.batch_file_out is not None or bool(self.batch_file_in)

    def is_batched(self, spec: ModelSpec) -> bool:
        """Whether `spec`'s calls go through batches (--batch, --batch-model, batch files)."""
        return spec.text in self.batched
