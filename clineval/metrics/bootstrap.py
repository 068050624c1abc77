"""Seeded, vectorized bootstrap helpers shared by every task's confidence intervals."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from numpy.typing import NDArray

DEFAULT_RESAMPLES = 1000


def bootstrap_indices(
    n: int, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> NDArray[np.intp]:
    """(n_resamples, n) indices drawn with replacement; the same seed gives the same draws."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, n, size=(n_resamples, n), dtype=np.intp)


def bootstrap_index_chunks(
    n: int, n_resamples: int, seed: int = 0, chunk: int = 250
) -> Iterator[NDArray[np.intp]]:
    """The rows of `bootstrap_indices(n, n_resamples, seed)`, `chunk` rows at a time.

    The same draws (one generator read in order), without holding all of them: 200,000
    resamples of 5,000 samples would be 8 GB at once. So the first B rows of a larger draw are
    the B rows of a smaller one, and a test that needs more resamples extends its replicates.
    """
    rng = np.random.default_rng(seed)
    for start in range(0, n_resamples, chunk):
        yield rng.integers(0, n, size=(min(chunk, n_resamples - start), n), dtype=np.intp)


def stratified_bootstrap_indices(
    strata: NDArray[np.integer], n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> NDArray[np.intp]:
    """(n_resamples, n) indices drawn with replacement WITHIN each stratum.

    Every resample keeps each stratum's size. For Macro-F1 with the gold label as stratum this
    matters: an unstratified resample drops rare labels (scoring them 0), which biases the
    resampled Macro-F1 low and can put the whole interval below the point estimate; TCM-SD's
    test split has fixed per-label sizes by construction, so resampling within labels also
    mirrors how the split was drawn.
    """
    strata = np.asarray(strata)
    order = np.argsort(strata, kind="stable")
    _, first, sizes = np.unique(strata[order], return_index=True, return_counts=True)
    # For each position (in stratum-sorted order): its stratum's start and size.
    start_of = np.repeat(first, sizes)
    size_of = np.repeat(sizes, sizes)
    rng = np.random.default_rng(seed)
    draws = rng.random((n_resamples, strata.size))
    within = start_of + np.floor(draws * size_of).astype(np.intp)
    picked: NDArray[np.intp] = order[within]
    return picked


def percentile_interval(values: NDArray[np.floating], level: float = 0.95) -> tuple[float, float]:
    """The central `level` percentile interval of bootstrap replicates."""
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(values, [alpha, 1.0 - alpha])
    return float(low), float(high)
