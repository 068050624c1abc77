"""Seeded, vectorized bootstrap helpers shared by every task's confidence intervals."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

DEFAULT_RESAMPLES = 1000


def bootstrap_indices(
    n: int, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> NDArray[np.intp]:
    """(n_resamples, n) indices drawn with replacement; the same seed gives the same draws."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, n, size=(n_resamples, n), dtype=np.intp)


def percentile_interval(values: NDArray[np.floating], level: float = 0.95) -> tuple[float, float]:
    """The central `level` percentile interval of bootstrap replicates."""
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(values, [alpha, 1.0 - alpha])
    return float(low), float(high)


def mean_interval(
    per_sample: NDArray[np.floating], n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> tuple[float, float]:
    """Bootstrap interval of a mean of per-sample values (accuracy, CACS terms, ...)."""
    values = np.asarray(per_sample, dtype=np.float64)
    if values.size == 0:
        return (float("nan"), float("nan"))
    idx = bootstrap_indices(values.size, n_resamples, seed)
    return percentile_interval(values[idx].mean(axis=1))
