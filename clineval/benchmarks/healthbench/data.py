"""HealthBench's files in the authors' layout, read strictly (a bad line is one error naming
file and line), where they are found, and `clineval data fetch healthbench`."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from clineval.benchmarks import (
    Criterion,
    InputError,
    JudgedItem,
    RetryPolicy,
    fetch_recorded,
    iter_json_objects,
    require_file,
)

BLOB = "https://openaipublic.blob.core.windows.net/simple-evals/healthbench/"
# task -> the authors' file name (the cache and a data root keep it under healthbench/)
FILES = {
    "healthbench": "2025-05-07-06-14-12_oss_eval.jsonl",
    "healthbench:hard": "hard_2025-05-08-21-00-10.jsonl",
    "healthbench:consensus": "consensus_2025-05-09-20-00-46.jsonl",
    "healthbench:meta-eval": "2025-05-07-06-14-12_oss_meta_eval.jsonl",
}
META = "healthbench:meta-eval"
RESOURCES = Path(__file__).parent / "resources"
FIXTURES = {False: RESOURCES / "fixture_examples.jsonl", True: RESOURCES / "fixture_meta.jsonl"}
Turns = tuple[tuple[str, str], ...]  # (role, content), system turns included


def relative(task: str) -> str:
    return f"healthbench/{FILES[task]}"


@dataclass(frozen=True)
class Example:
    prompt_id: str
    prompt: Turns
    criteria: tuple[Criterion, ...]  # the grader sees each as "[points] criterion"
    tags: tuple[str, ...]
    ideal: str | None  # the physician's ideal completion, when the data has one


@dataclass(frozen=True)
class MetaRow:
    item: JudgedItem  # the conversation, the completion as its answer, the bare rubric text
    category: str
    labels: tuple[bool, ...]  # one per physician, in the order of `physicians`
    physicians: tuple[str, ...]


def render(prompt: Turns) -> str:
    """The conversation as the authors' grader sees it: `role: content` blocks, blank lines
    between (the answer is appended the same way, as `assistant`)."""
    return "\n\n".join(f"{role}: {content}" for role, content in prompt)


class _Row:
    """One line's fields, each read with its type checked; a wrong one names file and line."""

    def __init__(self, row: dict[str, Any], path: Path, line: int) -> None:
        self.row, self.path, self.line = row, path, line

    def fail(self, message: str) -> InputError:
        return InputError(message, path=self.path, line=self.line)

    def get(self, key: str, kind: Any, what: str, of: dict[str, Any] | None = None) -> Any:
        fields = self.row if of is None else of
        if key not in fields:
            raise self.fail(f'missing "{key}"')
        value = fields[key]
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
            raise self.fail(f'"{key}" must be {what}')
        return value

    def strings(self, key: str, of: dict[str, Any] | None = None) -> tuple[str, ...]:
        items = self.get(key, list, "a list of strings", of)
        if not all(isinstance(s, str) for s in items):
            raise self.fail(f'"{key}" must be a list of strings')
        if len(set(items)) != len(items):  # the authors assert this
            raise self.fail(f'"{key}" holds a tag twice')
        return tuple(items)

    def prompt(self) -> Turns:
        turns = self.get("prompt", list, "a list of messages")
        if not turns or not all(
            isinstance(t, dict) and isinstance(t.get("content"), str) and t.get("role")
            and isinstance(t["role"], str) for t in turns
        ):  # fmt: skip
            raise self.fail('"prompt" must be messages with a string "role" and "content"')
        return tuple((t["role"], t["content"]) for t in turns)


def _criterion(row: _Row, index: int, item: Any) -> Criterion:
    if not isinstance(item, dict):
        raise row.fail('every "rubrics" item must be an object')
    text = row.get("criterion", str, "a string", item)
    points = row.get("points", (int, float), "a number", item)  # shown as the authors' str()
    return Criterion(f"c{index}", f"[{points}] {text}", float(points), row.strings("tags", item))


def parse_example(raw: dict[str, Any], path: Path, line: int) -> Example:
    row = _Row(raw, path, line)
    rubrics = row.get("rubrics", list, "a list of rubric items")
    criteria = tuple(_criterion(row, i, r) for i, r in enumerate(rubrics))
    if not any(c.points > 0 for c in criteria):
        raise row.fail("the rubric has no criterion with positive points")
    ideal = row.get("ideal_completions_data", (dict, type(None)), "null or an object")
    if ideal is not None:
        ideal = row.get("ideal_completion", str, "a string", ideal)
    prompt_id = row.get("prompt_id", str, "a string")
    return Example(prompt_id, row.prompt(), criteria, row.strings("example_tags"), ideal)


def parse_meta(raw: dict[str, Any], path: Path, line: int) -> MetaRow:
    row = _Row(raw, path, line)
    labels = row.get("binary_labels", list, "a list of booleans")
    if not labels or not all(isinstance(v, bool) for v in labels):
        raise row.fail('"binary_labels" must be a non-empty list of booleans')
    ids = row.get("anonymized_physician_ids", list, "a list of strings")
    if len(ids) != len(labels) or not all(isinstance(v, str) for v in ids):
        raise row.fail('"anonymized_physician_ids" must be one string per binary label')
    keys = ("completion", "rubric", "category", "prompt_id", "completion_id")
    completion, rubric, category, _, completion_id = (row.get(k, str, "a string") for k in keys)
    # a completion is graded against several rubric items: its id and the rubric's digest
    key = f"{completion_id}:{hashlib.sha256(rubric.encode('utf-8')).hexdigest()[:12]}"
    prompt = row.prompt()
    item = JudgedItem(key, render(prompt), (Criterion("rubric", rubric),), prompt, completion)
    return MetaRow(item, category, tuple(labels), tuple(ids))


def read_file(path: Path, meta: bool) -> list[Any]:
    """Every example (or meta-eval row) of `path`; an id used twice is refused by line."""
    out: list[Any] = []
    first: dict[str, int] = {}
    what = "HealthBench meta-eval file" if meta else "HealthBench examples file"
    for line, raw in iter_json_objects(path, what):
        out.append(parse_meta(raw, path, line) if meta else parse_example(raw, path, line))
        key = out[-1].item.id if meta else out[-1].prompt_id
        if key in first:
            raise InputError(f"{key!r} is used twice (line {first[key]})", path=path, line=line)
        first[key] = line
    if not out:
        raise InputError(f"no rows in the {what}", path=path)
    return out


def source(task: str, cases: str | None, data_root: Path | None) -> tuple[Path, bool]:
    """The file a task reads and whether it is the fixture: `healthbench.cases` (a file, or
    `fixture`), else the authors' file under the data root or in the data cache."""
    if cases == "fixture":
        return FIXTURES[task == META], True
    if cases is not None:
        return Path(cases).expanduser(), False
    return require_file(data_root, relative(task)), False


def fetch(root: Path, base_url: str | None, retry: RetryPolicy) -> list[Path]:
    """`clineval data fetch healthbench`: the authors' four files (or a mirror's, laid out
    like the cache), each read strictly before it is kept. No public source states their
    hash: the first fetch's sha256 is recorded and every later fetch checked against it."""
    check = {task: partial(read_file, meta=task == META) for task in FILES}
    return [
        fetch_recorded(root, relative(task), BLOB + name, base_url, retry, check[task])
        for task, name in FILES.items()
    ]
