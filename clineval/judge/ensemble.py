"""Several judges on the same criteria: an aggregate verdict and agreement between judges.

Verdicts are encoded as a float array: 1.0 met, 0.0 not met, nan judge_error (no verdict).
Aggregation rules (per criterion, over the judges that gave a verdict):
  majority  met if more than half of them say met; a tie is NOT met (the strict reading a
            split panel gives; ties are counted and reported)
  all       met only if every one of them says met
  any       met if at least one says met
No judge with a verdict -> the aggregate is a judge_error too.
Graded verdicts (numbers): `mean_grades`, the mean of the answering judges' grades.
Categorical verdicts (labels): `majority_label`, the label more than half of the answering
judges gave, else the kind's tie label (a split panel; None when the kind has none).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Any

import numpy as np
from numpy.typing import NDArray

AGGREGATES = ("majority", "all", "any")


def aggregate(verdicts: NDArray[np.float64], rule: str = "majority") -> NDArray[np.float64]:
    """(n_judges, n_items) -> (n_items,) aggregate verdicts with nan where no judge answered."""
    if rule not in AGGREGATES:
        raise ValueError(f"unknown aggregate {rule!r} (known: {AGGREGATES})")
    v = np.atleast_2d(np.asarray(verdicts, dtype=np.float64))
    answered = (~np.isnan(v)).sum(axis=0)
    met = np.nansum(v, axis=0) if v.size else np.zeros(v.shape[1])
    if rule == "majority":
        out = (2 * met > answered).astype(np.float64)
    elif rule == "all":
        out = (met == answered).astype(np.float64)
    else:
        out = (met > 0).astype(np.float64)
    out[answered == 0] = np.nan
    return np.asarray(out, dtype=np.float64)


def mean_grades(grades: NDArray[np.float64]) -> NDArray[np.float64]:
    """(n_judges, n_items) grades -> (n_items,) their mean over the judges that gave one."""
    g = np.atleast_2d(np.asarray(grades, dtype=np.float64))
    answered = (~np.isnan(g)).sum(axis=0)
    total = np.nansum(g, axis=0)
    out = np.full(g.shape[1], np.nan)
    np.divide(total, answered, out=out, where=answered > 0)
    return out


def majority_label(labels: Sequence[str | None], tie: str | None) -> tuple[str | None, bool]:
    """(the panel's label, whether the panel split) from its judges' labels (None: no
    verdict). A strict majority of the answering judges decides; else `tie`."""
    given = [label for label in labels if label is not None]
    if not given:
        return None, False
    best = max(set(given), key=given.count)
    if 2 * given.count(best) > len(given):
        return best, False
    return tie, True


def count_ties(verdicts: NDArray[np.float64]) -> int:
    """Items where the answering judges split exactly in half (decided as not met by majority)."""
    v = np.atleast_2d(np.asarray(verdicts, dtype=np.float64))
    answered = (~np.isnan(v)).sum(axis=0)
    met = np.nansum(v, axis=0)
    return int(((answered > 0) & (2 * met == answered)).sum())


def cohen_kappa(a: NDArray[np.float64], b: NDArray[np.float64]) -> float | None:
    """Cohen's kappa of two binary raters on items both rated (nan dropped); None if undefined.

    Undefined when expected agreement is 1 (both raters used one and the same label on every
    item): sklearn returns nan there; reporting null keeps that visible.
    """
    a, b = _paired(a, b)
    n = a.size
    if n == 0:
        return None
    observed = float((a == b).mean())
    pa, pb = float(a.mean()), float(b.mean())
    expected = pa * pb + (1 - pa) * (1 - pb)
    if expected >= 1.0:
        return None
    return (observed - expected) / (1.0 - expected)


def percent_agreement(a: NDArray[np.float64], b: NDArray[np.float64]) -> float | None:
    """Share of items, among those both judges rated, with the same verdict."""
    a, b = _paired(a, b)
    return float((a == b).mean()) if a.size else None


def _paired(
    a: NDArray[np.float64], b: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    both = ~np.isnan(a) & ~np.isnan(b)
    return a[both], b[both]


def agreement_table(verdicts: Mapping[str, NDArray[np.float64]]) -> dict[str, Any]:
    """Pairwise percent agreement and Cohen's kappa between judges, plus their means."""
    pairs: list[dict[str, Any]] = []
    labels: Sequence[str] = list(verdicts)
    for first, second in combinations(labels, 2):
        a, b = verdicts[first], verdicts[second]
        pairs.append(
            {
                "judges": [first, second],
                "n_items": int((~np.isnan(a) & ~np.isnan(b)).sum()),
                "percent_agreement": percent_agreement(a, b),
                "cohen_kappa": cohen_kappa(a, b),
            }
        )
    agreements = [p["percent_agreement"] for p in pairs if p["percent_agreement"] is not None]
    kappas = [p["cohen_kappa"] for p in pairs if p["cohen_kappa"] is not None]
    return {
        "pairs": pairs,
        "mean_percent_agreement": float(np.mean(agreements)) if agreements else None,
        "mean_cohen_kappa": float(np.mean(kappas)) if kappas else None,
    }
