"""The head-to-head report section: the shared cards, then every pair's figures and the
Bradley-Terry ranking beside its length-controlled fit."""

from __future__ import annotations

from typing import Any

from clineval.benchmarks import RunData, base_section, table_block


def _number(value: Any, digits: int = 3) -> str:
    return "-" if not isinstance(value, int | float) else f"{value:.{digits}f}"


def _interval(value: Any) -> str:
    if not isinstance(value, list) or len(value) != 2:
        return "-"
    return f"[{_number(value[0])}, {_number(value[1])}]"


def _pairs(metrics: dict[str, Any]) -> dict[str, Any]:
    rows = []
    for figures in (metrics.get("pairs") or {}).values():
        rows.append(
            [
                str(figures.get("run")),
                str(figures.get("other")),
                _number(figures.get("win_rate")),
                _interval(figures.get("win_rate_ci")),
                _number(figures.get("tie_rate")),
                _number(figures.get("position_consistency")),
                str(figures.get("n_items_scored")),
            ]
        )
    header = ["run", "against", "win rate", "95% interval", "tie rate", "consistency", "items"]
    note = (
        "win rate: the run's (wins + ties / 2) / items over the other; two orders that "
        "disagree are a tie (the disagreement option); interval: paired bootstrap over items"
    )
    return table_block("Every pair of runs", header, rows, note=note)


def _ranking(metrics: dict[str, Any]) -> dict[str, Any]:
    raw = metrics.get("bradley_terry") or {}
    controlled = metrics.get("bradley_terry_length_controlled") or {}
    names = list((raw.get("strengths") or {}) or (controlled.get("strengths") or {}))
    rows = []
    for name in names:
        a = (raw.get("strengths") or {}).get(name, {})
        b = (controlled.get("strengths") or {}).get(name, {})
        rows.append(
            [
                name,
                _number(a.get("strength")),
                _interval(a.get("ci")),
                _number(b.get("strength")),
                _interval(b.get("ci")),
            ]
        )
    missing = [f"{k}: {v['error']}" for k, v in (("fit", raw), ("length-controlled", controlled))
               if "error" in v]  # fmt: skip
    note = (
        "Bradley-Terry strengths (log-odds, centred on the mean), 95% bootstrap intervals "
        "over items; length-controlled: the standardised normalised length difference as a "
        f"covariate (coefficient {_number(metrics.get('length_effect'))})"
    )
    header = ["run", "strength", "95% interval", "length-controlled", "95% interval"]
    return table_block("Ranking", header, rows, note="; ".join([note, *missing]))


def build(run: RunData, task: str) -> dict[str, Any]:
    """The task's report section (the declaration's `report_section`)."""
    from clineval.benchmarks.head_to_head import BENCHMARK

    metrics = run.results.get(task, {})
    section = base_section(run, task, BENCHMARK.family, BENCHMARK.metrics)
    section["blocks"].extend([_pairs(metrics), _ranking(metrics)])
    return section
