"""What the ClinConsensus section computes and draws from the run's samples: the reverse-ECDF
plot of criteria met, the cases a CACS figure stands on, bootstrap intervals of the slices, the
criteria most often unmet."""

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
        if not values or len(values) < plots.MIN_INTERVAL_N:  # [x, x] of one case is none
            out.append(None)
            continue
        arr = np.maximum(0.0, np.asarray(values, dtype=np.float64) - k + 1) * 100.0 / (n - k + 1)
        draws = rng.integers(0, arr.size, size=(SLICE_RESAMPLES, arr.size))
        means = arr[draws].mean(axis=1)
        out.append((float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))))
    return out


MOST_UNMET_ROWS = 30


def unmet_criteria(
    samples: list[dict[str, Any]],
) -> tuple[str, list[tuple[str, int, int, int, int]]]:
    """The criteria most often not met, grouped by category (a criterion's first tag, where
    the benchmark gives tags) else by criterion text (the same wording in several cases is
    one row): (what the rows group by, [(criterion, cases, met, not met, judge errors)]),
    most not-met first, then by not-met share, then by text; at most MOST_UNMET_ROWS rows.
    With a judge panel a criterion has one row per judge and then the panel's: the last
    counts. A rubric position means nothing across cases, so it is no key here."""
    groups: dict[str, list[int]] = {}
    tagged = False
    for row in samples:
        final = {v.criterion_id: v for v in read_verdict_rows(row)}
        for v in final.values():
            key = v.tags[0] if v.tags else " ".join(v.criterion.split())
            tagged = tagged or bool(v.tags)
            if not key:
                continue
            counts = groups.setdefault(key, [0, 0, 0, 0])
            counts[0] += 1
            counts[1 if v.met is True else 2 if v.met is False else 3] += 1
    rows = [(key, c[0], c[1], c[2], c[3]) for key, c in groups.items() if c[2] > 0]
    rows.sort(key=lambda r: (-r[3], -r[3] / max(r[2] + r[3], 1), r[0]))
    return ("category" if tagged else "criterion", rows[:MOST_UNMET_ROWS])
