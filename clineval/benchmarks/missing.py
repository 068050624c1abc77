"""Samples without a prediction: one rule for every benchmark, built-in or plugin.

A predictions file that leaves out samples, or a model call that failed after its retries,
leaves samples with no model output. Each benchmark scores such a sample as it must (an empty
span list, an invalid label, an unanswered question), so the figures stay defined; what must
never happen is that the run then looks complete. The runner applies this rule to every
task's result, after `evaluate` and before the results are written:

- the count goes into the task's results as `missing_predictions` (0 included);
- a warning names the count and the first ids;
- the run exits 1 (`TaskFailures`) once every file is written, and the end-of-run table shows
  the count.

Which samples are missing: `TaskResult.missing` when the task says (the built-ins do, and a
judged task names the items without an answer); else, for a task that stores its outputs as
the kit's `prediction` records (`clineval.benchmarks.kit.PREDICTION`, as
`predict_by_chat` and the plugin template do), the ids of its sample rows without such a
record, or whose record says `"missing": true`. A task that stores neither says nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from clineval.benchmarks.base import TaskResult
from clineval.store import RunStore

MISSING_KEY = "missing_predictions"  # the count, in every task's results that can tell
FIRST_IDS = 5  # ids named in the warning
PREDICTION = "prediction"  # the record kind of one sample's output (the kit exports it)


def _absent(record: Any) -> bool:
    return isinstance(record, Mapping) and record.get("missing") is True


def missing_ids(store: RunStore, task: str, result: TaskResult) -> list[str] | None:
    """The ids of `result`'s samples without a prediction, or None when the task neither
    says nor stores the kit's prediction records."""
    if result.missing is not None:
        return [str(i) for i in result.missing]
    records = store.records(task, PREDICTION)
    if not records:
        return None
    ids = [str(row["id"]) for row in result.samples if isinstance(row, dict) and "id" in row]
    return [i for i in ids if i not in records or _absent(records[i])]


def first_ids(ids: Sequence[str], shown: int = FIRST_IDS) -> str:
    """'a, b, c' or 'a, b, c, d, e, ... (45 more)'."""
    head = ", ".join(ids[:shown])
    return head if len(ids) <= shown else f"{head}, ... ({len(ids) - shown:,} more)"


def apply_missing_rule(store: RunStore, task: str, result: TaskResult) -> tuple[str, str] | None:
    """Count the missing samples into `result.metrics`; with any, (the failure that makes
    the run exit 1, the warning naming the first ids), else None."""
    ids = missing_ids(store, task, result)
    if ids is None:
        return None
    result.metrics[MISSING_KEY] = len(ids)
    if not ids:
        return None
    of = f"{len(ids):,} of {len(result.samples):,} samples have no prediction"
    failure = f"{of} (see the warning above; results were written)"
    warning = (
        f"{of}, scored as no answer: {first_ids(ids)}; give them in the predictions file, or "
        "rerun the same command to retry failed calls"
    )
    return failure, warning
