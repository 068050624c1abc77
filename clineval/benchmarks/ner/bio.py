"""BIO tags <-> character spans over word tokens, shared by the CRF, HF and predictions backends.

Tokens are (start, end) character offsets, normally from the benchmark's regex splitter
`\\w+(?:[-_]\\w+)*|\\S`. Decoding is lenient in the usual CoNLL way: an `I-X` that does not
continue an `X` entity starts a new one, so a model's ill-formed sequence still yields spans
instead of being silently discarded.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from clineval.benchmarks.ner.records import Span
from clineval.benchmarks.ner.tokens import TOKEN_RE

OUTSIDE = "O"


def word_offsets(text: str) -> list[tuple[int, int]]:
    """Character offsets of the benchmark's regex tokens, in text order.

    The regex is the token metric's own (`TOKEN_RE`), so CRF tags, predictions files and the
    metric can never disagree on what a token is.
    """
    return [m.span() for m in TOKEN_RE.finditer(text)]


def spans_to_bio(spans: Sequence[Span], tokens: Sequence[tuple[int, int]]) -> list[str]:
    """BIO tags for training: a token belongs to the span that overlaps it most.

    A token that straddles a span boundary (rare with the regex splitter) takes the span it
    overlaps by more characters; a later span wins ties, matching the metric's "last span
    covering a character" rule. `B-` marks the first token of each span, so two adjacent
    spans of the same type stay two spans.
    """
    owner: list[int] = [-1] * len(tokens)
    best: list[int] = [0] * len(tokens)
    starts = [s for s, _ in tokens]
    for index, span in enumerate(spans):
        # first token whose end is after span.start
        i = max(bisect.bisect_right(starts, span.start) - 1, 0)
        while i < len(tokens) and tokens[i][0] < span.end:
            overlap = min(tokens[i][1], span.end) - max(tokens[i][0], span.start)
            if overlap > 0 and overlap >= best[i]:
                owner[i], best[i] = index, overlap
            i += 1
    tags: list[str] = []
    previous = -1
    for i in range(len(tokens)):
        k = owner[i]
        if k < 0:
            tags.append(OUTSIDE)
        else:
            tags.append(("I-" if k == previous else "B-") + spans[k].type)
        previous = k
    return tags


def bio_to_spans(tags: Sequence[str], tokens: Sequence[tuple[int, int]]) -> list[Span]:
    """Character spans from BIO tags (lenient: a stray I- opens an entity)."""
    if len(tags) != len(tokens):
        raise ValueError(f"{len(tags)} tags for {len(tokens)} tokens")
    spans: list[Span] = []
    open_type: str | None = None
    open_start = open_end = 0
    for tag, (start, end) in zip(tags, tokens, strict=True):
        prefix, _, label = tag.partition("-")
        if tag == OUTSIDE or not label:
            prefix, label = OUTSIDE, ""
        continues = prefix == "I" and open_type == label
        if open_type is not None and not continues:
            spans.append(Span(open_start, open_end, open_type))
            open_type = None
        if prefix == OUTSIDE:
            continue
        if continues:
            open_end = end
        else:
            open_type, open_start, open_end = label, start, end
    if open_type is not None:
        spans.append(Span(open_start, open_end, open_type))
    return spans


def is_bio_tag(tag: str, types: Sequence[str]) -> bool:
    """True for `O`, `B-<type>` or `I-<type>` with a type of the dataset."""
    if tag == OUTSIDE:
        return True
    prefix, sep, label = tag.partition("-")
    return bool(sep) and prefix in ("B", "I") and label in types
