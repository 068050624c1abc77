"""The answers a finished run stored for a generative task, read back by a later run (a
head-to-head comparison of runs), through the one generic accessor `finished_run_answers`.

Every task that asks a candidate for free text through the judging kit (a rubric, pairwise or
graded benchmark, built in or a plugin) keeps one `answer` record per item in its run store
(judge/verdict.py `AnswerRecord`: the text, or the error that left it without one), and a
samples.jsonl row per item with the `query` the judge saw. So the answers are read by the
record kind, never by a benchmark's name: any such task of any run is served the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from clineval.errors import InputError
from clineval.jsonl import iter_json_objects
from clineval.judge.verdict import ANSWER_KIND, read_answers
from clineval.reportkit.rundata import is_fixture_task, load_run
from clineval.run_record import read_manifest
from clineval.rundir import SAMPLES
from clineval.store import STORE_FILENAME, RunStore


@dataclass(frozen=True)
class RunAnswers:
    """One finished run's answers to one generative task: `answers` {item id: text} (items
    whose answer failed are left out), `questions` {item id: the query its judge saw}, the
    run's `model` (its --model spec as the manifest holds it), and whether the task ran on
    fixture or synthetic data (a comparison of such runs is no benchmark result either)."""

    run_dir: Path
    task: str
    model: str
    answers: dict[str, str]
    questions: dict[str, str]
    fixture: bool = False  # the run's task ran on fixture or synthetic data


def answer_tasks(run_dir: Path) -> list[str]:
    """The tasks of a run directory that stored candidate answers."""
    if not (run_dir / STORE_FILENAME).is_file():
        raise InputError("not a run directory (no run store)", path=run_dir)
    with RunStore(run_dir / STORE_FILENAME, read_only=True) as store:
        return [t for t in store.tasks() if ANSWER_KIND in store.record_kinds(t)]


def _questions(run_dir: Path, task: str) -> dict[str, str]:
    path = run_dir / SAMPLES
    if not path.is_file():
        raise InputError("not a finished run (no samples.jsonl)", path=run_dir)
    out: dict[str, str] = {}
    for _, row in iter_json_objects(path, what="samples file"):
        query = row.get("query")
        if row.get("task") == task and isinstance(query, str) and "id" in row:
            out[str(row["id"])] = query
    return out


def finished_run_answers(run_dir: Path, task: str | None = None) -> RunAnswers:
    """The answers `run_dir` stored for `task` (None: the one task of the run that stored
    answers). InputError naming the directory when it is not a finished run, holds no
    stored answers, holds several tasks with answers and `task` is None, or lacks `task`."""
    tasks = answer_tasks(run_dir)
    manifest = read_manifest(run_dir)
    if not tasks:
        raise InputError(
            "the run stored no candidate answers (not a generative task)", path=run_dir
        )
    if task is None:
        if len(tasks) > 1:
            raise InputError(
                f"the run stored answers for several tasks ({', '.join(tasks)}): name one "
                "with --task",
                path=run_dir,
            )
        task = tasks[0]
    elif task not in tasks:
        raise InputError(
            f"the run stored no answers for task {task!r} (it has: {', '.join(tasks)})",
            path=run_dir,
        )
    with RunStore(run_dir / STORE_FILENAME, read_only=True) as store:
        records = read_answers(store.records(task, ANSWER_KIND))
    answers = {i: r.text for i, r in records.items() if r.text is not None}
    if not answers:
        raise InputError(f"the run stored no answer text for task {task!r}", path=run_dir)
    questions = _questions(run_dir, task)
    if not questions.keys() & answers.keys():
        raise InputError(
            f"samples.jsonl holds the query of no answered item of task {task!r}", path=run_dir
        )
    model = manifest.config.get("model")
    fixture = is_fixture_task(load_run(run_dir, with_samples=False), task)
    return RunAnswers(run_dir, task, str(model), answers, questions, fixture)


def common_items(runs: Sequence[RunAnswers]) -> list[str]:
    """The item ids every run answered (and has the question of), in the first run's order."""
    first = runs[0]
    return [
        i
        for i in first.answers
        if i in first.questions and all(i in r.answers and i in r.questions for r in runs)
    ]
