"""What every task family implements, and the context a run hands to it.

A task owns its own flow but always in three visible steps:
  load(ctx)            -> the samples with their gold answers (no model involved)
  predict(ctx, data)   -> run the model; every output goes to the run store as it is made,
                          and outputs already stored are not computed again (resume)
  evaluate(ctx, data)  -> read outputs from the store, compute metrics and per-sample records
`clineval score` runs load + evaluate only, so evaluation must never call a model.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from clineval.config import RunConfig
from clineval.models.backends import Backend, resolve_backend
from clineval.models.runtime import ModelRuntime
from clineval.models.spec import ModelSpec
from clineval.options import OptionGroup
from clineval.store import RunStore

if TYPE_CHECKING:
    from clineval.plan import CallPlan


@dataclass
class RunContext:
    """What a task's steps get of the run: `config` (the run's settings: `seed`,
    `temperature`, `max_tokens`, `limit`, `options`, ...), `store` (its records and calls),
    `output_dir`, `data_root`, the `model` spec and, resolved from it, `backend` (its
    `kind`); `note(task, key, value)` adds a note to the task's entry in the manifest."""

    config: RunConfig
    store: RunStore
    output_dir: Path
    data_root: Path | None
    model: ModelSpec
    # Per-task notes for the manifest (data file hashes, dropped/moved gold spans, ...).
    manifest_notes: dict[str, dict[str, Any]] = field(default_factory=dict)
    # What the model backends get of this run (the settings they read, store, call state: the
    # one concurrency limit, call counters, local servers); built from config and store.
    runtime: ModelRuntime = field(init=False)

    def __post_init__(self) -> None:
        self.runtime = ModelRuntime.for_run(self.config.model_settings(), self.store)

    @cached_property
    def backend(self) -> Backend:
        """What the run's model is (chat, checkpoint, baseline, predictions), resolved once."""
        return resolve_backend(self.model)

    def use_store(self, store: RunStore) -> None:
        """Continue the run on another store (the runner loads from a read-only one first)."""
        self.store = store
        self.runtime.store = store

    def note(self, task: str, key: str, value: Any) -> None:
        self.manifest_notes.setdefault(task, {})[key] = value


@dataclass
class TaskResult:
    """metrics -> results.json[task]; samples -> samples.jsonl (each gets a "task" field)."""

    metrics: dict[str, Any]
    samples: list[dict[str, Any]]
    # Reasons for a non-zero exit after the results are written (e.g. judge-error rate too high).
    errors: list[str] = field(default_factory=list)
    # What a user should read although the run succeeded (e.g. cases left out of a figure):
    # shown once the results are written, so that a write that fails ends with its error alone.
    warnings: list[str] = field(default_factory=list)
    # The ids of the evaluated samples that have no model output (a predictions file without
    # them, a call that failed after its retries). None: the task does not say, and the
    # runner finds them from the kit's `prediction` records (clineval.benchmarks.missing).
    # Any of them makes the run exit 1 once its results are written: one rule for every
    # benchmark, built-in or plugin.
    missing: list[str] | None = None


@dataclass(frozen=True)
class DataFileStatus:
    """One data file of a task as `clineval tasks` lists it: its path (relative to the data
    root, or a name) and whether it is there ("ok", "missing", ...)."""

    relative_path: str
    status: str  # "ok" | "missing" | "checksum mismatch" | "not checked"


DataT = TypeVar("DataT")


class Task(ABC, Generic[DataT]):
    """A task family member; DataT is what its `load` returns (its evaluation set)."""

    name: str
    family: str
    description: str
    option_group: OptionGroup | None = None  # the task family's `--option` keys

    @abstractmethod
    def data_status(self, data_root: Path | None) -> list[DataFileStatus]:
        """Status of each data file this task reads (for `clineval tasks`)."""

    @abstractmethod
    def load(self, ctx: RunContext) -> DataT:
        """Load the evaluation samples (gold included). Raise InputError on bad data."""

    @abstractmethod
    def predict(self, ctx: RunContext, data: DataT) -> None:
        """Produce model outputs for every sample not yet in the store, storing each."""

    @abstractmethod
    def evaluate(self, ctx: RunContext, data: DataT) -> TaskResult:
        """Score stored outputs. Must not call any model."""

    def plan(self, ctx: RunContext, data: DataT, calls: CallPlan) -> None:
        """List the model calls `predict` would make to `calls` (clineval run --dry-run),
        building each request as predict does. Must not call a model or write anything.
        Tasks whose model is not a chat model add nothing."""
        return None
