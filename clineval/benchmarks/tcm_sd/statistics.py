"""Per-sample statistics of TCM-SD's headline metrics: gold and pred labels, over the labels of
`per_class` (all 148) when stored; for compare's paired bootstrap."""

from __future__ import annotations

from typing import Any

from clineval.reportkit import statistics as st


def _ids(samples: list[dict[str, Any]]) -> list[str]:
    return [str(r.get("id", i)) for i, r in enumerate(samples)]


def tcm_statistics(
    metrics: dict[str, Any], samples: list[dict[str, Any]]
) -> dict[str, st.SampleStatistic]:
    rows = [r for r in samples if r.get("gold") is not None]
    if not rows:
        return {}
    ids = _ids(rows)
    gold = [str(r["gold"]) for r in rows]
    pred = [None if r.get("pred") is None else str(r["pred"]) for r in rows]
    per_class = metrics.get("per_class")
    labels: list[str] = list(per_class) if isinstance(per_class, dict) and per_class else []
    if not labels:
        labels = sorted(set(gold) | {p for p in pred if p is not None})
    # A pred outside `labels` is invalid: a miss for its gold label, never a false positive.
    f1 = st.macro_f1_statistic(ids, gold, pred, labels)
    correct = [float(p is not None and p == g) for g, p in zip(gold, pred, strict=True)]
    return {"macro_f1": f1, "accuracy": st.mean_statistic(ids, correct, gold)}
