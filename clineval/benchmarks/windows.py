"""Windows over a long input: the one planner for every model that reads a bounded input.

A tagger or classifier sees at most so many tokens (a position limit in subwords, a word limit
of its own). A longer input is cut on its token boundaries into consecutive windows, each
predicted on its own; what the windows predicted is then put back together by the caller, who
knows what a prediction is (NER's span merge, a per-token tag copy). The plan depends on the
tokens' costs only, never on the model's output, so it is the same on every run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple


class Window(NamedTuple):
    """Tokens [start, end) of the input (a tuple, so `start, end = window` works)."""

    start: int  # first token in the window
    end: int  # one past the last


def plan_windows(
    costs: Sequence[int], budget: int, max_tokens: int | None = None, overlap: int = 0
) -> list[Window]:
    """Windows covering tokens 0..len(costs) in order: each holds as many tokens as fit, at
    most `max_tokens` (None: no limit) whose costs (e.g. subwords per word; a cost below 1
    counts as 1) add up to at most `budget`. A token that alone costs more than the budget is
    a window of its own (the model then cuts or refuses it; the plan never drops a token).
    Consecutive windows share `overlap` tokens, at most half of the earlier window, so that
    every window starts later than the one before and the plan always ends."""
    if budget < 1 or (max_tokens is not None and max_tokens < 1) or overlap < 0:
        raise ValueError("the budget and window size must be positive, the overlap not negative")
    n = len(costs)
    limit = n if max_tokens is None else max_tokens
    windows: list[Window] = []
    start = 0
    while start < n:
        end, used = start, 0
        while end < n and end - start < limit:
            cost = max(costs[end], 1)
            if end > start and used + cost > budget:
                break
            used += cost
            end += 1
        windows.append(Window(start, end))
        if end >= n:
            break
        start = end - min(overlap, (end - start) // 2)
    return windows
