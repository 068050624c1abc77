"""CHIA gold preparation exactly as the NCER benchmark does it, mapped back to raw offsets.

NCER reads each CHIA ``.txt`` with universal newlines (``\\r\\n`` and ``\\r`` become ``\\n``),
then doubles every ``\\n`` that sits between two characters of ``[a-zA-Z,.]``. It keeps a gold
entity's FIRST fragment offsets (raw brat offsets, applied to this different text) when the text
there equals the annotation text; otherwise it searches the annotation text in its text and
moves the span to the single occurrence, dropping the entity when there are none or several.
clineval exposes the raw file text (brat's own coordinates), so the surviving spans are mapped
back from NCER's text to the raw text here.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from clineval.benchmarks.ner.brat import BratEntity

# NCER's rule: a newline between two of these characters becomes two newlines.
_DOUBLE_NL = re.compile(r"(?<=[a-zA-Z,.])\n(?=[a-zA-Z,.])")
_CRLF = re.compile(r"\r\n")


@dataclass(frozen=True, slots=True)
class NcerText:
    """NCER's version of a raw text and, per NCER character, its raw [start, end) range."""

    text: str
    raw_start: np.ndarray  # int64, len(text)
    raw_end: np.ndarray  # int64, len(text)

    def to_raw(self, start: int, end: int) -> tuple[int, int]:
        """Map an NCER span (end exclusive) to raw-text coordinates.

        An empty span (an entity with an empty text column) maps to the empty span at the raw
        position of its NCER position, so both ends stay in raw coordinates. Offsets past the
        end of NCER's text (only an empty annotation text can survive there) are clamped to it.
        """
        start, end = min(start, len(self.text)), min(end, len(self.text))
        if end <= start:
            if start < len(self.text):
                point = int(self.raw_start[start])
            else:  # at (or past) the end of NCER's text: the end of the raw text
                point = int(self.raw_end[-1]) if len(self.text) else 0
            return point, point
        return int(self.raw_start[start]), int(self.raw_end[end - 1])


def ncer_text(raw: str) -> NcerText:
    """Build NCER's text from the raw file text, keeping a character map back to ``raw``."""
    n = len(raw)
    starts = np.arange(n, dtype=np.int64)
    ends = starts + 1
    if "\r" in raw:
        # Universal newlines: "\r\n" -> one "\n" covering both raw characters; lone "\r" -> "\n".
        crlf = np.fromiter((m.start() for m in _CRLF.finditer(raw)), dtype=np.int64)
        ends[crlf] += 1
        keep = np.ones(n, dtype=bool)
        keep[crlf + 1] = False
        starts, ends = starts[keep], ends[keep]
        text = raw.replace("\r\n", "\n").replace("\r", "\n")
    else:
        text = raw
    # Then the doubling: each doubled newline's extra copy maps to the same raw line end.
    positions = np.fromiter((m.start() for m in _DOUBLE_NL.finditer(text)), dtype=np.int64)
    if positions.size:
        starts = np.insert(starts, positions, starts[positions])
        ends = np.insert(ends, positions, ends[positions])
        text = _DOUBLE_NL.sub("\n\n", text)
    return NcerText(text, starts, ends)


@dataclass
class ChiaPrepCounts:
    """What NCER's rule did to the entities of the mapped types (for the run manifest)."""

    kept_in_place: int = 0
    moved: int = 0
    dropped_no_match: int = 0
    dropped_several_matches: int = 0
    discontinuous: int = 0  # mapped-type entities with more than one fragment
    discontinuous_dropped: int = 0

    def add(self, other: ChiaPrepCounts) -> None:
        self.kept_in_place += other.kept_in_place
        self.moved += other.moved
        self.dropped_no_match += other.dropped_no_match
        self.dropped_several_matches += other.dropped_several_matches
        self.discontinuous += other.discontinuous
        self.discontinuous_dropped += other.discontinuous_dropped

    def as_dict(self) -> dict[str, int]:
        return {
            "kept_in_place": self.kept_in_place,
            "moved": self.moved,
            "dropped_no_match": self.dropped_no_match,
            "dropped_several_matches": self.dropped_several_matches,
            "dropped": self.dropped_no_match + self.dropped_several_matches,
            "discontinuous": self.discontinuous,
            "discontinuous_dropped": self.discontinuous_dropped,
        }


def _occurrences(needle: str, haystack: str, limit: int = 2) -> list[int]:
    """Start offsets of ``needle`` (non-overlapping, like re.finditer), at most ``limit``."""
    found: list[int] = []
    if not needle:
        return found
    pos = haystack.find(needle)
    while pos >= 0 and len(found) < limit:
        found.append(pos)
        pos = haystack.find(needle, pos + len(needle))
    return found


def ncer_surviving_spans(
    raw_text: str, entities: Iterable[BratEntity], type_map: dict[str, str]
) -> tuple[list[tuple[int, int, str]], ChiaPrepCounts]:
    """NCER's surviving (raw start, raw end, mapped type) spans, in annotation order."""
    counts = ChiaPrepCounts()
    selected = [e for e in entities if e.type in type_map]
    if not selected:
        return [], counts
    prepared = ncer_text(raw_text)
    text = prepared.text
    spans: list[tuple[int, int, str]] = []
    for ent in selected:
        start, end = ent.fragments[0]
        if ent.discontinuous:
            counts.discontinuous += 1
        if text[start:end] == ent.text:
            counts.kept_in_place += 1
        else:
            hits = _occurrences(ent.text, text)
            if len(hits) != 1:
                if not hits:
                    counts.dropped_no_match += 1
                else:
                    counts.dropped_several_matches += 1
                if ent.discontinuous:
                    counts.discontinuous_dropped += 1
                continue
            start, end = hits[0], hits[0] + len(ent.text)
            counts.moved += 1
        raw_start, raw_end = prepared.to_raw(start, end)
        spans.append((raw_start, raw_end, type_map[ent.type]))
    return spans, counts


def ncer_split(stems: Sequence[str], seed: int = 42) -> dict[str, list[str]]:
    """NCER's CHIA split of the sorted document stems (HF ``train_test_split`` twice, seed 42).

    ``datasets`` draws ``np.random.default_rng(seed).permutation(n)``, takes the first
    ceil(test_size * n) indices as test and the next ones as train. NCER splits 20% off, then
    halves that part: its "test" half is the test set, its "train" half the validation set.
    """
    ordered = sorted(stems)

    def split(items: list[str], test_size: float) -> tuple[list[str], list[str]]:
        n = len(items)
        n_test = math.ceil(test_size * n)
        perm = np.random.default_rng(seed).permutation(n)
        return [items[i] for i in perm[n_test:]], [items[i] for i in perm[:n_test]]

    train, rest = split(ordered, 0.2)
    validation, test = split(rest, 0.5)
    return {"train_all": train, "validation_all": validation, "test_all": test}
