"""Agreement between a judge and human raters, as pure functions (docs/metrics.md, "Agreement
with human labels", names each variant).

Labels arrive as a matrix: one row per unit (an item's criterion), one column per rater, nan
where a rater gave no label. Binary labels are 0.0 / 1.0, categorical ones small integer codes,
graded ones numbers.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
from numpy.typing import NDArray

Matrix = NDArray[np.float64]


def class_f1(pairs: Iterable[tuple[bool, bool]], positive: bool) -> float:
    """F1 of one class over (grader, physician) pairs; nan when it is undefined.

    Precision counts the pairs where the grader said `positive`, recall those where the
    physician did (HealthBench's meta-evaluation). When either count is zero the class's
    precision or recall has no denominator, and the F1 is undefined (nan), not 0: a grader that
    never says "not met" on a set where no physician did either has not failed at "not met".
    When both are defined and both 0, the F1 is 0.
    """
    tp = said = truth = 0
    for grader, physician in pairs:
        g, p = bool(grader) == positive, bool(physician) == positive
        said += g
        truth += p
        tp += g and p
    if said == 0 or truth == 0:
        return math.nan
    # 2PR/(P+R) with P = tp/said, R = tp/truth, which is 0 when tp is 0.
    return 2 * tp / (said + truth)


def pooled_balanced_f1(pairs: Iterable[tuple[bool, bool]]) -> float:
    """HealthBench's pooled pairwise balanced F1: the mean of the F1 of class True and the F1
    of class False over (grader_label, physician_label) pairs, where every grader label is
    paired with each single physician's label for the same criterion (pooled over items and
    physicians, not a majority).

    Zero-division rule: a class's F1 is undefined when the grader never gave that label or no
    physician did (its precision or its recall would divide by zero); then the balanced F1 is
    nan, as HealthBench's reference leaves it out (None). An empty input gives nan.
    scikit-learn's `f1_score(average="macro")` gives the same figure whenever both labels occur
    on both sides; where a class is missing on one side it counts that class's F1 as 0 instead.
    """
    listed = [(bool(g), bool(p)) for g, p in pairs]
    return (class_f1(listed, True) + class_f1(listed, False)) / 2
