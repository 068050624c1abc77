"""The one window planner of the authoring surface (clineval.benchmarks.plan_windows), against
hand-computed plans: every token covered in order, the budget and size kept, the declared
overlap, and a token over the budget standing alone."""

from __future__ import annotations

import itertools
import random

import pytest

from clineval.benchmarks import Window, plan_windows


def test_hand_computed_plans_without_overlap() -> None:
    # 2+3 = 5 fits, +1 would be 6; then 1+4 = 5; then the last 1
    assert plan_windows([2, 3, 1, 4, 1], budget=5) == [Window(0, 2), Window(2, 4), Window(4, 5)]
    # a token of 9 against a budget of 4: a window of its own, never dropped or split
    assert plan_windows([1, 9, 1], budget=4) == [(0, 1), (1, 2), (2, 3)]
    assert plan_windows([9], budget=4) == [(0, 1)]
    # a cost below 1 counts as 1 (a word the tokenizer gave no piece still takes a place)
    assert plan_windows([0, 0, 0], budget=2) == [(0, 2), (2, 3)]
    assert plan_windows([], budget=4) == []


def test_hand_computed_plans_with_overlap_and_a_size() -> None:
    # windows of 20 of 50 tokens sharing 8: starts 0, 12, 24, 36
    windows = plan_windows([1] * 50, budget=100, max_tokens=20, overlap=8)
    assert windows == [Window(0, 20), Window(12, 32), Window(24, 44), Window(36, 50)]
    # a short input is one window
    assert plan_windows([1] * 20, budget=100, max_tokens=20, overlap=8) == [Window(0, 20)]
    # the budget cuts first: 2+2+2 = 6, the next window starts one token back
    assert plan_windows([2] * 6, budget=6, overlap=1) == [(0, 3), (2, 5), (4, 6)]
    # an overlap of 10 on windows of 4 is capped at half a window (2), so the plan advances
    assert plan_windows([1] * 10, budget=100, max_tokens=4, overlap=10) == [
        (0, 4),
        (2, 6),
        (4, 8),
        (6, 10),
    ]


def test_a_window_unpacks_to_its_bounds() -> None:
    start, end = plan_windows([1, 1, 1], budget=2)[1]
    assert (start, end) == (2, 3)


@pytest.mark.parametrize(
    ("budget", "max_tokens", "overlap"), [(0, None, 0), (1, 0, 0), (1, None, -1)]
)
def test_bad_settings_are_refused(budget: int, max_tokens: int | None, overlap: int) -> None:
    with pytest.raises(ValueError):
        plan_windows([1, 1], budget=budget, max_tokens=max_tokens, overlap=overlap)


@pytest.mark.parametrize("seed", range(30))
def test_random_plans_keep_every_rule(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(0, 200)
    costs = [rng.randint(0, 6) for _ in range(n)]
    budget = rng.randint(1, 12)
    max_tokens = rng.choice([None, rng.randint(1, 15)])
    overlap = rng.randint(0, 8)
    windows = plan_windows(costs, budget, max_tokens, overlap)
    limit = n if max_tokens is None else max_tokens
    # every token, in order, none left out
    assert {i for w in windows for i in range(w.start, w.end)} == set(range(n))
    assert windows == [] if n == 0 else (windows[0].start, windows[-1].end) == (0, n)
    for w in windows:
        size, used = w.end - w.start, sum(max(c, 1) for c in costs[w.start : w.end])
        assert 1 <= size <= limit
        assert used <= budget or size == 1  # only a lone token may exceed the budget
        # as many tokens as fit: the next one would break the budget or the size
        if w.end < n:
            assert size == limit or used + max(costs[w.end], 1) > budget
    for a, b in itertools.pairwise(windows):
        assert a.start < b.start  # the plan advances
        assert a.end - b.start == min(overlap, (a.end - a.start) // 2)  # the declared overlap
