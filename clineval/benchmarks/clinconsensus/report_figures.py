"""What the ClinConsensus section computes and draws from the run's samples: the reverse-ECDF
plot of criteria met, the cases a CACS figure stands on, bootstrap intervals of the slices, hit
rates by criterion position."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from clineval.judge.verdict import read_verdict_rows
from clineval.report import plots
from clineval.report.rundata import finite_number


def s_of(row: dict[str, Any]) -> int | None:
    """Criteria met in a case: the stored s, else counted from single-judge verdicts."""
    value = finite_number(row.get("s"))
    if value is not None:
        return int(value)
    if isinstance(row.get("verdicts"), list):
        return sum(1 for v in read_verdict_rows(row) if v.met is True)
    return None


def case_task(row: dict[str, Any], task_name: str) -> Any:
    """The case's task category; `task` in a row may instead hold the run's task name."""
    for key in ("case_task", "task_type", "task_category"):
        if row.get(key) is not None:
            return row[key]
    value = row.get("task")
    return None if value == task_name else value


def reverse_ecdf_plot(shares: Sequence[float], ks: Sequence[int], title: str) -> str:
    """share(s >= L) for L = 0..N as a step curve, with the CACS thresholds k marked."""
    n = max(len(shares) - 1, 1)
    left, top, height, width = 50.0, 30.0, 180.0, 380.0

    def px(level: float) -> float:
        return left + width * level / n

    def py(share: float) -> float:
        return top + height * (1 - min(max(share, 0.0), 1.0))

    body = plots.y_axis(left, top, height, width, 1.0, "share of cases with s ≥ L")
    path = [f"M{plots.number(px(0))},{plots.number(py(shares[0]))}"]
    for level in range(1, n + 1):
        path.append(f"H{plots.number(px(level))}V{plots.number(py(shares[level]))}")
    path.append(f"H{plots.number(px(n))}")
    line = "".join(path)
    body.append(
        f'<path d="{line}V{plots.number(py(0))}H{plots.number(px(0))}Z" '
        f'fill="{plots.SERIES_COLORS[0]}" fill-opacity="0.12"/>'
    )
    body.append(
        f'<path d="{line}" fill="none" stroke="{plots.SERIES_COLORS[0]}" stroke-width="2"/>'
    )
    for level in range(0, n + 1, 5 if n > 12 else 1):
        body.append(plots.label(px(level), top + height + 14, str(level), "middle", "tick"))
    body.append(
        plots.label(left + width / 2, top + height + 30, "L = criteria met", "middle", "axis-label")
    )
    for j, k in enumerate(ks):
        if 0 <= k <= n:
            color = plots.SERIES_COLORS[(j + 2) % len(plots.SERIES_COLORS)]
            x = px(k)
            body.append(
                f'<line x1="{plots.number(x)}" x2="{plots.number(x)}" y1="{plots.number(top)}" '
                f'y2="{plots.number(top + height)}" stroke="{color}" stroke-dasharray="5,3" '
                f'stroke-width="1.5"><title>k = {k}</title></line>'
            )
            body.append(
                plots.label(
                    x + 4,
                    top + height - 8 - 14 * j,
                    f"k={k}: {shares[k]:.2f} of cases reach k",
                    "start",
                    "tick",
                    f' fill="{color}"',
                )
            )
    return plots.document(left + width + 20, top + height + 40, title, body)


def cases_note(metrics: dict[str, Any]) -> str:
    """How many cases a CACS figure stands on: cases with a judge error in any criterion are
    left out, so it can be far fewer than the cases run."""
    scored = finite_number(metrics.get("n_cases_scored"))
    total = finite_number(metrics.get("n_cases"))
    if scored is None:
        return ""
    if total is None or int(total) == int(scored):
        return f"on {int(scored):,} cases"
    return f"on {int(scored):,} of {int(total):,} cases (the rest have a judge error)"


SLICE_RESAMPLES = 1000


def slice_intervals(
    samples: list[dict[str, Any]],
    dim: str,
    names: list[str],
    n: int,
    k: int,
    task_name: str,
    seed: int,
) -> list[tuple[float, float] | None]:
    """A percentile bootstrap interval of CACS@k over each slice's cases (None when the
    samples do not carry the slice)."""
    by_value: dict[str, list[int]] = {}
    for row in samples:
        value = case_task(row, task_name) if dim == "task" else row.get(dim)
        s = s_of(row)
        # the stored slice figures stand on the complete cases only; so do their intervals
        if value is None or s is None or row.get("complete") is False:
            continue
        for name in value if isinstance(value, list) else [value]:
            by_value.setdefault(str(name), []).append(s)
    rng = np.random.default_rng(seed)
    out: list[tuple[float, float] | None] = []
    for name in names:
        values = by_value.get(name)
        if not values:
            out.append(None)
            continue
        arr = np.maximum(0.0, np.asarray(values, dtype=np.float64) - k + 1) * 100.0 / (n - k + 1)
        draws = rng.integers(0, arr.size, size=(SLICE_RESAMPLES, arr.size))
        means = arr[draws].mean(axis=1)
        out.append((float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))))
    return out


def criterion_hits(samples: list[dict[str, Any]]) -> dict[int, tuple[int, int, int, int]]:
    """Per criterion position (1-based): verdicts, met, not met, judge errors. With a judge
    panel a criterion has one row per judge and then the panel's; the last one counts."""
    hits: dict[int, list[int]] = {}
    for row in samples:
        # criterion id -> its last verdict, in rubric order
        final = {v.criterion_id: v for v in read_verdict_rows(row)}
        for position, v in enumerate(final.values(), start=1):
            met = v.met
            counts = hits.setdefault(position, [0, 0, 0, 0])
            counts[0] += 1
            counts[1 if met is True else 2 if met is False else 3] += 1
    return {pos: (c[0], c[1], c[2], c[3]) for pos, c in sorted(hits.items())}
