"""Per-sample statistics of each task family's headline metrics, from samples.jsonl rows.

They feed the paired bootstrap of `clineval compare` and the report's intervals for metrics a
task stored without one (NER). Each is rebuilt from what the task wrote per sample:
- NER: per-document counts in `scores` (token: {type: {tp, fp, fn}}; partial/exact:
  {correct, incorrect, missed, spurious}); the corpus metric is a function of their sums.
- TCM-SD: gold and pred labels, over the labels of `per_class` (all 148) when stored.
- ClinConsensus: s (criteria met) and judged per case; CACS/pass@k over complete cases.
A metric whose per-sample data are missing is simply absent.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from clineval.report import statistics as st
from clineval.report.rundata import finite_number, task_family
from clineval.report.sections_cc import n_criteria, s_of, thresholds

SPAN_FIELDS = ("correct", "incorrect", "missed", "spurious")


def _ids(samples: list[dict[str, Any]]) -> list[str]:
    return [str(r.get("id", i)) for i, r in enumerate(samples)]


def _gold_key(row: dict[str, Any]) -> str:
    """A fingerprint of a sample's gold answer (a paired test needs the same gold)."""
    gold = row.get("gold")
    return repr(gold)


def ner_statistics(
    metrics: dict[str, Any], samples: list[dict[str, Any]]
) -> dict[str, st.SampleStatistic]:
    out: dict[str, st.SampleStatistic] = {}
    scored = [r for r in samples if isinstance(r.get("scores"), dict)]
    if not scored or len(scored) != len(samples):
        return out
    ids = _ids(samples)
    gold = [_gold_key(r) for r in samples]
    per_type = metrics.get("per_type")
    types = list(per_type) if isinstance(per_type, dict) else []
    if not types:
        seen: dict[str, None] = {}
        for r in samples:
            for t in r["scores"].get("token", {}) or {}:
                seen.setdefault(str(t), None)
        types = list(seen)
    if types and all(isinstance(r["scores"].get("token"), dict) for r in samples):
        c = len(types)
        counts = np.zeros((len(samples), 3 * c))
        for i, r in enumerate(samples):
            tok = r["scores"]["token"]
            for k, t in enumerate(types):
                entry = tok.get(t) or {}
                counts[i, k] = entry.get("tp", 0)
                counts[i, c + k] = entry.get("fp", 0)
                counts[i, 2 * c + k] = entry.get("fn", 0)
        stat = st.counts_statistic(ids, counts, st.macro_f1_reducer(c))
        stat.gold = gold
        out["token_macro_f1"] = stat
    for scheme, key in (("partial", "span_partial_f1"), ("exact", "span_exact_f1")):
        if all(isinstance(r["scores"].get(scheme), dict) for r in samples):
            counts = np.array(
                [[r["scores"][scheme].get(f, 0) for f in SPAN_FIELDS] for r in samples],
                dtype=np.float64,
            )
            stat = st.counts_statistic(ids, counts, st.micro_f1_reducer)
            stat.gold = gold
            out[key] = stat
    return out


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


def cc_statistics(
    metrics: dict[str, Any], samples: list[dict[str, Any]]
) -> dict[str, st.SampleStatistic]:
    rows = [r for r in samples if s_of(r) is not None]
    if not rows:
        return {}
    n = n_criteria(metrics, rows)
    unmet = bool(metrics.get("judge_errors_as_unmet"))
    complete = [r for r in rows if unmet or r.get("complete", True)]
    out: dict[str, st.SampleStatistic] = {}
    ids_c = _ids(complete)
    s_c = np.array([s_of(r) for r in complete], dtype=np.float64)
    for k in thresholds(metrics):
        if 1 <= k <= n and complete:
            terms = 100.0 * np.maximum(0.0, s_c - k + 1) / (n - k + 1)
            out[f"cacs@{k}"] = st.mean_statistic(ids_c, terms)
            out[f"pass@{k}"] = st.mean_statistic(ids_c, (s_c >= k).astype(np.float64))
    met = [float(s_of(r) or 0) for r in rows]
    judged = []
    for r in rows:
        value = finite_number(r.get("judged"))
        judged.append(float(n) if unmet or value is None else value)
    out["rubric_accuracy"] = st.ratio_statistic(_ids(rows), met, judged)
    return out


def statistics_for(
    task: str, metrics: dict[str, Any], samples: list[dict[str, Any]]
) -> dict[str, st.SampleStatistic]:
    """{metric key: per-sample statistic} for the task's headline metrics that allow one."""
    family = task_family(task)
    if family == "ner":
        return ner_statistics(metrics, samples)
    if family == "tcm-sd":
        return tcm_statistics(metrics, samples)
    if family == "clinconsensus":
        return cc_statistics(metrics, samples)
    return {}
