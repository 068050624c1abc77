"""Tokens and token labels for the NCER token metric, vectorized over a whole corpus.

The definition (DESIGN.md, "Clinical NER"): tokens come from the regex
``\\w+(?:[-_]\\w+)*|\\S``; every character takes the type of the LAST span (list order) that
covers it, else O; a token takes its most common character label (O included) and a tie goes to
the tied label that occurs first (leftmost) among the token's characters.

Everything here works on one concatenation of all documents (joined by a newline, which no
token can cross), so a 50,000-document corpus costs a handful of numpy calls instead of a Python
loop per token. Label ids: 0 is O; 1.. are the span types in the order given by the caller.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np
from numpy.typing import NDArray

from clineval.data.ner_types import Span

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


def _classify(codes: NDArray[np.uint32]) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
    """(is word character, is whitespace) per code point."""
    word_bmp, space_bmp = _bmp_tables()
    astral = codes >= _BMP
    low = np.where(astral, 0, codes)
    word = word_bmp[low]
    space = space_bmp[low]
    if astral.any():  # rare: look the few distinct astral characters up one by one
        values, inverse = np.unique(codes[astral], return_inverse=True)
        word[astral] = np.array([chr(v).isalnum() or v == 95 for v in values])[inverse]
        space[astral] = np.array([chr(v).isspace() for v in values])[inverse]
    return word, space


def _code_points(text: str) -> NDArray[np.uint32]:
    # UTF-32 gives exactly one unit per Python character, so indices stay character offsets.
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def regex_token_offsets(text: str) -> tuple[IntArray, IntArray]:
    """Token (starts, ends) of `text` under TOKEN_PATTERN, without running the regex.

    The pattern splits non-space text into runs of word characters, where a single `-` between
    two word characters joins its neighbours (`_` is itself a word character), and every other
    non-space character is a token of its own.
    """
    if not text:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    codes = _code_points(text)
    word, space = _classify(codes)
    n = codes.size
    prev_word = np.zeros(n, dtype=np.bool_)
    prev_word[1:] = word[:-1]
    next_word = np.zeros(n, dtype=np.bool_)
    next_word[:-1] = word[1:]
    joining_hyphen = (codes == _HYPHEN) & prev_word & next_word
    after_joining_hyphen = np.zeros(n, dtype=np.bool_)
    after_joining_hyphen[1:] = joining_hyphen[:-1]
    continues = (word & prev_word) | joining_hyphen | (word & after_joining_hyphen)
    starts = np.flatnonzero(~space & ~continues)
    # A token ends where the next token starts or at the first whitespace after its start.
    boundary = np.flatnonzero(space | ~continues)  # positions that end any preceding token
    boundary = np.append(boundary, n)
    ends = boundary[np.searchsorted(boundary, starts, side="right")]
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
    def build(cls, types: Sequence[str], *span_lists: Sequence[Sequence[Span]]) -> LabelSpace:
        names = [O_LABEL, *types]
        if len(set(names)) != len(names):
            raise ValueError(f"types must be distinct and must not contain {O_LABEL!r}: {types}")
        seen = set(names)
        for spans_of_docs in span_lists:
            for spans in spans_of_docs:
                for span in spans:
                    if span.type not in seen:
                        seen.add(span.type)
                        names.append(span.type)
        return cls(tuple(names), len(types))

    def ids(self) -> dict[str, int]:
        return {name: i for i, name in enumerate(self.names)}


@dataclass(frozen=True)
class FlatSpans:
    """All spans of a corpus as arrays in corpus coordinates, in list order."""

    starts: IntArray
    ends: IntArray
    labels: IntArray


def flatten_spans(
    docs: Sequence[Sequence[Span]],
    bases: IntArray,
    lengths: IntArray,
    label_ids: dict[str, int],
) -> FlatSpans:
    """Concatenate every document's spans, shifted by its base offset, checking bounds."""
    counts = np.fromiter((len(spans) for spans in docs), dtype=np.int64, count=len(docs))
    flat = [(s.start, s.end, label_ids[s.type]) for spans in docs for s in spans]
    table = np.array(flat, dtype=np.int64).reshape(-1, 3)
    doc_of = np.repeat(np.arange(len(docs)), counts)
    starts, ends = table[:, 0], table[:, 1]
    bad = (starts < 0) | (ends > lengths[doc_of])
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"span ({starts[i]}, {ends[i]}) lies outside document {int(doc_of[i])} "
            f"of length {int(lengths[doc_of[i]])}"
        )
    shift = bases[doc_of]
    return FlatSpans(starts + shift, ends + shift, table[:, 2].copy())


def paint_char_labels(n_chars: int, spans: FlatSpans) -> IntArray:
    """Label id per character: the LAST span (list order) covering it, else 0 (O).

    Where at most one span covers a character a prefix sum of +label/-label answers it at once;
    only spans touching a character covered twice or more are repainted in list order.
    """
    keep = spans.ends > spans.starts
    starts, ends, labels = spans.starts[keep], spans.ends[keep], spans.labels[keep]
    size = n_chars + 1
    opened = np.bincount(starts, minlength=size) - np.bincount(ends, minlength=size)
    cover = np.cumsum(opened)[:n_chars]
    label_sum = np.cumsum(
        np.bincount(starts, weights=labels, minlength=size)
        - np.bincount(ends, weights=labels, minlength=size)
    )[:n_chars]
    chars = np.where(cover == 1, np.rint(label_sum), 0).astype(np.int64)
    multi = cover >= 2
    if multi.any():
        multi_before = np.concatenate(([0], np.cumsum(multi)))
        involved = np.flatnonzero(multi_before[ends] > multi_before[starts])
        for i in involved.tolist():  # ascending index = list order, so the last span wins
            chars[starts[i] : ends[i]] = labels[i]
    return chars


@dataclass(frozen=True)
class TokenIndex:
    """The characters of every token, flattened: token k owns positions[offsets[k]:offsets[k+1]]."""

    positions: IntArray
    offsets: IntArray  # n_tokens + 1

    @classmethod
    def from_offsets(cls, starts: IntArray, ends: IntArray) -> TokenIndex:
        lengths = np.maximum(ends - starts, 0)
        offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
        # position = token start + rank of the character inside its token
        within = np.arange(offsets[-1], dtype=np.int64) - np.repeat(offsets[:-1], lengths)
        return cls(np.repeat(starts, lengths) + within, offsets)

    @property
    def n_tokens(self) -> int:
        return self.offsets.size - 1


def token_majority_labels(chars: IntArray, index: TokenIndex, n_labels: int) -> IntArray:
    """Most common character label per token; ties -> the tied label seen first; empty -> O."""
    n_tokens = index.n_tokens
    lengths = np.diff(index.offsets)
    labels = np.zeros(n_tokens, dtype=np.int64)
    nonempty = lengths > 0
    char_labels = chars[index.positions]
    labels[nonempty] = char_labels[index.offsets[:-1][nonempty]]
    # A token is mixed when some character differs from its first one; only those need counts.
    token_of_char = np.repeat(np.arange(n_tokens), lengths)
    differs = char_labels != labels[token_of_char]
    mixed = np.flatnonzero(np.bincount(token_of_char[differs], minlength=n_tokens) > 0)
    if mixed.size:
        labels[mixed] = _resolve_mixed(char_labels, index, mixed, n_labels)
    return labels


def _resolve_mixed(
    char_labels: IntArray, index: TokenIndex, mixed: IntArray, n_labels: int
) -> IntArray:
    starts = index.offsets[mixed]
    lengths = index.offsets[mixed + 1] - starts
    total = int(lengths.sum())
    local = np.repeat(np.arange(mixed.size), lengths)
    rank = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    labels = char_labels[np.repeat(starts, lengths) + rank]
    keys = local * n_labels + labels
    counts = np.bincount(keys, minlength=mixed.size * n_labels).reshape(mixed.size, n_labels)
    longest = int(lengths.max())
    first = np.full(mixed.size * n_labels, longest, dtype=np.int64)
    np.minimum.at(first, keys, rank)
    # More characters wins; among equal counts the label whose first character is leftmost.
    score = counts * (longest + 1) + (longest - first.reshape(mixed.size, n_labels))
    score[counts == 0] = -1
    return np.argmax(score, axis=1).astype(np.int64)


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
    through `clineval.metrics.ner_token_f1.token_macro_f1`, which uses the same functions.
    """
    space = LabelSpace.build(types, [spans])
    corpus = CorpusText.of([text])
    offsets = None if token_offsets is None else [token_offsets]
    starts, ends, _ = corpus_tokens([text], corpus, offsets)
    flat = flatten_spans([spans], corpus.bases, corpus.lengths, space.ids())
    chars = paint_char_labels(corpus.n_chars, flat)
    labels = token_majority_labels(chars, TokenIndex.from_offsets(starts, ends), len(space.names))
    tokens = list(zip(starts.tolist(), ends.tolist(), strict=True))
    return tokens, [space.names[i] for i in labels.tolist()]
