"""What a model backend needs from the run it serves, and nothing about tasks.

`ModelRuntime` is handed to `open_chat_model` (and any backend that caches calls): the run's
model settings (`ModelSettings`: timeouts, retries, batch mode, the `llm.*` / `llamacpp.*`
options), its run store (the call cache), and its call state (the one concurrency limit,
per-model counters, local servers shared by the roles of a run). The task layer's RunContext
owns one; models never see the RunContext or the run's whole config.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from clineval.concurrency import RunCallState
from clineval.models.settings import ModelSettings
from clineval.models.spec import ModelSpec
from clineval.store import RunStore

BATCH_BUDGET = 10_000_000  # live call coroutines in batch mode: in effect no bound


@dataclass
class ModelRuntime:
    settings: ModelSettings
    store: RunStore
    calls: RunCallState
    # --batch-file-in: the output lines, read and validated once per run (batch_imports)
    _imports: dict[str, Any] | None = field(default=None, repr=False)

    @classmethod
    def for_run(cls, settings: ModelSettings, store: RunStore) -> ModelRuntime:
        # Batch mode: a round is every call a task issues at once, so the coroutine budget
        # must not cut it into pieces of 2 x --concurrency (clineval.concurrency).
        budget = BATCH_BUDGET if settings.batch_mode else None
        return cls(settings=settings, store=store, calls=RunCallState(settings.concurrency, budget))

    def batched(self, spec: ModelSpec) -> bool:
        """Whether `spec`'s calls go through batches (--batch, --batch-model, batch files)."""
        return self.settings.is_batched(spec)

    def batch_imports(self) -> dict[str, Any]:
        """--batch-file-in: custom_id -> LineOutcome of every output line, each line checked
        against the request files this run directory wrote (InputError FILE:LINE)."""
        if self._imports is None:
            from clineval.models.batch_lines import read_outputs, written_keys

            files = list(self.settings.batch_file_in)
            self._imports = read_outputs(files, written_keys(self.store)) if files else {}
        return self._imports
