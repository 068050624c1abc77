"""The run record: manifest.json, results.json and samples.jsonl as typed models, written here
and read back here with validation (docs/run-directory.md, "The run record").

* `Manifest` (manifest.json) carries `schema_version`. A manifest without one was written
  before the record had a schema (version 0): it is read and upgraded in memory, and the next
  write stores it at the current version. A version newer than this code knows is refused with
  one line telling the user to upgrade clineval: guessing at its meaning could mix runs.
* results.json stays `{task: metrics}` on disk (readers iterate its keys as task names), and
  samples.jsonl one JSON object per line; the schema version each was written with is noted
  in the manifest's `files` ({"results.json": 1, ...}). A file the manifest gives no version
  (written by an older clineval, or by hand) is read under version 0's looser rules, so the
  report of an old run still works.

Every failure to read is one InputError naming the file (and the line); a damaged manifest
says that the run cannot be resumed or re-scored, as nothing about it can be trusted.
"""

from __future__ import annotations

import platform
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, TypeAdapter, ValidationError

from clineval.errors import InputError
from clineval.jsonio import TALLY_KEY, count_replacements
from clineval.jsonl import iter_json_objects
from clineval.rundir import (
    MANIFEST,
    RESULTS,
    SAMPLES,
    git_revision,
    package_versions,
    read_json,
    write_json,
    write_jsonl,
)
from clineval.secrets import redact
from clineval.version import __version__

# Bump a version when a change would make an older clineval misread the file (a key renamed,
# its type or meaning changed), and add the upgrade from the previous version below. Adding a
# key older readers can ignore needs no bump: every model here keeps keys it does not know.
SCHEMA_VERSION = 1  # of manifest.json
RESULTS_VERSION = 1
SAMPLES_VERSION = 1
FILE_VERSIONS = {RESULTS: RESULTS_VERSION, SAMPLES: SAMPLES_VERSION}

_NO_RECOVERY = "this run cannot be resumed or re-scored: run again with a new --output-dir"
_UPGRADE = "upgrade clineval to read it"


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


class _Record(BaseModel):
    # strict: a number stored as a string is damage, not something to coerce; extra="allow":
    # keys this version does not know (an additive change of a later one) are kept, not lost.
    model_config = ConfigDict(strict=True, extra="allow", validate_assignment=True)


class MetricRecord(_Record):
    """One declared metric as the run record keeps it (`MetricSpec.record`)."""

    key: str
    description: str = ""
    higher_is_better: bool = True
    headline: bool = True
    count: bool = False
    per_sample: str | None = None
    digits: int | None = None
    basis: str | None = None


class TaskNotes(_Record):
    """manifest.json["tasks"][task]: the runner's figures for the task's last evaluation, plus
    whatever the task noted (data file hashes, dropped spans, LLM counters, ...) as extra keys.
    """

    # How many stored records these results were computed from: `score` never replaces them
    # by results computed from fewer (unless --force).
    stored_records: int | None = Field(default=None, ge=0)
    seconds: float | None = None  # wall seconds of load + predict + evaluate
    phase_seconds: dict[str, float] | None = None  # {"load"|"predict"|"evaluate": seconds}
    # What the task's benchmark declares, so that other tools can rank runs without knowing
    # clineval: its family, the primary metric's key in results.json and its direction.
    family: str | None = None
    primary_metric: str | None = None
    higher_is_better: bool | None = None
    # Every declared metric with its direction, headline and count flags (primary first) and
    # the nested tables; absent from runs written before the record kept them.
    metrics: list[MetricRecord] | None = None
    tables: list[str] | None = None


class MergedShard(_Record):
    """One shard of a merged run (manifest.json["merged_from"])."""

    run_dir: str
    shard: str
    status: str | None = None
    started: str | None = None
    finished: str | None = None
    git_revision: str | None = None


class Manifest(_Record):
    """manifest.json. Fields not set are not written (a run that is not finished has no
    "finished"), so the file holds what happened, not a list of nulls."""

    schema_version: int = Field(default=SCHEMA_VERSION, ge=0)
    # Schema version of each output file as last written beside this manifest.
    files: dict[str, Annotated[int, Field(ge=0)]] = Field(default_factory=dict)
    clineval_version: str | None = None
    git_revision: str | None = None
    packages: dict[str, str] = Field(default_factory=dict)
    platform: str | None = None
    argv: list[str] = Field(default_factory=list)
    # RunConfig.model_dump() with credentials masked; kept loose here because `score` and
    # resume validate it themselves (RunConfig.from_manifest), with messages naming settings.
    config: dict[str, Any]
    seed: int | None = None
    started: str | None = None
    # "running", "finished", "failed", "merged", or "stopped: <why>"
    status: str | None = None
    tasks: dict[str, TaskNotes] = Field(default_factory=dict)
    resumed_from: str | None = None
    rescored: str | None = None
    finished: str | None = None
    # Loose on purpose: the model layer adds counters here as it grows.
    llm_usage: dict[str, Any] | None = None
    llm_calls: dict[str, Any] | None = None
    # --reuse: per earlier run directory, the stored calls of this run that came from it
    # ({"path", "calls", "by_model"}), counted from the store (so across resumes too)
    reused: list[dict[str, Any]] | None = None
    merged_from: list[MergedShard] | None = None
    missing_shards: list[str] | None = None
    merge_rows_copied: dict[str, int] | None = None
    # {source: lone surrogates replaced in what the last run / score read} (clineval.jsonio)
    invalid_unicode_replaced: dict[str, int] | None = None

    # While this command counts replacements: the record clineval.jsonio counts into.
    _replacements: dict[str, Any] | None = PrivateAttr(default=None)

    def as_written(self) -> dict[str, Any]:
        """The manifest as manifest.json holds it."""
        data = self.model_dump(exclude_unset=True)
        if self._replacements is not None:  # this command's count only; absent when none
            data.pop(TALLY_KEY, None)
            if TALLY_KEY in self._replacements:
                data[TALLY_KEY] = dict(self._replacements[TALLY_KEY])
        return data

    @contextmanager
    def counting_replacements(self) -> Iterator[None]:
        """While active, the lone surrogates replaced in the files and replies this command
        reads are counted into the manifest (as written), replacing an earlier command's."""
        self._replacements = {}
        with count_replacements(self._replacements):
            yield

    def resume(self, previous: Manifest) -> None:
        """Continue the run `previous` describes: its task notes and output-file versions."""
        self.resumed_from = previous.started
        self.tasks = dict(previous.tasks)
        self.files = dict(previous.files)

    def note_task(
        self,
        task: str,
        notes: Mapping[str, Any],
        *,
        stored_records: int,
        seconds: float,
        phase_seconds: Mapping[str, float],
        declared: Mapping[str, Any] | None = None,
    ) -> None:
        """Record a task's evaluation: the task's own notes, the runner's figures and what its
        benchmark declares of its primary metric."""
        entry = TaskNotes.model_validate(
            {
                **notes,
                **dict(declared or {}),
                "stored_records": stored_records,
                "seconds": seconds,
                "phase_seconds": dict(phase_seconds),
            }
        )
        # Assigned, not changed in place: a field only counts as set (and so is written) once
        # assigned, and a manifest read without "tasks" has only the default.
        self.tasks = {**self.tasks, task: entry}

    def mark_stopped(self, exc: BaseException) -> None:
        # "stopped: Terminated", not "stopped: Terminated: ": a signal carries no message
        why = ": ".join(filter(None, (type(exc).__name__, redact(str(exc)))))
        self.status = f"stopped: {why}"[:500]

    def mark_done(self, *, failed: bool) -> None:
        self.status = "failed" if failed else "finished"
        self.finished = _now()

    def mark_rescored(self) -> None:
        self.rescored = _now()

    def file_version(self, name: str) -> int:
        """The schema version `name` was written with (0: before versions, or not by clineval)."""
        return self.files.get(name, 0)


def new_manifest(config: dict[str, Any]) -> Manifest:
    """The manifest of a run about to start (or of a merge) with this public config."""
    return Manifest(
        schema_version=SCHEMA_VERSION,
        files={},
        clineval_version=__version__,
        git_revision=git_revision(),
        packages=package_versions(),
        platform=platform.platform(),
        argv=[redact(a) for a in sys.argv],
        config=config,
        seed=config.get("seed"),
        started=_now(),
        status="running",
        tasks={},
    )


# ---- writing -------------------------------------------------------------------------------


def write_manifest(run_dir: Path, manifest: Manifest, *, last_word: bool = False) -> None:
    """`last_word`: the final status of a run (stopped, finished); on a full disk it is
    written over the old manifest in place rather than not at all (rundir.atomic_write_text),
    so a run that ended is never left saying `running`."""
    write_json(run_dir / MANIFEST, manifest.as_written(), in_place_if_full=last_word)


_RESULTS = TypeAdapter(dict[str, dict[str, Any]], config=ConfigDict(strict=True))


class SampleRow(_Record):
    """One line of samples.jsonl: the task it belongs to, the sample's id, then the task's own
    fields (gold, prediction, per-sample figures, ...)."""

    task: str
    id: str | int


def write_outputs(
    run_dir: Path,
    manifest: Manifest,
    results: Mapping[str, dict[str, Any]],
    samples: Mapping[str, list[dict[str, Any]]],
) -> None:
    """results.json and samples.jsonl from every task's results; the manifest (written next by
    the caller) notes their versions. A row the readers would refuse is a bug, raised here."""
    _RESULTS.validate_python(dict(results))
    write_json(run_dir / RESULTS, results)

    def rows() -> Iterator[dict[str, Any]]:
        for task, task_rows in samples.items():
            for row in task_rows:
                line = {"task": task, **row}
                SampleRow.model_validate(line)
                yield line

    write_jsonl(run_dir / SAMPLES, rows())
    manifest.files = {**manifest.files, **FILE_VERSIONS}


# ---- reading -------------------------------------------------------------------------------


def _problem(exc: ValidationError) -> str:
    """The first problem of a ValidationError as `where: what` (never the value: it may be
    long, or hold text a model wrote)."""
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first.get("loc", ()))
    return f"{where}: {first['msg']}" if where else str(first["msg"])


def _from_v0(data: dict[str, Any]) -> dict[str, Any]:
    """Before version 1 a manifest had no schema_version and noted no file versions: its
    results.json and samples.jsonl are read under version 0's rules."""
    return {**data, "schema_version": 1, "files": {}}


# version -> the upgrade of a manifest of that version to the next one
_UPGRADES: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {0: _from_v0}


def _damaged(why: str, path: Path, line: int | None = None) -> InputError:
    return InputError(f"damaged run manifest ({why}); {_NO_RECOVERY}", path=path, line=line)


def read_manifest(run_dir: Path) -> Manifest:
    """A run directory's manifest.json, validated and upgraded to the current schema.

    A manifest that is not one (not UTF-8, not JSON, truncated, written by something else, a
    field of the wrong type) is an InputError naming it: nothing about its run can be trusted.
    """
    path = run_dir / MANIFEST
    if not path.is_file():
        raise InputError("no manifest.json: not a clineval run directory", path=run_dir)
    try:
        data = read_json(path)
    except InputError as exc:
        raise _damaged(exc.message, path, exc.line) from None
    if not isinstance(data, dict):
        raise _damaged("not a JSON object", path)
    version = data.get("schema_version", 0)
    if isinstance(version, bool) or not isinstance(version, int) or version < 0:
        raise _damaged("schema_version is not a whole number >= 0", path)
    if version > SCHEMA_VERSION:
        raise InputError(
            f"written by a newer clineval (run record schema {version}; clineval "
            f"{__version__} reads up to {SCHEMA_VERSION}): {_UPGRADE}",
            path=path,
        )
    while version < SCHEMA_VERSION:
        data = _UPGRADES[version](data)
        version += 1
    try:
        return Manifest.model_validate(data)
    except ValidationError as exc:
        raise _damaged(_problem(exc), path) from None


def _file_version(path: Path, manifest: Manifest | None, known: int) -> int:
    version = manifest.file_version(path.name) if manifest is not None else 0
    if version > known:
        raise InputError(
            f"written by a newer clineval ({path.name} schema {version}; clineval "
            f"{__version__} reads up to {known}): {_UPGRADE}",
            path=path,
        )
    return version


def read_results(run_dir: Path, manifest: Manifest | None) -> dict[str, dict[str, Any]]:
    """results.json as {task: metrics}. At version 0 an entry that is not an object is left out
    (a foreign or older writer); from version 1 it is an error."""
    path = run_dir / RESULTS
    version = _file_version(path, manifest, RESULTS_VERSION)
    data = read_json(path)
    if not isinstance(data, dict):
        raise InputError("expected a JSON object of {task: metrics}", path=path)
    if version == 0:
        return {str(task): metrics for task, metrics in data.items() if isinstance(metrics, dict)}
    try:
        return _RESULTS.validate_python(data)
    except ValidationError as exc:
        raise InputError(
            f"expected {{task: metrics}} objects ({_problem(exc)})", path=path
        ) from None


def iter_samples(run_dir: Path, manifest: Manifest | None) -> Iterator[dict[str, Any]]:
    """The lines of samples.jsonl as dicts, in file order. Each must be a JSON object; from
    version 1 also one with a string "task" and an "id" (a string or an integer)."""
    path = run_dir / SAMPLES
    version = _file_version(path, manifest, SAMPLES_VERSION)
    for lineno, row in iter_json_objects(path):
        if version >= 1:
            try:
                SampleRow.model_validate(row)
            except ValidationError as exc:
                raise InputError(
                    f"not a sample row ({_problem(exc)})", path=path, line=lineno
                ) from None
        yield row


@dataclass(frozen=True)
class RunFiles:
    """A run directory as every reader sees it (report, compare, export, the Python API): its
    manifest ({} when it has none), results.json and samples.jsonl grouped by task, each row
    keeping its "task" field."""

    path: Path
    manifest: dict[str, Any]
    results: dict[str, dict[str, Any]]
    samples: dict[str, list[dict[str, Any]]]


def read_run_files(run_dir: Path, *, with_samples: bool = True) -> RunFiles:
    """The one reader of a run directory's published files, with one set of rules.

    Without a manifest (a directory put together by hand or by an older tool) the files are
    read under the loosest rules (version 0). A row naming a task the run has no results for
    belongs to the run's task when it has exactly one: older clinevals wrote a row's own
    "task" field (a ClinConsensus case's task category) over the run's task name; the row
    keeps that value as "case_task"."""
    record = read_manifest(run_dir) if (run_dir / MANIFEST).exists() else None
    results = read_results(run_dir, record)
    samples: dict[str, list[dict[str, Any]]] = {}
    if with_samples and (run_dir / SAMPLES).exists():
        only = next(iter(results)) if len(results) == 1 else None
        for row in iter_samples(run_dir, record):
            task = str(row.get("task", "?"))
            if task not in results and only is not None:
                row["case_task"] = row.get("task")
                row["task"] = task = only
            samples.setdefault(task, []).append(row)
    manifest = record.as_written() if record is not None else {}
    return RunFiles(run_dir, manifest, results, samples)
