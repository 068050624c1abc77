"""`predictions:` model specs: one file for the run, or one file per task.

    --model predictions:FILE                          every task of the run reads FILE
    --model predictions:TASK=FILE,TASK=FILE,...       each task reads its own file

The second form makes one run (one results table, one report, one manifest) of a tagger's
outputs over several tasks, e.g. four NER predictions files for the four NCER corpora:

    clineval run ner:ncbi ner:bc5cdr --model predictions:ner:ncbi=ncbi.jsonl,ner:bc5cdr=cdr.jsonl

The spec is split at commas, each item at its first `=` (task names hold `:` but never `=`,
file names may), with the spaces around either side trimmed. It is the per-task form only when
an item's left side is a known task name; else, and always when the whole name is an existing
file, it is one file, so a file whose name holds `=` or `,` still works alone. Every task of
the run must get a file and every item must name a task of the run: both are checked with the
other inputs, before anything is written (`check_predictions_spec`). Each file's path and
sha256 go into the manifest under its task (`predictions_note`), so the run says which bytes
it scored, not only where they were.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any

from clineval.errors import InputError
from clineval.messages import clip
from clineval.models.spec import ModelSpec


def _split(item: str) -> tuple[str, str]:
    """ "TASK = FILE" -> ("TASK", "FILE"): at the first "=" (a task name holds none; a file
    name may), spaces around both trimmed."""
    task, _, file = item.partition("=")
    return task.strip(), file.strip()


def predictions_map(spec: ModelSpec, known: Collection[str]) -> dict[str, Path] | None:
    """{task: file} of the per-task form, None for the one-file form. `known` are the task
    names there are: the spec is the per-task form when an item starts with one of them and
    "=", so a file whose name holds "=" (`a=b.jsonl`) is still one file."""
    name = spec.name
    if "=" not in name or Path(name).expanduser().is_file():
        return None
    items = [(item, *_split(item)) for item in name.split(",")]
    if not any(task in known for _, task, _ in items):
        return None
    out: dict[str, Path] = {}
    for item, task, file in items:
        if task not in known or not file:
            raise InputError(
                f"--model predictions:{clip(name)}: item {clip(item.strip())} is not TASK=FILE "
                "with a known task (write predictions:FILE, or predictions:TASK=FILE,TASK=FILE)"
            )
        if task in out:
            raise InputError(f"--model predictions:...: task {task!r} is given two files")
        out[task] = Path(file).expanduser()
    return out


def predictions_file(spec: ModelSpec, task: str) -> Path:
    """The file `task` reads its predictions from: the file of its item in the per-task form
    (the run checked that every task has one: `check_predictions_spec`), else the one file."""
    name = spec.name
    if "=" in name and not Path(name).expanduser().is_file():
        for item in name.split(","):
            named, file = _split(item)
            if named == task and file:
                return Path(file).expanduser()
    return Path(name).expanduser()


def check_predictions_spec(
    spec: ModelSpec, tasks: Sequence[str], known: Collection[str]
) -> list[Path]:
    """The files of a `predictions:` spec for a run of `tasks` (`known`: every task name);
    InputError naming --model when a task has no file or an item names a task the run does
    not have."""
    mapping = predictions_map(spec, known)
    if mapping is None:
        return [Path(spec.name).expanduser()]
    extra = [task for task in mapping if task not in tasks]
    if extra:
        raise InputError(
            f"--model predictions:...: {', '.join(map(repr, extra))} is not a task of this run "
            f"(tasks: {', '.join(tasks)})"
        )
    missing = [task for task in tasks if task not in mapping]
    if missing:
        raise InputError(
            f"--model predictions:...: no file for task {missing[0]!r} "
            f"(given: {', '.join(mapping)})"
        )
    return [mapping[task] for task in tasks]


def predictions_note(path: Path) -> dict[str, Any]:
    """The manifest's record of a predictions file: its path and the sha256 of its bytes."""
    from clineval.data.checksums import sha256_file

    return {"path": str(path), "sha256": sha256_file(path)}


def check_readable_file(path: Path, what: str) -> None:
    """`path` is a regular file this process can open, else InputError naming it."""
    if path.is_dir():
        raise InputError(f"{what}: expected a file, got a directory", path=path)
    try:
        with open(path, "rb"):
            pass
    except FileNotFoundError:
        raise InputError(f"{what} not found", path=path) from None
    except OSError as exc:
        raise InputError(f"cannot read the {what}: {exc.strerror}", path=path) from None


def check_spec_files(spec: ModelSpec, task_names: Callable[[], Sequence[str]]) -> None:
    """The registry's file check of `predictions:` (clineval.models.registry): each file the
    spec names can be read."""
    mapping = predictions_map(spec, task_names())
    for path in mapping.values() if mapping else [Path(spec.name).expanduser()]:
        check_readable_file(path, "predictions file")
