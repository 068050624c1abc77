"""Published figures shown beside a run's own (`clineval report DIR --reference FILE`).

A reference file is JSON:

    {"references": [{"label": "GLiNER-large", "source": "NCER leaderboard, arXiv:2410.05046",
                     "results": {"ner:ncbi": {"token_macro_f1": 0.62}}}]}

Each figure is drawn next to the run's figure of the same task and metric (its card and the
overview), labelled with where it comes from. A reference is read, never computed: the file is
the reader's claim, and the report says whose.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clineval.errors import InputError
from clineval.jsonio import read_json_file
from clineval.messages import did_you_mean


@dataclass(frozen=True)
class Reference:
    label: str
    source: str
    results: dict[str, dict[str, float]]  # task -> metric -> value


def read_references(path: Path) -> list[Reference]:
    """The references of a file, every field checked (one `error: FILE: ...` line if not)."""
    data = read_json_file(path, "reference file")
    items = data.get("references") if isinstance(data, dict) else None
    if not isinstance(items, list) or not items:
        raise InputError(
            'expected {"references": [{"label", "source", "results"}, ...]}', path=path
        )
    out = []
    for i, item in enumerate(items):
        where = f"references[{i}]"
        if not isinstance(item, dict):
            raise InputError(f"{where} is not an object", path=path)
        label, source, results = item.get("label"), item.get("source", ""), item.get("results")
        if not isinstance(label, str) or not label.strip():
            raise InputError(f"{where}.label must be a non-empty string", path=path)
        if not isinstance(source, str):
            raise InputError(f"{where}.source must be a string", path=path)
        if not isinstance(results, dict):
            raise InputError(f"{where}.results must map task -> {{metric: number}}", path=path)
        checked: dict[str, dict[str, float]] = {}
        for task, figures in results.items():
            if not isinstance(figures, dict):
                raise InputError(f"{where}.results[{task!r}] must map metric -> number", path=path)
            declared = _declared_metrics(str(task))
            for metric, value in figures.items():
                # a misspelt declared key would never be shown: refused, with the key meant.
                # A key close to none may be a figure beyond the declared ones (a report
                # shows every scalar of the results), so it is kept.
                hint = (
                    "" if declared is None or metric in declared else did_you_mean(metric, declared)
                )
                if hint:
                    raise InputError(
                        f"{where}.results[{task!r}][{metric!r}]: {task} has no metric "
                        f"{metric!r}{hint}",
                        path=path,
                    )
                number = value if isinstance(value, int | float) else None
                if isinstance(value, bool) or number is None or not math.isfinite(number):
                    raise InputError(
                        f"{where}.results[{task!r}][{metric!r}] must be a finite number", path=path
                    )
                checked.setdefault(str(task), {})[str(metric)] = float(number)
        out.append(Reference(label.strip(), source.strip(), checked))
    return out


def _declared_metrics(task: str) -> list[str] | None:
    """The metric keys `task`'s installed benchmark declares; None for a task none declares
    (a plugin not installed here: its figures are kept, as its runs may show them)."""
    from clineval.benchmarks.registry import benchmark_of

    bench = benchmark_of(task)
    return None if bench is None else [spec.key for spec in bench.metrics.metrics]


def reference_lines(references: list[Reference], task: str, metric: str, fmt: Any) -> list[str]:
    """`label: value (source)` for each reference with a figure of this task and metric."""
    lines = []
    for ref in references:
        value = ref.results.get(task, {}).get(metric)
        if value is not None:
            source = f" ({ref.source})" if ref.source else ""
            lines.append(f"{ref.label}: {fmt(metric, value)}{source}")
    return lines
