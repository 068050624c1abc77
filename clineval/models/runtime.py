"""What a model backend needs from the run it serves, and nothing about tasks.

`ModelRuntime` is handed to `open_chat_model` (and any backend that caches calls): the run's
settings (timeouts, retries, the `llm.*` / `llamacpp.*` options), its run store (the call
cache), and its call state (the one concurrency limit, per-model counters, local servers
shared by the roles of a run). The task layer's RunContext owns one; models never see the
RunContext.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from clineval.concurrency import RunCallState
from clineval.config import RunConfig
from clineval.models.spec import ModelSpec
from clineval.store import RunStore

BATCH_BUDGET = 10_000_000  # live call coroutines in batch mode: in effect no bound


@dataclass
class ModelRuntime:
    config: RunConfig
    store: RunStore
    calls: RunCallState
    # --batch-file-in: the output lines, read and validated once per run (batch_imports)
    _imports: dict[str, Any] | None = field(default=None, repr=False)

    @classmethod
    def for_run(cls, config: RunConfig, store: RunStore) -> ModelRuntime:
        # Batch mode: a round is every call a task issues at once, so the coroutine budget
        # must not cut it into pieces of 2 x --concurrency (clineval.concurrency).
        budget = BATCH_BUDGET if config.batch_mode else None
        return cls(config=config, store=store, calls=RunCallState(config.concurrency, budget))

    def batched(self, spec: ModelSpec) -> bool:
        """Whether `spec`'s calls go through batches (--batch, --batch-model, batch files)."""
        models = [self.config.model, *self.config.judges]
        written = next((m for m in models if ModelSpec.parse(m).label == spec.label), spec.label)
        return self.config.batched(written)

    def batch_imports(self) -> dict[str, Any]:
        """--batch-file-in: custom_id -> LineOutcome of every output line, each line checked
        against the request files this run directory wrote (InputError FILE:LINE)."""
        if self._imports is None:
            from clineval.models.batch import read_outputs, written_keys

            self._imports = (
                read_outputs(self.config.batch_file_in, written_keys(self.store))
                if self.config.batch_file_in
                else {}
            )
        return self._imports
