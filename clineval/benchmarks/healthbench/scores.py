"""HealthBench's figures as the authors' code computes them (pure functions; each defined in
docs/metrics.md, "HealthBench", with where clineval departs from the authors)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from clineval.benchmarks import bootstrap_indices, percentile_interval, pooled_balanced_f1

RESAMPLES = 1000  # the authors' count


def points_score(points: Sequence[float], met: Sequence[float]) -> float | None:
    """Points met (negatives included) over positive points, unclipped (None: none positive)."""
    possible = sum(p for p in points if p > 0)
    return sum(p for p, m in zip(points, met, strict=True) if m) / possible if possible else None


def example_figures(
    tags: Sequence[str], criteria: Sequence[Any], met: Sequence[float]
) -> dict[str, float]:
    """One example's tag figures: each example tag its score; each rubric tag the score over
    its own criteria (`.points`, `.tags`), left out where they have no positive points."""
    out = dict.fromkeys(tags, points_score([c.points for c in criteria], met))
    sums: dict[str, list[float]] = {}  # per rubric tag: points met, positive points
    for c, m in zip(criteria, met, strict=True):  # one pass: this runs per example
        for tag in c.tags:
            got = sums.setdefault(tag, [0.0, 0.0])
            got[0], got[1] = got[0] + (c.points if m else 0.0), got[1] + max(c.points, 0.0)
    out |= {tag: won / possible for tag, (won, possible) in sums.items() if possible}
    return {k: v for k, v in out.items() if v is not None}


def clipped_stats(key: str, values: Sequence[float], seed: int, sample: bool) -> dict[str, Any]:
    """KEY, the clipped mean of `values`, and its `:bootstrap_std`, `_ci`, `:n_samples` (draws
    seeded; the authors' are not). `sample`: each value clipped first (inspect_evals)."""
    data = np.clip(values, 0.0, 1.0) if sample else np.asarray(values, dtype=np.float64)
    means = np.clip(data[bootstrap_indices(data.size, RESAMPLES, seed)].mean(axis=1), 0.0, 1.0)
    return {
        key: float(np.clip(data.mean(), 0.0, 1.0)),
        f"{key}:bootstrap_std": float(np.std(means)),
        f"{key}_ci": list(percentile_interval(means)),
        f"{key}:n_samples": int(data.size),
    }


def agreement(pairs: Sequence[tuple[bool, bool]]) -> dict[str, Any]:
    """The pooled balanced F1 of (rater, other) pairs (None: a class's F1 is undefined) and
    the authors' count: per class the pairs where either side said it, summed over both
    classes (the pairs plus their disagreements)."""
    value = pooled_balanced_f1(pairs)
    n = len(pairs) + sum(own != other for own, other in pairs)
    return {"balanced_f1": None if math.isnan(value) else value, "n": n}


def physician_figures(
    rows: Sequence[tuple[Sequence[str], Sequence[bool], str]],
) -> dict[str, dict[str, Any]]:
    """Each physician's leave-one-out balanced F1 against the other physicians' labels on the
    same rows ((physician ids, labels, category) per row), overall and per category."""
    pooled: dict[str, list[tuple[bool, bool]]] = {}
    by_category: dict[str, dict[str, list[tuple[bool, bool]]]] = {}
    for ids, labels, category in rows:
        for i, (who, own) in enumerate(zip(ids, labels, strict=True)):
            pairs = [(own, other) for j, other in enumerate(labels) if j != i]
            pooled.setdefault(who, []).extend(pairs)
            by_category.setdefault(who, {}).setdefault(category, []).extend(pairs)
    return {
        who: {
            **agreement(pairs),
            "by_category": {c: agreement(p) for c, p in sorted(by_category[who].items())},
        }
        for who, pairs in sorted(pooled.items())
    }


def majority_agreement(pairs: Sequence[tuple[bool, bool]]) -> dict[str, Any]:
    """inspect_evals' figure over (grader, the physicians' majority) pairs, one per row: the
    macro F1 of the two classes (None where one's F1 is undefined; scikit-learn counts 0)."""
    value = pooled_balanced_f1(pairs)
    return {"macro_f1": None if math.isnan(value) else value, "n": len(pairs)}
