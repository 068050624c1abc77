"""Per-sample statistics of ClinConsensus's headline metrics: s (criteria met) and judged per
case; CACS/pass@k over complete cases; for compare's paired bootstrap."""

from __future__ import annotations

from typing import Any

import numpy as np

from clineval.benchmarks.clinconsensus.report import n_criteria, thresholds
from clineval.benchmarks.clinconsensus.report_figures import s_of
from clineval.reportkit import statistics as st
from clineval.reportkit.rundata import finite_number


def _ids(samples: list[dict[str, Any]]) -> list[str]:
    return [str(r.get("id", i)) for i, r in enumerate(samples)]


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
