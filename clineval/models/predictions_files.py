"""`predictions:` model specs: one file for the run, or one file per task.

    --model predictions:FILE                          every task of the run reads FILE
    --model predictions:TASK=FILE,TASK=FILE,...       each task reads its own file

The second form makes one run (one results table, one report, one manifest) of a tagger's
outputs over several tasks, e.g. four NER predictions files for the four NCER corpora:

    clineval run ner:ncbi ner:bc5cdr --model predictions:ner:ncbi=ncbi.jsonl,ner:bc5cdr=cdr.jsonl

The spec is split at commas, each item at its last `=` (task names hold `:` but never `=`); a
name that is an existing file is always the one-file form, so a file whose name holds `=` or
`,` still works alone. Every task of the run must get a file and every item must name a task of
the run: both are checked with the other inputs, before anything is written
(`check_predictions_spec`). Each file's path and sha256 go into the manifest under its task
(`predictions_note`), so the run says which bytes it scored, not only where they were.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from clineval.errors import InputError, clip
from clineval.models.spec import ModelSpec


def predictions_map(spec: ModelSpec) -> dict[str, Path] | None:
    """{task: file} of the per-task form, None for the one-file form."""
    name = spec.name
    if "=" not in name or Path(name).expanduser().is_file():
        return None
    out: dict[str, Path] = {}
    for item in name.split(","):
        task, sep, file = item.strip().rpartition("=")
        if not sep or not task or not file:
            raise InputError(
                f"--model predictions:{clip(name)}: item {clip(item)} is not TASK=FILE "
                "(write predictions:FILE, or predictions:TASK=FILE,TASK=FILE)"
            )
        if task in out:
            raise InputError(f"--model predictions:...: task {task!r} is given two files")
        out[task] = Path(file).expanduser()
    return out


def predictions_file(spec: ModelSpec, task: str) -> Path:
    """The file `task` reads its predictions from."""
    mapping = predictions_map(spec)
    if mapping is None:
        return Path(spec.name).expanduser()
    if task not in mapping:
        raise InputError(
            f"--model predictions:...: no file for task {task!r} (given: {', '.join(mapping)})"
        )
    return mapping[task]


def check_predictions_spec(spec: ModelSpec, tasks: Sequence[str]) -> list[Path]:
    """The files of a `predictions:` spec for a run of `tasks`; InputError naming --model when
    a task has no file or an item names a task the run does not have."""
    mapping = predictions_map(spec)
    if mapping is None:
        return [Path(spec.name).expanduser()]
    extra = [task for task in mapping if task not in tasks]
    if extra:
        raise InputError(
            f"--model predictions:...: {', '.join(map(repr, extra))} is not a task of this run "
            f"(tasks: {', '.join(tasks)})"
        )
    return [predictions_file(spec, task) for task in tasks]


def predictions_note(path: Path) -> dict[str, Any]:
    """The manifest's record of a predictions file: its path and the sha256 of its bytes."""
    from clineval.data.checksums import sha256_file

    return {"path": str(path), "sha256": sha256_file(path)}
