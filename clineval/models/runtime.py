"""What a model backend needs from the run it serves, and nothing about tasks.

`ModelRuntime` is handed to `open_chat_model` (and any backend that caches calls): the run's
settings (timeouts, retries, the `llm.*` / `llamacpp.*` options), its run store (the call
cache), and its call state (the one concurrency limit, per-model counters, local servers
shared by the roles of a run). The task layer's RunContext owns one; models never see the
RunContext.
"""

from __future__ import annotations

from dataclasses import dataclass

from clineval.concurrency import RunCallState
from clineval.config import RunConfig
from clineval.store import RunStore


@dataclass
class ModelRuntime:
    config: RunConfig
    store: RunStore
    calls: RunCallState

    @classmethod
    def for_run(cls, config: RunConfig, store: RunStore) -> ModelRuntime:
        return cls(config=config, store=store, calls=RunCallState(config.concurrency))
