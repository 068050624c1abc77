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
import os
import time
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from clineval.benchmarks.registry import benchmark_of
from clineval.errors import InputError
from clineval.progress import track
from clineval.report.jsonembed import COMPRESS_OVER, script_payload
from clineval.report.rundata import RunData, load_run
from clineval.report.sections_common import (
    USAGE_COLUMNS,
    SampleTable,
    base_section,
    fill_intervals,
    settings,
)
from clineval.rundir import atomic_write_text
from clineval.secrets import redact
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
    run: RunData, task: str, family: str = "other", headline_keys: tuple[str, ...] = ()
) -> dict[str, Any]:
    """A task without a report section of its own: its metrics and a generic sample table."""
    section = base_section(run, task, family, headline_keys)
    samples = run.samples.get(task, [])
    if samples:
        keys = [k for k in samples[0] if k != "task"][:6]
        rows = [{k: v for k, v in row.items() if k != "task"} for row in samples]
        section["table"] = SampleTable(
            element_id=f"{section['anchor']}-samples",
            columns=[{"key": k, "label": k} for k in keys],
            filters=[],
            search=[],
            detail="generic",
            rows=rows,
        )
    return section


def build_sections(run: RunData, compress_over: int = COMPRESS_OVER) -> list[dict[str, Any]]:
    sections = []
    seed = int(run.manifest.get("seed") or 0)
    tasks = list(run.results)
    for task in track(tasks, len(tasks), "report sections", unit="tasks"):
        bench = benchmark_of(task)
        if bench is not None and bench.report_section is not None:
            section = bench.report_section(run, task)
        elif bench is not None:
            section = _generic_section(run, task, bench.family, bench.metrics.headline_keys)
        else:  # a task of a benchmark that is not installed here
            section = _generic_section(run, task)
        if any(card.ci is None for card in section["cards"]):
            from clineval.report.task_stats import statistics_for  # numpy/scipy: only if needed

            stats = statistics_for(task, run.results[task], run.samples.get(task, []))
            fill_intervals(section["cards"], stats, seed)
        for block in section["blocks"]:
            if "svg" in block:
                block["svg"] = Markup(block["svg"])  # from plots.py, text escaped there
        table = section["table"]
        encoding, payload = (
            ("json", "") if table is None else script_payload(table.spec(), compress_over)
        )
        section["table_encoding"] = encoding
        section["table_json"] = Markup(payload)  # inert: escaped JSON or base64 (see jsonembed)
        sections.append(section)
    return sections


def overview(sections: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One table per task family: a row per task, a column per headline metric."""
    tables: dict[str, dict[str, Any]] = {}
    for section in sections:
        table = tables.setdefault(section["family"], {"keys": [], "rows": []})
        cells = {card.key: card for card in section["cards"]}
        for key in cells:
            if key not in table["keys"]:
                table["keys"].append(key)
        table["rows"].append({"section": section, "cells": cells})
    return list(tables.values())


def render_report(run: RunData, compress_over: int = COMPRESS_OVER) -> str:
    sections = build_sections(run, compress_over)
    script = asset("report.js")
    fixture_tasks = [s["task"] for s in sections if s["fixture"]]
    return (
        environment()
        .get_template("report.html.j2")
        .render(
            run_name=run.path.name,
            run_path=str(run.path),
            model=redact(str(run.manifest.get("config", {}).get("model", "?"))),
            generated=time.strftime("%Y-%m-%d %H:%M"),
            version=__version__,
            settings=settings(run),
            usage_columns=USAGE_COLUMNS,
            sections=sections,
            overview=overview(sections),
            any_fixture=bool(fixture_tasks),
            fixture_tasks=fixture_tasks,
            css=Markup(asset("report.css")),
            script=Markup(script),
            script_hash=csp_hash(script),
        )
    )


def write_report(run_dir: Path, output: Path, compress_over: int = COMPRESS_OVER) -> Path:
    """Render the report of run_dir into output (atomically) and return its path."""
    if os.path.isdir(output):  # never raises (a name too long is CannotWrite below)
        raise InputError(
            "the report's -o is a directory: give a file name, e.g. report.html", path=output
        )
    run = load_run(run_dir)
    atomic_write_text(output, render_report(run, compress_over))
    return output
