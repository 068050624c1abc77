"""Pieces every task section shares: headline metrics with intervals, settings, table specs.

A section is a plain dict the template renders. Values in it are data (escaped by the
template), except `svg` entries: markup made by clineval.report.plots (it escapes its text).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from clineval.benchmarks.answer_checks import NOTE_KEY as ANSWERS_NOTE
from clineval.benchmarks.declaration import MetricSchema
from clineval.report.rundata import RunData, finite_number, interval_of, is_fixture_task
from clineval.secrets import redact

# result keys holding a sentence a reader must see: in the report and at the end of a run
NOTE_KEYS = ("data_note", "note", "warning", ANSWERS_NOTE)


def format_value(key: str, value: float | int, digits: int | None = None) -> str:
    """Counts as integers; other figures with the decimals their metric declares
    (`MetricSpec.digits`, 4 unless declared). `key` names the figure for a caller's message."""
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return f"{value:.{4 if digits is None else digits}f}"


@dataclass
class Metric:
    key: str
    value: str
    ci: str | None  # "[low, high]" formatted like the value
    raw: float
    ci_note: str = ""  # set when the report, not the task, computed the interval
    note: str = ""  # what the figure is computed on, when that is not every sample
    lower_is_better: bool = False
    references: list[str] = field(default_factory=list)  # published figures, labelled


def metric_of(metrics: dict[str, Any], key: str, digits: int | None = None) -> Metric | None:
    number = finite_number(metrics.get(key))
    if number is None:
        return None
    value = metrics[key]
    interval = interval_of(metrics, key)
    ci = None
    if interval is not None:
        low, high = (format_value(key, b, digits) for b in interval)
        ci = f"[{low}, {high}]"
    return Metric(key=key, value=format_value(key, value, digits), ci=ci, raw=number)


def fill_intervals(
    cards: list[Metric], stats: dict[str, Any], seed: int, digits: dict[str, int] | None = None
) -> None:
    """Bootstrap intervals for cards the task stored none for, from per-sample statistics."""
    from clineval.report.statistics import bootstrap_interval

    for card in cards:
        stat = stats.get(card.key)
        if card.ci is None and stat is not None:
            low, high = bootstrap_interval(stat, seed=seed)
            d = (digits or {}).get(card.key)
            card.ci = f"[{format_value(card.key, low, d)}, {format_value(card.key, high, d)}]"
            card.ci_note = "bootstrap over samples, computed by the report"


def headline(
    metrics: dict[str, Any], headline_keys: tuple[str, ...], digits: dict[str, int] | None = None
) -> tuple[list[Metric], list[Metric]]:
    """(cards, the rest): every finite top-level scalar, the declared headline keys first."""
    digits = digits or {}
    cards = [m for k in headline_keys if (m := metric_of(metrics, k, digits.get(k)))]
    shown = {m.key for m in cards}
    rest = []
    for key in metrics:
        if key in shown or key.endswith(("_ci", "_ci95")):
            continue
        m = metric_of(metrics, key, digits.get(key))
        if m is not None:
            rest.append(m)
    if not cards:  # an unknown task: its first few scalars become the cards
        cards, rest = rest[:4], rest[4:]
    return cards, rest


# A part of a detail view: plain JSON the page's script draws with textContent only. Titles
# may name row fields as {key}.
DetailPart = dict[str, Any]


@dataclass
class SampleTable:
    """The per-sample table's spec, embedded as JSON and drawn by the page's script."""

    element_id: str
    # {"key", "label"}, optionally "digits" (decimals of fractions) and "join" (a list of
    # scalars shown joined by commas)
    columns: list[dict[str, Any]]
    filters: list[dict[str, Any]]  # {"key", "label", "values": [...]} (row values are strings)
    search: list[str]  # row keys searched besides the columns
    # the detail view of a clicked row: parts made by the *_part functions below, drawn by the
    # page's one renderer; empty = every field of the row
    detail: list[DetailPart]
    rows: list[dict[str, Any]]
    extra: dict[str, Any] = field(default_factory=dict)  # lookup lists the detail parts name
    title: str = "Samples"

    def spec(self) -> dict[str, Any]:
        return {
            "columns": self.columns,
            "filters": self.filters,
            "search": self.search,
            "detail": self.detail,
            "rows": self.rows,
            **self.extra,
        }


def heading_part(text: str) -> DetailPart:
    """A heading of the detail view; `{key}` in it names a field of the row."""
    return {"part": "heading", "text": text}


def text_part(title: str, key: str) -> DetailPart:
    """The row's field `key` as a block of text, under `title`."""
    return {"part": "text", "title": title, "key": key}


def spans_part(title: str, text_key: str, spans_key: str, style: str = "gold") -> DetailPart:
    """The row's text with its [[start, end, label], ...] spans highlighted (gold or pred)."""
    return {"part": "spans", "title": title, "text": text_key, "spans": spans_key, "style": style}


def fields_part(fields: list[tuple[str, str]] | None = None) -> DetailPart:
    """(key, label) pairs as a definition list; None = every field of the row."""
    return {"part": "fields"} if fields is None else {"part": "fields", "fields": fields}


def rows_part(
    title: str, key: str, columns: list[dict[str, Any]], css_class: str = ""
) -> DetailPart:
    """A table of the row's list `key`: a list of lists (a column's "index" is a position)
    or of objects (its "index" is a key). Each column: {"label", "index"} and
    optionally "labels" / "classes" ({"true"|"false"|"null"|value: text}) or "lookup" (the
    name of a list in the table's extra data that the value indexes)."""
    return {"part": "rows", "title": title, "key": key, "columns": columns, "class": css_class}


def table_block(
    title: str,
    header: list[str],
    rows: list[list[str]],
    *,
    collapsed: bool = False,
    sortable: bool = True,
    note: str = "",
) -> dict[str, Any]:
    """A table of a section (sortable by its headers unless said otherwise)."""
    return {
        "kind": "table",
        "title": title,
        "header": header,
        "rows": rows,
        "collapsed": collapsed,
        "sortable": sortable,
        "note": note,
    }


def examples_block(title: str, groups: list[dict[str, Any]], shown: int = 3) -> dict[str, Any]:
    """Groups of examples in context ({"kind", "title", "count", "examples": [{"doc",
    "before", "mark", "after", "note"}]}): the first `shown` of each group open, the rest
    behind "show more"."""
    for group in groups:
        group["first"] = group["examples"][:shown]
        group["more"] = group["examples"][shown:]
    return {"kind": "examples", "title": title, "groups": groups}


def download_block(
    title: str, filename: str, columns: list[str], rows: list[dict[str, Any]]
) -> dict[str, Any]:
    """Rows offered as a CSV file. The rows travel compressed in the page (the report embeds
    them like the sample tables) and the page's script makes the file when the reader asks;
    a data: link would have carried them uncompressed, a third larger again in base64."""
    return {
        "kind": "download",
        "title": title,
        "filename": filename,
        "count": len(rows),
        "data": {"columns": columns, "rows": [[row.get(c, "") for c in columns] for row in rows]},
    }


def filter_values(rows: list[dict[str, Any]], key: str, limit: int = 200) -> list[str]:
    """Distinct string values of a row key, most frequent first (a select's options)."""
    counts: dict[str, int] = {}
    for row in rows:
        value = row.get(key)
        if value is not None and value != "":
            counts[str(value)] = counts.get(str(value), 0) + 1
    return sorted(counts, key=lambda v: (-counts[v], v))[:limit]


def yes_no(value: Any) -> str:
    """A true/false value as a table cell shows it: "yes", "no", or empty for None."""
    if value is None:
        return ""
    return "yes" if value else "no"


def flatten(obj: Any, prefix: str = "") -> list[tuple[str, str]]:
    """Nested manifest values as (dotted key, text) rows; lists of scalars joined by commas."""
    rows: list[tuple[str, str]] = []
    if isinstance(obj, dict):
        for key, value in obj.items():
            rows.extend(flatten(value, f"{prefix}.{key}" if prefix else str(key)))
    elif isinstance(obj, list) and any(isinstance(v, dict | list) for v in obj):
        for i, value in enumerate(obj):
            rows.extend(flatten(value, f"{prefix}[{i}]"))
    elif isinstance(obj, list):
        rows.append((prefix, redact(", ".join(str(v) for v in obj))))
    else:
        rows.append((prefix, redact("" if obj is None else str(obj))))
    return rows


USAGE_COLUMNS = (
    "model",
    "calls",
    "prompt tokens",
    "cached prompt tokens",
    "cached share",
    "completion tokens",
    "batch calls",
    "reused calls",
    "estimated cost",
    "at list prices",
)


def usage_rows(usage: Any) -> list[list[str]]:
    """manifest.json["llm_usage"] as table rows, one per model and a total: prompt tokens,
    the cached ones (served from the server's prompt cache) and their share, cost."""
    if not isinstance(usage, dict) or not isinstance(usage.get("models"), dict):
        return []

    def shown(value: Any, form: str) -> str:  # a hand-edited manifest must not stop a report
        if isinstance(value, bool) or not isinstance(value, int | float):
            return "-"
        return format(value, form)

    def row(name: str, r: dict[str, Any]) -> list[str]:
        return [
            redact(name),
            shown(r.get("calls"), ","),
            shown(r.get("prompt_tokens"), ","),
            shown(r.get("cached_prompt_tokens"), ","),
            shown(r.get("cached_share"), ".1%"),
            shown(r.get("completion_tokens"), ","),
            # calls made through a batch (--batch), priced at batch rates in the cost; the
            # last column is what they would have cost at list prices
            shown(r.get("batch_calls"), ","),
            # answered by an earlier run directory (--reuse): not in this run's tokens or cost
            shown(r.get("reused_calls"), ","),
            shown(r.get("estimated_cost"), ",.4f"),
            shown(r.get("estimated_cost_list", r.get("estimated_cost")), ",.4f"),
        ]

    rows = [row(str(name), r) for name, r in usage["models"].items() if isinstance(r, dict)]
    if len(rows) > 1:
        rows.append(row("total", usage))
    return rows


def settings(run: RunData) -> dict[str, Any]:
    """The run's settings: identity, configuration, packages, and per-task data notes."""
    m = run.manifest
    identity = [
        (key, redact(str(m[key])))
        for key in (
            "clineval_version",
            "git_revision",
            "status",
            "started",
            "finished",
            "rescored",
            "seed",
            "platform",
        )
        if m.get(key) is not None
    ]
    argv = m.get("argv")
    if isinstance(argv, list):
        identity.append(("command", redact(" ".join(str(a) for a in argv))))
    tasks = m.get("tasks", {}) if isinstance(m.get("tasks"), dict) else {}
    hashes = []  # every data-file checksum the tasks recorded, shown up front
    for name, notes in tasks.items():
        flat = dict(flatten(notes))
        for key, value in flat.items():
            if key.endswith("sha256"):
                prefix = key.removesuffix("sha256")
                # {"path": ..., "sha256": ...} records name their file; else the key says it
                hashes.append((name, flat.get(prefix + "path") or prefix.rstrip("."), value))
    return {
        "hashes": hashes,
        "identity": identity,
        "usage": usage_rows(m.get("llm_usage")),
        "config": flatten(m.get("config", {})),
        "packages": flatten(m.get("packages", {})),
        "tasks": {name: flatten(notes) for name, notes in tasks.items()},
    }


def _file_stem(path: str) -> str:
    stem = path.rstrip("/").rsplit("/", 1)[-1]
    for suffix in (".gguf", ".jsonl", ".json"):
        stem = stem.removesuffix(suffix)
    return stem


def _per_task_files(name: str) -> list[tuple[str, str]] | None:
    """`TASK=FILE,TASK=FILE` (one file per task) as (task, file) pairs; None for anything
    else. A task name holds no "/" (a path or a URL's query before its "=" does)."""
    if "=" not in name:
        return None
    pairs = [
        (task.strip(), file.strip())
        for task, _, file in (i.partition("=") for i in name.split(","))
    ]
    if all(task and file and "/" not in task for task, file in pairs):
        return pairs
    return None


def short_model_label(spec: str) -> str:
    """A model spec as a reader names it: a file path becomes its file name without the
    extension (`llamacpp:/models/x/SmolLM2.gguf` -> `llamacpp:SmolLM2`), each task's file
    when each task has its own (`predictions:ner:ncbi=/p/a.jsonl,ner:chia=/p/b.jsonl` ->
    `predictions:ner:ncbi=a, ner:chia=b`); the full spec stays in the settings table."""
    backend, sep, name = spec.partition(":")
    if not sep or "/" not in name:
        return redact(spec)
    per_task = _per_task_files(name)
    if per_task is not None:
        return redact(f"{backend}:" + ", ".join(f"{t}={_file_stem(f)}" for t, f in per_task))
    address = ""
    if "@" in name and "://" in name.split("@", 1)[1]:
        name, address = name.split("@", 1)
    return redact(f"{backend}:{_file_stem(name)}" + (f"@{address}" if address else ""))


def base_section(
    run: RunData, task: str, family: str, schema: MetricSchema | None = None
) -> dict[str, Any]:
    """The part of a task's section every benchmark shares: cards of its declared headline
    metrics (the rest under "all metrics") with their declared decimals, lower-is-better
    figures marked, fixture flag, notes. Without a schema: the first few scalars."""
    metrics = run.results.get(task, {})
    digits = schema.digits() if schema is not None else {}
    cards, rest = headline(metrics, schema.headline_keys if schema is not None else (), digits)
    for card in (*cards, *rest):
        card.lower_is_better = schema is not None and not schema.higher_is_better(card.key)
    return {
        "task": task,
        "anchor": "task-" + "".join(c if c.isalnum() else "-" for c in task),
        "family": family,
        "fixture": is_fixture_task(run, task),
        "cards": cards,
        "rest": rest,
        # Free-text notes a task attaches to its results (e.g. "SYNTHETIC fixture ...").
        "notes": [str(v) for k, v in metrics.items() if k in NOTE_KEYS and isinstance(v, str)],
        "blocks": [],
        "table": None,
        "digits": digits or {},
    }
