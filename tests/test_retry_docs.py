"""The README states what the code does: the retry waits' caps and the TCM-SD interval method."""

from __future__ import annotations

import random
import re
from pathlib import Path

from clineval.models.llm import RetryPolicy

README = Path(__file__).resolve().parents[1] / "README.md"


def _readme() -> str:
    return " ".join(README.read_text("utf-8").split())  # line breaks do not matter


def test_readme_states_the_retry_caps_the_policy_uses() -> None:
    text = _readme()
    policy = RetryPolicy()
    assert f"capped at {policy.max_delay_s:g} s" in text
    assert f"`Retry-After` (seconds or an HTTP date) up to {policy.max_retry_after_s:g} s" in text
    assert f"retried after {policy.max_retry_after_s:g} s (plus up to 10% jitter)" in text
    # ... and the policy does what that sentence says with a Retry-After of a day
    rng = random.Random(3)
    waits = [policy.delay(0, 86_400.0, rng) for _ in range(200)]
    assert min(waits) >= policy.max_retry_after_s
    assert max(waits) <= policy.max_retry_after_s * 1.1


def test_readme_names_the_tcm_interval_the_code_computes() -> None:
    import clineval.benchmarks.tcm_sd.metrics as classification

    text = _readme()
    assert "bias-corrected" not in text.lower()
    assert re.search(r"both are 95% percentile intervals .* drawn within the gold labels", text)
    # the code: plain percentile intervals of the stratified replicates, for both figures
    import numpy as np

    from clineval.metrics.bootstrap import percentile_interval

    rng = np.random.default_rng(5)
    gold = rng.integers(0, 6, 80)
    pred = np.where(rng.random(80) < 0.6, gold, rng.integers(-1, 6, 80))
    f1, _, acc = classification.bootstrap_scores(gold, pred, 6, 300, seed=2)
    intervals = classification.bootstrap_intervals(gold, pred, 6, 300, seed=2)
    assert intervals["macro_f1"] == percentile_interval(f1)
    assert intervals["accuracy"] == percentile_interval(acc)
