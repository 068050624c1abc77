"""HealthBench's figures as the authors' code computes them (pure functions; docs/metrics.md).

An example's score: the points of its met criteria, negative ones included, over its positive
points, unclipped. A figure over examples: their mean clipped to [0, 1], its bootstrap std (the
std of 1,000 clipped means of resamples) and the 95% percentile interval of those means. The
meta-evaluation: balanced F1 of pooled (rater, other rater) label pairs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from clineval.benchmarks import bootstrap_indices, percentile_interval

RESAMPLES = 1000  # the authors' count


def points_score(points: Sequence[float], met: Sequence[float]) -> float | None:
    """Points met over positive points (None: no criterion with positive points)."""
    possible = sum(p for p in points if p > 0)
    if possible == 0:
        return None
    return sum(p for p, m in zip(points, met, strict=True) if m) / possible


def example_figures(
    example_tags: Sequence[str],
    rubric_tags: Sequence[Sequence[str]],
    points: Sequence[float],
    met: Sequence[float],
) -> dict[str, float]:
    """One example's tag figures: each example tag its overall score; each rubric tag the
    score over its own criteria, left out where they have no positive points."""
    overall = points_score(points, met)
    assert overall is not None, "the reader refuses a rubric without positive points"
    out = dict.fromkeys(example_tags, overall)
    for tag in dict.fromkeys(t for tags in rubric_tags for t in tags):
        chosen = [i for i, tags in enumerate(rubric_tags) if tag in tags]
        score = points_score([points[i] for i in chosen], [met[i] for i in chosen])
        if score is not None:
            out[tag] = score
    return out


def clipped_stats(values: Sequence[float], seed: int, per_sample: bool = False) -> dict[str, Any]:
    """{mean, bootstrap_std, ci, n}: the clipped mean of `values` and its bootstrap (seeded
    where the authors' draws are not). `per_sample`: each value clipped first (inspect_evals)."""
    data = np.asarray(values, dtype=np.float64)
    if per_sample:
        data = np.clip(data, 0.0, 1.0)
    if data.size == 0:
        return {"mean": None, "bootstrap_std": None, "ci": None, "n": 0}
    means = np.clip(data[bootstrap_indices(data.size, RESAMPLES, seed)].mean(axis=1), 0.0, 1.0)
    return {
        "mean": float(np.clip(data.mean(), 0.0, 1.0)),
        "bootstrap_std": float(np.std(means)),
        "ci": list(percentile_interval(means)),
        "n": int(data.size),
    }


def _f1(precision: dict[str, Any], recall: dict[str, Any]) -> dict[str, Any]:
    p, r = precision["value"], recall["value"]
    if p is None or r is None:
        return {"n": precision["n"] + recall["n"], "value": None}
    n = precision["n"] + recall["n"] - p * precision["n"]
    return {"n": n, "value": 0.0 if p == r == 0 else 2 * p * r / (p + r)}


def balanced_f1(pairs: Iterable[tuple[bool, bool]]) -> dict[str, Any]:
    """The authors' pooled agreement of (rater, other) label pairs: precision of a class =
    agreement where the rater said it, recall = agreement where the other said it, F1 per
    class (0 when both are 0, None when one is undefined), balanced F1 their mean; each figure
    with its count as the authors count it (`n`)."""
    hits: dict[str, list[bool]] = {}
    for own, other in pairs:
        agree = own == other
        hits.setdefault(f"precision_{'pos' if own else 'neg'}", []).append(agree)
        hits.setdefault(f"recall_{'pos' if other else 'neg'}", []).append(agree)
    out: dict[str, Any] = {}
    for metric in ("precision", "recall"):
        for cls in ("pos", "neg"):
            got = hits.get(f"{metric}_{cls}", [])
            out[f"{metric}_{cls}"] = {"n": len(got), "value": sum(got) / len(got) if got else None}
    for cls in ("pos", "neg"):
        out[f"f1_{cls}"] = _f1(out[f"precision_{cls}"], out[f"recall_{cls}"])
    pos, neg = out["f1_pos"], out["f1_neg"]
    value = (
        None if pos["value"] is None or neg["value"] is None else (pos["value"] + neg["value"]) / 2
    )
    out["balanced_f1"] = {"n": pos["n"] + neg["n"], "value": value}
    return out


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
    out = {}
    for who, pairs in pooled.items():
        figure = balanced_f1(pairs)["balanced_f1"]
        cats = {c: balanced_f1(p)["balanced_f1"] for c, p in by_category[who].items()}
        out[who] = {"balanced_f1": figure["value"], "n": figure["n"], "by_category": cats}
    return out


def weighted_mean(figures: Mapping[str, Mapping[str, Any]]) -> float | None:
    """The n-weighted mean of the physicians' balanced F1 (the authors' analysis notebook)."""
    known = [(f["balanced_f1"], f["n"]) for f in figures.values() if f["balanced_f1"] is not None]
    total = sum(n for _, n in known)
    return sum(v * n for v, n in known) / total if total else None


def percentile_among(value: float | None, others: Iterable[float | None]) -> float | None:
    """The percentage of physicians below `value`, ties counting half (scipy's
    percentileofscore, kind="mean")."""
    known = [o for o in others if o is not None]
    if value is None or not known:
        return None
    below = sum(o < value for o in known) + sum(o == value for o in known) / 2
    return 100.0 * below / len(known)
