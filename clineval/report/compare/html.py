"""The comparison as an HTML page: the leaderboard, the paired tests, difference and cost plots."""

from __future__ import annotations

from markupsafe import Markup

from clineval.report.compare.model import Comparison
from clineval.report.compare.render import (
    BEST_NOTE,
    INTERVAL_NOTE,
    PAIR_HEADER,
    _fmt_cell,
    _pair_text,
    _run_label,
    cost_lines,
    pair_figures,
    resampling_lines,
)
from clineval.reportkit import plots


def render_html(comp: Comparison) -> str:
    from clineval.report.html import asset, environment

    rows = []
    for i in range(len(comp.runs)):
        cells = []
        for task, key in comp.columns:
            cells.append(
                {
                    "text": _fmt_cell(
                        key, comp.cells.get((i, task, key)), digits=comp.digits(task, key)
                    ),
                    "best": comp.best(task, key) == i,
                }
            )
        rows.append(
            {
                "label": _run_label(comp, i),
                "model": comp.models[i],
                "settings": comp.settings(i),
                "samples_note": comp.samples_note(i),
                "cells": cells,
            }
        )
    return (
        environment()
        .get_template("compare.html.j2")
        .render(
            columns=comp.columns,
            rows=rows,
            pair_header=PAIR_HEADER,
            pairs=[_pair_text(p, comp.digits(p.task, p.metric)) for p in comp.pairs],
            any_fixture=any(comp.fixture_runs),
            interval_note=INTERVAL_NOTE,
            best_note=BEST_NOTE,
            difference_plots=[Markup(svg) for svg in difference_plots(comp)],
            cost_plots=[Markup(svg) for svg in cost_plots(comp)],
            cost_lines=cost_lines(comp),
            resampling_lines=resampling_lines(comp),
            differing=comp.differences.keys,
            css=Markup(asset("report.css")),
        )
    )


def difference_plots(comp: Comparison) -> list[str]:
    """Per task and metric, every tested pair's difference A - B with its 95% interval."""
    out = []
    for task, key in comp.columns:
        rows = [
            (p, r)
            for p in comp.pairs
            if (p.task, p.metric) == (task, key) and (r := pair_figures(p)) is not None
        ]
        if not rows:
            continue
        out.append(
            plots.interval_dots(
                [f"{p.run_a} - {p.run_b} (n={r.n_shared})" for p, r in rows],
                [r.difference for _, r in rows],
                [r.ci for _, r in rows],
                f"{task} {key}: paired differences A - B, 95% interval",
                "A - B",
            )
        )
    return out


def cost_plots(comp: Comparison) -> list[str]:
    """Per task, each run's primary figure against its estimated cost."""
    costs = comp.costs
    if sum(c is not None for c in costs) < 1:
        return []
    out = []
    for task in dict.fromkeys(t for t, _ in comp.columns):
        key = next(k for t, k in comp.columns if t == task)
        points = [
            (_run_label(comp, i), cost, cell.value)
            for i, cost in enumerate(costs)
            if cost is not None and (cell := comp.cells.get((i, task, key))) is not None
        ]
        if points:
            out.append(
                plots.scatter(
                    [p[0] for p in points],
                    [p[1] for p in points],
                    [p[2] for p in points],
                    f"{task}: {key} against estimated cost",
                    "estimated cost (USD)",
                    key,
                )
            )
    return out
