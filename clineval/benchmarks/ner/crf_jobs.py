"""Training several CRF baselines at once, one worker process per core.

crfsuite trains on one core. A run of the four NER tasks needs four models, and the first task
would otherwise train its model while the second core idles, then the next, and so on. Here the
missing models are trained up front in a small process pool (largest corpus first, so the
two workers finish close together); each worker loads its own training split, so parsing
parallelizes too. The workers report each part of a training (reading, feature generation,
each L-BFGS iteration) through a queue as `Event`s, which drive the progress display in the
parent. The parent alone writes to the run store.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

from clineval.benchmarks.ner.crf import CrfConfig, train_crf

READING = "reading the training split"
# (dataset, part, done, total): one report of a training's progress, from any process
Event = tuple[str, str, int, "int | None"]


@dataclass(frozen=True)
class CrfJob:
    dataset: str
    data_root: str | None  # None: the fetch cache alone (clineval.datapaths)
    splits: tuple[str, ...]
    config: CrfConfig


@dataclass
class TrainedCrf:
    job: CrfJob
    model: bytes
    documents: int
    seconds: float
    files: list[dict[str, Any]] = field(default_factory=list)

    def meta(self) -> dict[str, Any]:
        return {
            "dataset": self.job.dataset,
            "splits": list(self.job.splits),
            "documents": self.documents,
            "files": self.files,
            "config": self.job.config.as_dict(),
            "train_seconds": self.seconds,
        }


def run_job(job: CrfJob, events: Any | None = None) -> TrainedCrf:
    """Load the job's training splits and train (in whatever process calls it); each part's
    progress goes to `events.put(Event)` when given."""
    from clineval.benchmarks.ner.corpora import load_ner_split

    def report(part: str, done: int, total: int | None) -> None:
        if events is not None:
            events.put((job.dataset, part, done, total))

    started = time.time()
    documents = []
    files: list[dict[str, Any]] = []
    for i, split in enumerate(job.splits):
        report(READING, i, len(job.splits))
        prepared = load_ner_split(job.dataset, split, job.data_root)
        documents.extend(prepared.documents)
        files.extend(prepared.notes.get("files", []))
    report(READING, len(job.splits), len(job.splits))
    model = train_crf(documents, job.config, report if events is not None else None)
    return TrainedCrf(job, model, len(documents), round(time.time() - started, 2), files)


def default_workers() -> int:
    return max(1, min(2, os.cpu_count() or 1))


def train_many(
    jobs: Sequence[CrfJob], workers: int, on_event: Callable[[Event], None]
) -> Iterator[TrainedCrf]:
    """Train every job; yield each result as soon as it is ready (in completion order). Every
    `Event` of every job reaches `on_event`, in this process, before its job's result."""
    if workers <= 1 or len(jobs) <= 1:
        for job in jobs:
            yield _in_process(job, on_event)
        return
    # spawn, not fork: the parent holds threads (progress display) and an open SQLite file.
    context = multiprocessing.get_context("spawn")
    try:
        manager = context.Manager()
    except OSError:  # no way to start helper processes here (sandbox, no /dev/shm): one by one
        for job in jobs:
            yield _in_process(job, on_event)
        return
    with (
        manager,
        ProcessPoolExecutor(max_workers=min(workers, len(jobs)), mp_context=context) as pool,
    ):
        events = manager.Queue()
        pending: set[Future[TrainedCrf]] = {pool.submit(run_job, job, events) for job in jobs}
        while pending:
            done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
            _drain(events, on_event)
            for future in done:
                yield future.result()
        _drain(events, on_event)


def _in_process(job: CrfJob, on_event: Callable[[Event], None]) -> TrainedCrf:
    class _Events:
        def put(self, event: Event) -> None:
            on_event(event)

    return run_job(job, _Events())


def _drain(events: Any, on_event: Callable[[Event], None]) -> None:
    while True:
        try:
            event = events.get_nowait()
        except queue.Empty:
            return
        on_event(event)
