"""Training several CRF baselines at once, one worker process per core.

crfsuite trains on one core. A run of the four NER tasks needs four models, and the first task
would otherwise train its model while the second core idles, then the next, and so on. Here the
missing models are trained up front in a small process pool (largest corpus first, so the
two workers finish close together); each worker loads its own training split, so parsing
parallelizes too. The workers report each L-BFGS iteration through a queue, which drives one
progress bar in the parent. The parent alone writes to the run store.
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


def run_job(job: CrfJob, ticks: Any | None = None) -> TrainedCrf:
    """Load the job's training splits and train (in whatever process calls it)."""
    from clineval.benchmarks.ner.corpora import load_ner_split

    started = time.time()
    documents = []
    files: list[dict[str, Any]] = []
    for split in job.splits:
        prepared = load_ner_split(job.dataset, split, job.data_root)
        documents.extend(prepared.documents)
        files.extend(prepared.notes.get("files", []))
    on_iteration = None if ticks is None else (lambda: ticks.put(1))
    model = train_crf(documents, job.config, on_iteration=on_iteration)
    return TrainedCrf(job, model, len(documents), round(time.time() - started, 2), files)


def default_workers() -> int:
    return max(1, min(2, os.cpu_count() or 1))


def train_many(
    jobs: Sequence[CrfJob], workers: int, on_iteration: Callable[[], None]
) -> Iterator[TrainedCrf]:
    """Train every job; yield each result as soon as it is ready (in completion order)."""
    if workers <= 1 or len(jobs) <= 1:
        for job in jobs:
            yield _in_process(job, on_iteration)
        return
    # spawn, not fork: the parent holds threads (progress display) and an open SQLite file.
    context = multiprocessing.get_context("spawn")
    try:
        manager = context.Manager()
    except OSError:  # no way to start helper processes here (sandbox, no /dev/shm): one by one
        for job in jobs:
            yield _in_process(job, on_iteration)
        return
    with (
        manager,
        ProcessPoolExecutor(max_workers=min(workers, len(jobs)), mp_context=context) as pool,
    ):
        ticks = manager.Queue()
        pending: set[Future[TrainedCrf]] = {pool.submit(run_job, job, ticks) for job in jobs}
        while pending:
            done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
            _drain(ticks, on_iteration)
            for future in done:
                yield future.result()
        _drain(ticks, on_iteration)


def _in_process(job: CrfJob, on_iteration: Callable[[], None]) -> TrainedCrf:
    class _Ticks:
        def put(self, _: int) -> None:
            on_iteration()

    return run_job(job, _Ticks())


def _drain(ticks: Any, on_iteration: Callable[[], None]) -> None:
    while True:
        try:
            ticks.get_nowait()
        except queue.Empty:
            return
        on_iteration()
