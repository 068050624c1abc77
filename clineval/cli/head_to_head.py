"""`clineval head-to-head RUN_DIR RUN_DIR [RUN_DIR...] --judge SPEC -o OUT_DIR [RUN FLAGS]`:
finished runs of one generative task judged against each other, as a run of its own.

The command reads each run's stored answers through the one generic accessor
(clineval.benchmarks.finished_runs), keeps the items every run answered, writes the pairs file
(one line per item and pair of runs, with both answers) into OUT_DIR, and hands the rest to
`clineval run` with that file as a `predictions:` model: the normal runner makes the run
directory (manifest, results, samples, store), so resume, `--reuse`, `--dry-run`, `--batch`,
`--judge-prompt`, `--option`, `--json`, `report` and `score` are the run's own. The pairs file
is the run's input: rewritten with the same bytes on a rerun, and refused when OUT_DIR already
holds a different one (a resume must not mix two comparisons).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer

from clineval.benchmarks.finished_runs import RunAnswers, common_items, finished_run_answers
from clineval.cli.app import app
from clineval.errors import InputError
from clineval.rundir import atomic_write_text

TASK = "head-to-head"  # the built-in task that judges the pairs
PAIRS_FILE = "head-to-head-pairs.jsonl"
USAGE = "clineval head-to-head RUN_DIR RUN_DIR [RUN_DIR...] --judge SPEC -o OUT_DIR"


@dataclass(frozen=True)
class Request:
    """The command line split: the runs, the output directory, --task, what goes to `run`."""

    runs: list[Path]
    out_dir: Path
    task: str | None
    rest: list[str]
    dry_run: bool


def _non_empty(name: str, value: str) -> str:
    # an empty path would be the working directory (Path("") is "."): refused, as every
    # path flag is (docs/command-line.md, "Empty paths")
    if not value.strip():
        raise InputError(f"{name}: must not be empty")
    return value


def parse(args: Sequence[str]) -> Request:
    """RUN_DIRs first; `-o/--output-dir` and `--task` taken here; every other flag (with its
    value) is `run`'s, passed on as written."""
    runs: list[Path] = []
    rest: list[str] = []
    out: str | None = None
    task: str | None = None
    words = list(args)
    i = 0
    while i < len(words) and not words[i].startswith("-"):
        runs.append(Path(_non_empty("RUN_DIR", words[i])).expanduser())
        i += 1
    while i < len(words):
        word = words[i]
        name, eq, value = word.partition("=")
        if name in ("-o", "--output-dir", "--task"):
            if not eq:
                if i + 1 >= len(words):
                    raise InputError(f"{name} needs a value (usage: {USAGE})")
                value, i = words[i + 1], i + 1
            if name == "--task":
                task = _non_empty(name, value)
            else:
                out = _non_empty(name, value)
        elif name in ("-m", "--model"):
            raise InputError(f"{name}: a head-to-head makes no candidate call (usage: {USAGE})")
        else:
            rest.append(word)
        i += 1
    if len(runs) < 2:
        raise InputError(f"name two or more finished run directories (usage: {USAGE})")
    if len({r.resolve() for r in runs}) != len(runs):
        raise InputError("a run directory is named twice")
    if out is None:
        raise InputError(f"-o/--output-dir: where to write the head-to-head run (usage: {USAGE})")
    if "--judge" not in rest and not any(w.startswith("--judge=") for w in rest):
        raise InputError(f"--judge: name the pairwise judge (usage: {USAGE})")
    return Request(runs, Path(out).expanduser().absolute(), task, rest, "--dry-run" in rest)


def _labels(runs: Sequence[RunAnswers]) -> list[str]:
    """Each run's label: its directory's name, made unique with #N where two share one."""
    names = [r.run_dir.resolve().name for r in runs]
    return [n if names.count(n) == 1 else f"{n}#{k + 1}" for k, n in enumerate(names)]


def pair_lines(runs: Sequence[RunAnswers]) -> list[str]:
    """One JSON line per (item, pair of runs): every pair in the order the runs were named,
    the earlier run in `answer` (position A first), the later in `answer_b`."""
    tasks = {r.task for r in runs}
    if len(tasks) > 1:
        named = ", ".join(f"{r.task} ({r.run_dir})" for r in runs)
        raise InputError(f"the runs answered different tasks: {named}")
    items = common_items(runs)
    if not items:
        raise InputError("the runs have no answered item in common")
    labels = _labels(runs)
    lines = []
    for i, a in enumerate(runs):
        for j in range(i + 1, len(runs)):
            b = runs[j]
            for item in items:
                row = {
                    "id": f"{item} | {labels[i]} vs {labels[j]}",
                    "item": item,
                    "question": a.questions[item],
                    "run_a": labels[i],
                    "model_a": a.model,
                    "answer": a.answers[item],
                    "run_b": labels[j],
                    "model_b": b.model,
                    "answer_b": b.answers[item],
                    "fixture": a.fixture or b.fixture,
                }
                lines.append(json.dumps(row, ensure_ascii=False))
    return lines


def prepare(request: Request, scratch: Path) -> list[str]:
    """Write the pairs file and return the `clineval run` command line. Under --dry-run with no
    OUT_DIR yet, the file goes to `scratch` (a dry run writes nothing in OUT_DIR)."""
    runs = [finished_run_answers(d, request.task) for d in request.runs]
    lines = pair_lines(runs)
    text = "".join(line + "\n" for line in lines)
    pairs = request.out_dir / PAIRS_FILE
    if pairs.is_file():
        if pairs.read_text(encoding="utf-8") != text:
            raise InputError(
                "holds a head-to-head of other runs or answers: name a new --output-dir",
                path=request.out_dir,
            )
    elif request.dry_run and not request.out_dir.exists():
        pairs = scratch / PAIRS_FILE
        atomic_write_text(pairs, text)
    else:
        if request.out_dir.exists() and not request.out_dir.is_dir():
            raise InputError("is not a directory", path=request.out_dir)
        request.out_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_text(pairs, text)
    model = f"predictions:{pairs}"
    return ["run", TASK, "--model", model, "--output-dir", str(request.out_dir), *request.rest]


def head_to_head_argv(args: Sequence[str]) -> tuple[list[str], tempfile.TemporaryDirectory[str]]:
    """The `run` command line of a head-to-head, and the scratch directory to remove after."""
    request = parse(args)
    scratch = tempfile.TemporaryDirectory(prefix="clineval-h2h-")
    try:
        return prepare(request, Path(scratch.name)), scratch
    except BaseException:
        scratch.cleanup()
        raise


@app.command(
    "head-to-head",
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    epilog="Example:\n  clineval head-to-head runs/a runs/b --judge openai:judge -o runs/a-vs-b",
)
def head_to_head(
    args: Annotated[list[str] | None, typer.Argument(metavar="RUN_DIR... [RUN FLAGS]")] = None,
) -> int:
    """Judge finished runs of one task against each other, as a run of its own.

    RUN_DIR RUN_DIR [RUN_DIR...] --judge SPEC -o OUT_DIR [--task TASK] [--judge-prompt FILE]
    [--option ...] [--json], and any other `run` flag: each pair of runs judged in both
    orders, with no candidate call (docs/judging.md)."""
    from clineval.cli.exits import _main

    argv, scratch = head_to_head_argv(args or [])
    with scratch:
        return _main(argv)
