"""The merge of overlapping windows (clineval.benchmarks.ner.span_windows): it keeps each span
once, never a cut piece, whatever the order. The planner itself: tests/test_windows.py."""

from __future__ import annotations

import random

import pytest

from clineval.benchmarks import Window, plan_windows
from clineval.benchmarks.ner.span_windows import TokenSpan, merge, owner


def _covered(windows: list[Window], n: int) -> bool:
    seen = {i for w in windows for i in range(w.start, w.end)}
    return seen == set(range(n))


def test_owner_is_the_most_central_window_and_the_earliest_on_a_tie() -> None:
    windows = [Window(0, 20), Window(12, 32)]
    assert owner(windows, 13, 15, 32) == (0, 5)  # 5 tokens from window 0's end, 1 from 1's start
    assert owner(windows, 17, 19, 32) == (1, 5)
    assert owner(windows, 14, 18, 32) == (0, 2)  # margin 2 in both: the earlier window
    # the document's own ends are not edges: a span there keeps a positive margin
    assert owner(windows, 0, 2, 32)[0] == 0 and owner(windows, 0, 2, 32)[1] > 0
    assert owner(windows, 30, 32, 32)[0] == 1 and owner(windows, 30, 32, 32)[1] > 0
    assert owner(windows, 5, 25, 32) == (-1, -1)  # no window holds it whole


def test_a_span_seen_by_two_windows_counts_once() -> None:
    windows = [Window(0, 20), Window(12, 32)]
    span = TokenSpan(14, 16, "drug", 0.9)
    merged = merge(windows, [[span], [TokenSpan(14, 16, "drug", 0.7)]], 32, flat=True)
    assert merged == [span]  # the owner's prediction (window 0), once


def test_a_span_at_an_inner_window_edge_is_never_kept_cut() -> None:
    windows = [Window(0, 20), Window(12, 32)]
    cut = TokenSpan(17, 20, "condition", 0.99)  # window 0 sees only up to token 19
    whole = TokenSpan(17, 23, "condition", 0.6)  # window 1 sees all of it
    merged = merge(windows, [[cut], [whole]], 32, flat=True)
    assert merged == [whole]
    # at window 1's left edge: window 0 holds it centrally, so only window 0's word counts
    assert owner(windows, 12, 14, 32) == (0, 6)
    assert merge(windows, [[], [TokenSpan(12, 14, "drug", 0.9)]], 32, flat=True) == []
    # reaching window 0's inner edge and held by no other window: dropped, not kept in half
    assert merge(windows, [[TokenSpan(0, 20, "drug", 0.9)], []], 32, flat=False) == []


def test_two_prompts_of_one_type_make_one_span_with_the_higher_score() -> None:
    windows = [Window(0, 10)]
    spans = [TokenSpan(2, 4, "drug", 0.6), TokenSpan(2, 4, "drug", 0.8)]
    assert merge(windows, [spans], 10, flat=False) == [TokenSpan(2, 4, "drug", 0.8)]


def test_flat_merge_resolves_overlaps_across_windows_by_score() -> None:
    windows = [Window(0, 20), Window(12, 32)]
    a = TokenSpan(13, 15, "drug", 0.7)  # owned by window 0
    b = TokenSpan(14, 19, "condition", 0.8)  # owned by window 1 (margin 2 vs 1)
    assert owner(windows, 13, 15, 32)[0] == 0 and owner(windows, 14, 19, 32)[0] == 1
    assert merge(windows, [[a], [b]], 32, flat=True) == [b]
    assert merge(windows, [[a], [b]], 32, flat=False) == [a, b]


def _oracle(gold: list[TokenSpan], window: Window) -> list[TokenSpan]:
    """What a perfect model sees in a window: gold spans inside it, and the visible part of
    those crossing its edges (the cut pieces the merge must not keep)."""
    out = []
    for span in gold:
        start, end = max(span.start, window.start), min(span.end, window.end)
        if start < end:
            out.append(TokenSpan(start, end, span.type, span.score))
    random.shuffle(out)
    return out


@pytest.mark.parametrize("seed", range(40))
def test_a_perfect_model_gets_back_exactly_the_gold_spans(seed: int) -> None:
    """Random documents and non-overlapping gold spans no longer than the model's max width;
    overlap = 2 x max width (as the GLiNER backend sets it): the merge of the windows' views
    is the gold, each span once, none cut, whatever the windows' order of processing."""
    rng = random.Random(seed)
    n, max_width = rng.randint(1, 300), rng.randint(1, 6)
    gold: list[TokenSpan] = []
    i = 0
    while i < n:
        i += rng.randint(0, 4)
        length = rng.randint(1, max_width)
        if i + length > n:
            break
        gold.append(TokenSpan(i, i + length, rng.choice(["drug", "condition"]), rng.random()))
        i += length
    costs = [rng.randint(1, 3) for _ in range(n)]
    size = rng.randint(4 * max_width, 8 * max_width)
    windows = plan_windows(costs, budget=3 * size, max_tokens=size, overlap=2 * max_width)
    assert _covered(windows, n)
    views = [_oracle(gold, w) for w in windows]
    assert merge(windows, views, n, flat=True) == gold
    assert merge(windows, views, n, flat=False) == gold
