"""The head-to-head task's per-item statistic for compare's paired test."""

from __future__ import annotations

from typing import Any

from clineval.benchmarks import SampleStatistic, ratio_statistic


def head_to_head_statistics(
    metrics: dict[str, Any], samples: list[dict[str, Any]]
) -> dict[str, SampleStatistic]:
    """The headline win rate (the first run over the second) as a pooled ratio over items,
    for compare's paired bootstrap."""
    runs = metrics.get("runs") or []
    if len(runs) < 2:
        return {}
    first, second = runs[0]["label"], runs[1]["label"]
    rows = [
        r
        for r in samples
        if r.get("run_a") == first
        and r.get("run_b") == second
        and isinstance(r.get("wins"), int | float)
    ]
    if not rows:
        return {}
    ids = [str(r["item"]) for r in rows]
    return {
        "win_rate": ratio_statistic(ids, [r["wins"] for r in rows], [r["weight"] for r in rows])
    }
