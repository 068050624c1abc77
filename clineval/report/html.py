"""`clineval report RUN_DIR`: one self-contained HTML file (inline CSS, JS, SVG; no network).

Safety: the template autoescapes every value; plots are SVG strings from clineval.report.plots
(which escapes every piece of text); sample data travel as JSON in <script
type="application/json"> with `<`, `>`, `&` escaped (see jsonembed) and are put into the page
with textContent only. A Content-Security-Policy allows exactly the report's own script (by
hash) and no network: even a string that slipped through as markup could neither run nor fetch
anything.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import time
from collections.abc import Callable
from functools import lru_cache, partial
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from clineval.benchmarks.declaration import Benchmark, MetricSchema
from clineval.benchmarks.registry import benchmark_of, guarded, metric_schema
from clineval.errors import InputError
from clineval.progress import track
from clineval.report.agreement_section import agreement_blocks
from clineval.report.jsonembed import COMPRESS_OVER, script_payload
from clineval.report.references import Reference, read_references, reference_lines
from clineval.report.rundata import RunData, load_run
from clineval.report.sections_common import (
    USAGE_COLUMNS,
    SampleTable,
    base_section,
    fields_part,
    fill_intervals,
    format_value,
    rows_part,
    settings,
    short_model_label,
    table_block,
)
from clineval.rundir import atomic_write_text
from clineval.version import __version__

TEMPLATES = Path(__file__).parent / "templates"


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,  # .html.j2 names would escape the extension-based default
        trim_blocks=True,
        lstrip_blocks=True,
    )


def asset(name: str) -> str:
    return (TEMPLATES / name).read_text(encoding="utf-8")


def csp_hash(script: str) -> str:
    digest = hashlib.sha256(script.encode("utf-8")).digest()
    return "sha256-" + base64.b64encode(digest).decode("ascii")


def _generic_section(
    run: RunData,
    task: str,
    family: str = "other",
    schema: MetricSchema | None = None,
) -> dict[str, Any]:
    """A task without a report section of its own: its metrics, the nested tables its schema
    declares, and a sample table of every field (scalars as columns, the rest in the detail
    view)."""
    section = base_section(run, task, family, schema)
    metrics = run.results.get(task, {})
    for key in schema.tables if schema is not None else ():
        block = declared_table(key, metrics.get(key))
        if block is not None:
            section["blocks"].append(block)
    samples = run.samples.get(task, [])
    if samples:
        rows = [{k: v for k, v in row.items() if k != "task"} for row in samples]
        keys = list(dict.fromkeys(k for row in rows for k in row))
        scalar = [k for k in keys if all(_cell_value(r.get(k)) for r in rows)]
        listed = [k for k in keys if k not in scalar and _records(rows, k)]
        section["table"] = SampleTable(
            element_id=f"{section['anchor']}-samples",
            columns=[_column(k, rows, section["digits"]) for k in scalar],
            filters=[],
            search=[k for k in keys if k not in scalar],
            # a list of objects (a judged item's verdicts, an item's codes or spans) is a
            # table of its own in the detail view, one column per key its objects hold
            detail=[
                fields_part([(k, k) for k in keys if k not in listed]),
                *(rows_part(k, k, _record_columns(rows, k)) for k in listed),
            ],
            rows=rows,
        )
    return section


def _cell_value(value: Any) -> bool:
    """Whether a value fits a table cell: a scalar, or a list of scalars (a sample's labels
    or codes), which the page shows joined by commas."""
    if isinstance(value, list):
        return all(v is None or isinstance(v, str | int | float | bool) for v in value)
    return not isinstance(value, dict)


def _column(key: str, rows: list[dict[str, Any]], digits: dict[str, int]) -> dict[str, Any]:
    """A sample-table column; fractional numbers shown with the decimals of the metric of
    the same key, else 4 (the page sorts by the value itself)."""
    column: dict[str, Any] = {"key": key, "label": key}
    if any(isinstance(r.get(key), float) and not float(r[key]).is_integer() for r in rows):
        column["digits"] = digits.get(key, 4)
    if any(isinstance(r.get(key), list) for r in rows):
        column["join"] = True
    return column


def _records(rows: list[dict[str, Any]], key: str) -> bool:
    """Whether `key` holds, in every row that has it, a list of JSON objects."""
    values = [r[key] for r in rows if r.get(key) is not None]
    return bool(values) and all(
        isinstance(v, list) and all(isinstance(o, dict) for o in v) for v in values
    )


def _record_columns(rows: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    names = dict.fromkeys(n for r in rows for o in r.get(key) or () for n in o)
    return [{"label": n, "index": n} for n in names]


def declared_table(key: str, value: Any) -> dict[str, Any] | None:
    """A nested results entry as a table: {row: {column: value}} or {name: value}."""
    if not isinstance(value, dict) or not value:
        return None
    if all(isinstance(v, dict) for v in value.values()):
        columns = list(dict.fromkeys(c for v in value.values() for c in v))
        rows = [[str(name), *(_cell(v.get(c)) for c in columns)] for name, v in value.items()]
        return table_block(key, [key, *columns], rows)
    return table_block(key, ["name", "value"], [[str(k), _cell(v)] for k, v in value.items()])


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4f}"
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    return "" if value is None else str(value)


def _declared_section(bench: Benchmark, run: RunData, task: str) -> dict[str, Any]:
    # resolved inside the guard: a plugin's reference that does not resolve names its package
    build = bench.report_section_function()
    assert build is not None  # the caller checked that one is declared
    return build(run, task)


def build_sections(
    run: RunData, compress_over: int = COMPRESS_OVER, references: list[Reference] | None = None
) -> list[dict[str, Any]]:
    sections = []
    seed = int(run.manifest.get("seed") or 0)
    tasks = list(run.results)
    for task in track(tasks, len(tasks), "report sections", unit="tasks"):
        bench = benchmark_of(task)
        notes = run.manifest.get("tasks", {}).get(task) or {}
        if bench is not None and bench.report_section is not None:
            section = guarded(task, "report_section", partial(_declared_section, bench, run, task))
        elif bench is not None:
            section = _generic_section(run, task, bench.family, bench.metrics)
        else:  # a task of a benchmark that is not installed here: as its run record says
            family = str(notes.get("family") or "other")
            section = _generic_section(run, task, family, metric_schema(task, notes))
        if any(card.ci is None for card in section["cards"]):
            from clineval.report.task_stats import statistics_for  # numpy/scipy: only if needed

            samples = run.samples.get(task, [])
            stats = statistics_for(task, run.results[task], samples, notes)
            fill_intervals(section["cards"], stats, seed, section.get("digits"))
        section["blocks"].extend(agreement_blocks(run, task))
        for card in (*section["cards"], *section["rest"]):
            card.references = reference_lines(
                references or [], task, card.key, _formatter(section.get("digits"))
            )
        for n, block in enumerate(section["blocks"]):
            if "svg" in block:
                block["svg"] = Markup(block["svg"])  # from plots.py, text escaped there
            if block["kind"] == "download":  # always compressed: only the script reads it
                block["element_id"] = f"{section['anchor']}-download-{n}"
                block["encoding"], payload = script_payload(block.pop("data"), 0)
                block["payload"] = Markup(payload)  # inert: base64 (see jsonembed)
        table = section["table"]
        encoding, payload = (
            ("json", "") if table is None else script_payload(table.spec(), compress_over)
        )
        section["table_encoding"] = encoding
        section["table_json"] = Markup(payload)  # inert: escaped JSON or base64 (see jsonembed)
        sections.append(section)
    return sections


def _formatter(digits: dict[str, int] | None) -> Callable[[str, float], str]:
    """format_value with a section's declared decimals."""
    return lambda key, value: format_value(key, value, (digits or {}).get(key))


def overview(
    sections: list[dict[str, Any]], references: list[Reference] | None = None
) -> list[dict[str, Any]]:
    """One table per task family: a row per task, a column per headline metric, and a row per
    reference figure of those tasks."""
    tables: dict[str, dict[str, Any]] = {}
    for section in sections:
        table = tables.setdefault(
            section["family"],
            {"keys": [], "rows": [], "references": [], "sources": [], "lower": set()},
        )
        cells = {card.key: card for card in section["cards"]}
        table["lower"].update(card.key for card in section["cards"] if card.lower_is_better)
        for key in cells:
            if key not in table["keys"]:
                table["keys"].append(key)
        table["rows"].append({"section": section, "cells": cells})
    for section in sections:
        table = tables[section["family"]]
        for ref in references or []:
            figures = ref.results.get(section["task"], {})
            fmt = _formatter(section.get("digits"))
            shown = {k: fmt(k, v) for k, v in figures.items() if k in table["keys"]}
            if shown:
                table["references"].append(
                    {"task": section["task"], "label": ref.label, "cells": shown}
                )
                source = f"{ref.label}: {ref.source}" if ref.source else ref.label
                if source not in table["sources"]:
                    table["sources"].append(source)
    return list(tables.values())


def render_report(
    run: RunData, compress_over: int = COMPRESS_OVER, references: list[Reference] | None = None
) -> str:
    sections = build_sections(run, compress_over, references)
    script = asset("report.js")
    fixture_tasks = [s["task"] for s in sections if s["fixture"]]
    return (
        environment()
        .get_template("report.html.j2")
        .render(
            run_name=run.path.name,
            run_path=str(run.path),
            model=short_model_label(str(run.manifest.get("config", {}).get("model", "?"))),
            generated=time.strftime("%Y-%m-%d %H:%M"),
            version=__version__,
            settings=settings(run),
            usage_columns=USAGE_COLUMNS,
            sections=sections,
            overview=overview(sections, references),
            any_fixture=bool(fixture_tasks),
            fixture_tasks=fixture_tasks,
            css=Markup(asset("report.css")),
            script=Markup(script),
            script_hash=csp_hash(script),
        )
    )


def write_report(
    run_dir: Path,
    output: Path,
    compress_over: int = COMPRESS_OVER,
    reference_files: list[Path] | None = None,
) -> Path:
    """Render the report of run_dir into output (atomically) and return its path, with the
    published figures of `reference_files` beside the run's own."""
    if os.path.isdir(output):  # never raises (a name too long is CannotWrite below)
        raise InputError(
            "the report's -o is a directory: give a file name, e.g. report.html", path=output
        )
    references = [ref for path in reference_files or [] for ref in read_references(path)]
    run = load_run(run_dir)
    atomic_write_text(output, render_report(run, compress_over, references))
    return output
