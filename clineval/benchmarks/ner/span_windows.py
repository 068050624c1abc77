"""The one merge of what overlapping windows over a document's tokens predicted.

A span tagger sees a bounded input (so many words, so many subwords). A longer document is cut
on its token boundaries (the benchmark's regex tokens) into windows that overlap
(`clineval.benchmarks.windows`), and each window is predicted on its own. The merge then keeps
every span exactly once:

  * the owner of a span is the window that holds it most centrally: largest margin to the
    window's inner edges (a document's own start and end are not edges: nothing lies beyond
    them), the earliest window on a tie. Only the owner's prediction of a span counts, so a
    span seen by two windows is never counted twice, and the decision depends on where the
    span is, not on what the windows predicted;
  * a span that touches an inner edge of its owner (margin 0) may be the visible part of a
    longer one: it is dropped, never kept cut in half. Consecutive windows share `overlap`
    tokens, so a span shorter than the overlap always has an owner that sees it whole with
    context on both sides; the caller sets the overlap above the model's longest span;
  * the same (start, end, type) predicted twice by one window (two prompts of one type) is
    one span, with the higher score;
  * flat output (no two spans share a token) is restored across windows greedily: higher
    score first, then earlier start, shorter span, type name. Spans come out sorted by
    (start, end, type), whatever order the windows were processed in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from clineval.benchmarks.windows import Window


@dataclass(frozen=True, slots=True)
class TokenSpan:
    start: int  # first token (document index)
    end: int  # one past the last token
    type: str
    score: float


def _margin(window: Window, start: int, end: int, n_tokens: int) -> int:
    """Tokens between the span and the window's nearer inner edge (n_tokens: no inner edge)."""
    left = start - window.start if window.start > 0 else n_tokens
    right = window.end - end if window.end < n_tokens else n_tokens
    return min(left, right)


def owner(windows: Sequence[Window], start: int, end: int, n_tokens: int) -> tuple[int, int]:
    """(index, margin) of the window that holds tokens [start, end) most centrally; the earliest
    such window on a tie. (-1, -1) when no window holds the whole span."""
    best, best_margin = -1, -1
    for index, window in enumerate(windows):
        if window.start <= start and end <= window.end:
            margin = _margin(window, start, end, n_tokens)
            if margin > best_margin:
                best, best_margin = index, margin
    return best, best_margin


def merge(
    windows: Sequence[Window],
    predicted: Sequence[Sequence[TokenSpan]],
    n_tokens: int,
    flat: bool,
) -> list[TokenSpan]:
    """The document's spans from each window's predictions (`predicted[k]` for `windows[k]`,
    in document token indices), as the module doc describes."""
    if len(predicted) != len(windows):
        raise ValueError(f"{len(predicted)} predictions for {len(windows)} windows")
    kept: dict[tuple[int, int, str], TokenSpan] = {}
    for index, spans in enumerate(predicted):
        for span in spans:
            if not 0 <= span.start < span.end <= n_tokens:
                raise ValueError(f"span {span} outside the document's {n_tokens} tokens")
            home, margin = owner(windows, span.start, span.end, n_tokens)
            if home != index or margin <= 0:
                continue  # another window sees it better, or it may be cut at this edge
            key = (span.start, span.end, span.type)
            if key not in kept or span.score > kept[key].score:
                kept[key] = span
    spans = sorted(kept.values(), key=lambda s: (s.start, s.end, s.type))
    return _flatten(spans) if flat else spans


def _flatten(spans: list[TokenSpan]) -> list[TokenSpan]:
    taken: list[TokenSpan] = []
    used: set[int] = set()
    for span in sorted(spans, key=lambda s: (-s.score, s.start, s.end - s.start, s.type)):
        tokens = range(span.start, span.end)
        if used.isdisjoint(tokens):
            taken.append(span)
            used.update(tokens)
    return sorted(taken, key=lambda s: (s.start, s.end, s.type))
