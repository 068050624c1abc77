"""ClinConsensus metrics (arXiv:2603.02097), pure functions over per-case counts.

s_i = criteria met in case i, out of N rubric criteria a case (30 in the release).
  CACS@k        = 100 / (|D| (N - k + 1)) * sum_i max(0, s_i - k + 1)
  pass@k        = share of cases with s_i >= k
  rubric acc.   = met / judged, pooled over all criteria that have a verdict
  curve         = reverse ECDF: share of cases with s_i >= L for L = 0..N
CACS@k also equals 100 / (N - k + 1) * sum_{L=k..N} share(s >= L) (its survival form), which the
tests use as an independent oracle.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from clineval.metrics.bootstrap import bootstrap_indices, percentile_interval

DEFAULT_KS = (7, 10)


def _counts(s: ArrayLike) -> NDArray[np.int64]:
    arr = np.asarray(s, dtype=np.int64)
    if arr.ndim != 1:
        raise ValueError("s must be a 1-d array of per-case met counts")
    return arr


def cacs_terms(s: ArrayLike, n: int, k: int) -> NDArray[np.float64]:
    """Per-case contributions in percent; CACS@k is their mean (so a bootstrap can resample)."""
    if not 1 <= k <= n:
        raise ValueError(f"CACS@k needs 1 <= k <= N (k={k}, N={n})")
    counts = _counts(s)
    if counts.size and (counts.min() < 0 or counts.max() > n):
        raise ValueError(f"met counts must lie in [0, {n}]")
    return 100.0 * np.maximum(0, counts - k + 1) / (n - k + 1)


def cacs(s: ArrayLike, n: int, k: int) -> float:
    """CACS@k in percent; nan for no cases."""
    terms = cacs_terms(s, n, k)
    return float(terms.mean()) if terms.size else float("nan")


def pass_at_k(s: ArrayLike, k: int) -> float:
    counts = _counts(s)
    return float((counts >= k).mean()) if counts.size else float("nan")


def rubric_accuracy(met: ArrayLike, judged: ArrayLike) -> float:
    """Pooled met / judged (arrays are per case, so cases with more verdicts weigh more)."""
    total = float(np.sum(judged))
    return float(np.sum(met)) / total if total > 0 else float("nan")


def reverse_ecdf(s: ArrayLike, n: int) -> NDArray[np.float64]:
    """share(s >= L) for L = 0..n (length n + 1; the first value is 1 when there are cases)."""
    counts = _counts(s)
    if counts.size == 0:
        return np.full(n + 1, np.nan)
    hist = np.bincount(np.clip(counts, 0, n), minlength=n + 1)
    at_least = np.cumsum(hist[::-1])[::-1]
    return at_least / counts.size


def _interval(replicates: NDArray[np.float64]) -> list[float] | None:
    finite = replicates[np.isfinite(replicates)]
    if finite.size == 0:
        return None
    return list(percentile_interval(finite))


def case_level_metrics(
    s: ArrayLike,
    n: int,
    ks: Sequence[int] = DEFAULT_KS,
    n_resamples: int = 1000,
    seed: int = 0,
) -> dict[str, Any]:
    """cacs@k and pass@k for each k (k > n gives null), with seeded 95% bootstrap intervals."""
    counts = _counts(s)
    out: dict[str, Any] = {}
    idx = bootstrap_indices(counts.size, n_resamples, seed) if counts.size else None
    for k in ks:
        if not 1 <= k <= n:
            out[f"cacs@{k}"] = None
            out[f"pass@{k}"] = None
            continue
        terms = cacs_terms(counts, n, k)
        passed = (counts >= k).astype(np.float64)
        out[f"cacs@{k}"] = float(terms.mean()) if counts.size else None
        out[f"pass@{k}"] = float(passed.mean()) if counts.size else None
        if idx is not None:
            out[f"cacs@{k}_ci95"] = _interval(terms[idx].mean(axis=1))
            out[f"pass@{k}_ci95"] = _interval(passed[idx].mean(axis=1))
    return out


def rubric_accuracy_interval(
    met: ArrayLike, judged: ArrayLike, n_resamples: int = 1000, seed: int = 0
) -> list[float] | None:
    """Bootstrap over cases of the pooled ratio sum(met) / sum(judged)."""
    met_arr = np.asarray(met, dtype=np.float64)
    judged_arr = np.asarray(judged, dtype=np.float64)
    if met_arr.size == 0:
        return None
    idx = bootstrap_indices(met_arr.size, n_resamples, seed)
    num = met_arr[idx].sum(axis=1)
    den = judged_arr[idx].sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratios = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
    return _interval(ratios)
