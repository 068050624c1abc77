"""Tokens and token labels for the NCER token metric, vectorized over a whole corpus.

The definition (docs/metrics.md, "Token macro-F1"): tokens come from the regex
``\\w+(?:[-_]\\w+)*|\\S``; every character takes the type of the LAST span (list order) that
covers it, else O; a token takes its most common character label (O included) and a tie goes to
the tied label that occurs first (leftmost) among the token's characters.

Everything here works on one concatenation of all documents (joined by a newline, which no
token can cross), so a 50,000-document corpus costs a handful of numpy calls instead of a Python
loop per token. Label ids: 0 is O; 1.. are the span types in the order given by the caller.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from itertools import chain
from operator import attrgetter

import numpy as np
from numpy.typing import NDArray

from clineval.benchmarks.ner.records import Span

TOKEN_PATTERN = r"\w+(?:[-_]\w+)*|\S"
TOKEN_RE = re.compile(TOKEN_PATTERN)
O_LABEL = "O"
_DOC_SEPARATOR = "\n"  # whitespace: the regex never joins characters across it
_HYPHEN = ord("-")
_BMP = 0x10000

IntArray = NDArray[np.int64]
# A document's own token segmentation: (starts, ends) character offsets, ends exclusive.
TokenOffsets = tuple[Sequence[int] | NDArray[np.integer], Sequence[int] | NDArray[np.integer]]


@cache
def _bmp_tables() -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
    """`\\w` and `\\s` membership for every Basic Multilingual Plane code point.

    Python's `re` defines `\\w` as ``str.isalnum() or "_"`` and `\\s` as ``str.isspace()``
    for str patterns; tests/test_ner_metrics.py checks this against `re` on every code point.
    """
    chars = [chr(i) for i in range(_BMP)]
    word = np.fromiter((c.isalnum() or c == "_" for c in chars), dtype=np.bool_, count=_BMP)
    space = np.fromiter((c.isspace() for c in chars), dtype=np.bool_, count=_BMP)
    return word, space


def _classify(
    codes: NDArray[np.uint32] | NDArray[np.uint8],
) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
    """(is word character, is whitespace) per code point."""
    word_bmp, space_bmp = _bmp_tables()
    if codes.dtype == np.uint8:
        return word_bmp[codes], space_bmp[codes]
    astral = codes >= _BMP
    low = np.where(astral, 0, codes)
    word = word_bmp[low]
    space = space_bmp[low]
    if astral.any():  # rare: look the few distinct astral characters up one by one
        values, inverse = np.unique(codes[astral], return_inverse=True)
        word[astral] = np.array([chr(v).isalnum() or v == 95 for v in values])[inverse]
        space[astral] = np.array([chr(v).isspace() for v in values])[inverse]
    return word, space


# ASCII fast path: bytes.translate maps every character to its class in one C pass.
_OTHER, _WORD, _SPACE, _JOINER = 0, 1, 2, 3


def _ascii_class(i: int) -> int:
    char = chr(i)
    if char == "-":
        return _JOINER
    if char.isalnum() or char == "_":
        return _WORD
    return _SPACE if char.isspace() else _OTHER


_ASCII_CLASSES = bytes(_ascii_class(i) for i in range(256))


def _character_classes(
    text: str,
) -> tuple[NDArray[np.bool_], NDArray[np.bool_], NDArray[np.bool_]]:
    """(word character, whitespace, "-") masks; one array cell per Python character."""
    if text.isascii():
        classes = np.frombuffer(text.encode("ascii").translate(_ASCII_CLASSES), dtype=np.uint8)
        return classes == _WORD, classes == _SPACE, classes == _JOINER
    # UTF-32 gives exactly one unit per Python character, so indices stay character offsets.
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    word, space = _classify(codes)
    return word, space, codes == _HYPHEN


def regex_token_offsets(text: str) -> tuple[IntArray, IntArray]:
    """Token (starts, ends) of `text` under TOKEN_PATTERN, without running the regex.

    The pattern splits non-space text into runs of word characters, where a single `-` between
    two word characters joins its neighbours (`_` is itself a word character), and every other
    non-space character is a token of its own.
    """
    word, space, hyphen = _character_classes(text)
    # joins[i]: character i is a "-" with word characters on both sides.
    joins = np.zeros(word.size, dtype=np.bool_)
    joins[1:-1] = hyphen[1:-1] & word[:-2] & word[2:]
    # continues[i]: character i belongs to the same token as character i - 1.
    continues = joins.copy()
    continues[1:] |= word[1:] & (word[:-1] | joins[:-1])
    starts = np.flatnonzero(~(space | continues))
    # A token ends after a non-space character whose successor does not continue it.
    last = ~space
    last[:-1] &= ~continues[1:]
    ends = np.flatnonzero(last) + 1
    return starts.astype(np.int64), ends.astype(np.int64)


@dataclass(frozen=True)
class LabelSpace:
    """Label names to ids: O = 0, the scored types 1..k, then any other type seen (k+1..).

    Types outside the scored set keep their own ids instead of collapsing into O, because a
    character labelled with such a type is still "not L" and still overrides earlier spans.
    """

    names: tuple[str, ...]  # names[0] == "O"
    n_scored: int

    @classmethod
    def build(cls, types: Sequence[str], seen: Iterable[str] = ()) -> LabelSpace:
        names = [O_LABEL, *types]
        if len(set(names)) != len(names):
            raise ValueError(f"types must be distinct and must not contain {O_LABEL!r}: {types}")
        names += sorted(set(seen) - set(names))
        return cls(tuple(names), len(types))

    def ids(self) -> dict[str, int]:
        return {name: i for i, name in enumerate(self.names)}


@dataclass(frozen=True)
class DocSpans:
    """Every span of a corpus as parallel arrays in list order (document coordinates)."""

    doc: IntArray
    starts: IntArray
    ends: IntArray
    types: list[str]

    @classmethod
    def of(cls, docs: Sequence[Sequence[Span]]) -> DocSpans:
        counts = np.fromiter(map(len, docs), dtype=np.int64, count=len(docs))
        flat = list(chain.from_iterable(docs))
        n = len(flat)
        return cls(
            doc=np.repeat(np.arange(len(docs), dtype=np.int64), counts),
            starts=np.fromiter(map(_start, flat), dtype=np.int64, count=n),
            ends=np.fromiter(map(_end, flat), dtype=np.int64, count=n),
            types=list(map(_type, flat)),
        )


_start, _end, _type = attrgetter("start"), attrgetter("end"), attrgetter("type")


@dataclass(frozen=True)
class FlatSpans:
    """All spans of a corpus in corpus coordinates, in list order, with label ids."""

    starts: IntArray
    ends: IntArray
    labels: IntArray


def flatten_spans(spans: DocSpans, corpus: CorpusText, label_ids: dict[str, int]) -> FlatSpans:
    """Shift every span by its document's base offset, checking it lies inside the document."""
    lengths = corpus.lengths[spans.doc]
    bad = (spans.starts < 0) | (spans.ends > lengths)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"span ({spans.starts[i]}, {spans.ends[i]}) lies outside document "
            f"{int(spans.doc[i])} of length {int(lengths[i])}"
        )
    labels = np.fromiter(
        map(label_ids.__getitem__, spans.types), dtype=np.int64, count=len(spans.types)
    )
    shift = corpus.bases[spans.doc]
    return FlatSpans(spans.starts + shift, spans.ends + shift, labels)


def _expand(starts: IntArray, lengths: IntArray) -> IntArray:
    """Concatenation of arange(start, start + length) for every (start, length)."""
    before = np.cumsum(lengths) - lengths
    return np.repeat(starts - before, lengths) + np.arange(int(lengths.sum()), dtype=np.int64)


def paint_char_labels(n_chars: int, spans: FlatSpans, n_labels: int) -> NDArray[np.integer]:
    """Label id per character: the LAST span (list order) covering it, else 0 (O).

    Spans are grouped into clusters of transitively overlapping spans; a span alone in its
    cluster is painted in one vectorized assignment with the others, and only members of
    clusters of two or more are repainted one by one in list order (rare in real data).
    """
    dtype: type[np.integer] = np.uint8 if n_labels <= 256 else np.int64
    chars: NDArray[np.integer] = np.zeros(n_chars, dtype=dtype)
    keep = np.flatnonzero(spans.ends > spans.starts)
    if keep.size == 0:
        return chars
    starts, ends, labels = spans.starts[keep], spans.ends[keep], spans.labels[keep]
    order = np.argsort(starts, kind="stable")
    reach = np.maximum.accumulate(ends[order])
    opens = np.ones(order.size, dtype=np.bool_)
    opens[1:] = starts[order][1:] >= reach[:-1]
    cluster = np.cumsum(opens) - 1
    alone = np.bincount(cluster)[cluster] == 1
    single = order[alone]
    lengths = ends[single] - starts[single]
    chars[_expand(starts[single], lengths)] = np.repeat(labels[single], lengths).astype(dtype)
    crowded = np.sort(order[~alone])  # ascending = list order, so the last span wins
    for i in crowded.tolist():
        chars[starts[i] : ends[i]] = labels[i]
    return chars


def span_boundaries(spans: FlatSpans) -> IntArray:
    """Sorted positions where painted labels may change: every span start and end.

    Painting is constant between consecutive span boundaries, so these are a superset of the
    characters whose label differs from the previous character's.
    """
    return np.sort(np.concatenate((spans.starts, spans.ends)))  # duplicates are harmless


def token_majority_labels(
    chars: NDArray[np.integer],
    starts: IntArray,
    ends: IntArray,
    n_labels: int,
    boundaries: IntArray | None = None,
) -> IntArray:
    """Most common character label per token; ties -> the tied label seen first; empty -> O.

    Most tokens carry one label throughout, their first character's. Only tokens with a label
    boundary strictly inside are counted character by character. `boundaries` (sorted) must
    include every position whose label differs from the one before it (`span_boundaries`);
    without it the exact change points are computed from `chars`.
    """
    labels = np.zeros(starts.size, dtype=np.int64)
    nonempty = ends > starts
    labels[nonempty] = chars[starts[nonempty]]
    if boundaries is None:
        boundaries = np.flatnonzero(chars[1:] != chars[:-1]) + 1
    if starts.size and np.all(starts[1:] >= ends[:-1]):
        # Sorted, disjoint tokens (the regex's, most tokenizers'): look up each boundary's token.
        token = np.searchsorted(starts, boundaries, side="right") - 1
        hit = token >= 0
        token, bound = token[hit], boundaries[hit]
        flag = np.zeros(starts.size, dtype=np.bool_)
        flag[token[(bound > starts[token]) & (bound < ends[token])]] = True
        mixed = np.flatnonzero(flag)
    else:
        inside = np.searchsorted(boundaries, ends, side="left") - np.searchsorted(
            boundaries, starts, side="right"
        )
        mixed = np.flatnonzero(inside > 0)
    if mixed.size:
        labels[mixed] = _resolve_mixed(chars, starts[mixed], ends[mixed] - starts[mixed], n_labels)
    return labels


def _resolve_mixed(
    chars: NDArray[np.integer], starts: IntArray, lengths: IntArray, n_labels: int
) -> IntArray:
    n = starts.size
    local = np.repeat(np.arange(n, dtype=np.int64), lengths)
    rank = np.arange(int(lengths.sum()), dtype=np.int64) - np.repeat(
        np.cumsum(lengths) - lengths, lengths
    )
    keys = local * n_labels + chars[_expand(starts, lengths)].astype(np.int64)
    counts = np.bincount(keys, minlength=n * n_labels).reshape(n, n_labels)
    longest = int(lengths.max())
    first = np.full(n * n_labels, longest, dtype=np.int64)
    np.minimum.at(first, keys, rank)
    # More characters wins; among equal counts the label whose first character is leftmost.
    score = counts * (longest + 1) + (longest - first.reshape(n, n_labels))
    score[counts == 0] = -1
    best: NDArray[np.int64] = np.argmax(score, axis=1).astype(np.int64)
    return best


@dataclass(frozen=True)
class CorpusText:
    """All documents joined by a newline; `bases[d]` is where document d starts."""

    bases: IntArray
    lengths: IntArray
    n_chars: int

    @classmethod
    def of(cls, texts: Sequence[str]) -> CorpusText:
        lengths = np.fromiter((len(t) for t in texts), dtype=np.int64, count=len(texts))
        bases = np.concatenate(([0], np.cumsum(lengths + 1)[:-1])).astype(np.int64)
        n_chars = int(lengths.sum() + max(len(texts) - 1, 0))
        return cls(bases[: len(texts)], lengths, n_chars)


def corpus_tokens(
    texts: Sequence[str],
    corpus: CorpusText,
    token_offsets: Sequence[TokenOffsets] | None = None,
) -> tuple[IntArray, IntArray, IntArray]:
    """(starts, ends, document) of every token in corpus coordinates, in document order.

    Without `token_offsets` the regex tokenizer runs once over the joined corpus; with them,
    each document's (starts, ends) are checked against its length and shifted.
    """
    if token_offsets is None:
        starts, ends = regex_token_offsets(_DOC_SEPARATOR.join(texts))
        doc = np.searchsorted(corpus.bases, starts, side="right") - 1
        return starts, ends, doc.astype(np.int64)
    if len(token_offsets) != len(texts):
        raise ValueError(f"{len(token_offsets)} token segmentations for {len(texts)} documents")
    parts_s, parts_e, parts_d = [], [], []
    for d, (doc_starts, doc_ends) in enumerate(token_offsets):
        s = np.asarray(doc_starts, dtype=np.int64)
        e = np.asarray(doc_ends, dtype=np.int64)
        if s.shape != e.shape or s.ndim != 1:
            raise ValueError(f"document {d}: token starts and ends must be equal-length 1-d")
        if s.size and (s.min() < 0 or e.max() > corpus.lengths[d] or (e < s).any()):
            raise ValueError(f"document {d}: token offsets outside [0, {corpus.lengths[d]}]")
        parts_s.append(s + corpus.bases[d])
        parts_e.append(e + corpus.bases[d])
        parts_d.append(np.full(s.size, d, dtype=np.int64))
    if not parts_s:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    return np.concatenate(parts_s), np.concatenate(parts_e), np.concatenate(parts_d)


def document_token_labels(
    text: str,
    spans: Sequence[Span],
    types: Sequence[str],
    token_offsets: TokenOffsets | None = None,
) -> tuple[list[tuple[int, int]], list[str]]:
    """One document's tokens [(start, end)] and their labels ("O" or a type).

    For samples.jsonl and for turning character spans into token tags; scoring a corpus goes
    through `clineval.benchmarks.ner.token_f1.token_macro_f1`, which uses the same functions.
    """
    doc_spans = DocSpans.of([spans])
    space = LabelSpace.build(types, doc_spans.types)
    corpus = CorpusText.of([text])
    offsets = None if token_offsets is None else [token_offsets]
    starts, ends, _ = corpus_tokens([text], corpus, offsets)
    flat = flatten_spans(doc_spans, corpus, space.ids())
    chars = paint_char_labels(corpus.n_chars, flat, len(space.names))
    labels = token_majority_labels(chars, starts, ends, len(space.names), span_boundaries(flat))
    tokens = list(zip(starts.tolist(), ends.tolist(), strict=True))
    return tokens, [space.names[i] for i in labels.tolist()]
