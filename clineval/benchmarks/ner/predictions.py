"""`predictions:FILE`: NER predictions made elsewhere, read from JSON Lines and validated.

One line a document, either character spans
    {"id": "<doc id>", "entities": [{"start": 12, "end": 20, "type": "condition"}, ...]}
or BIO tags over the benchmark's regex tokens `\\w+(?:[-_]\\w+)*|\\S`
    {"id": "<doc id>", "tokens": ["Familial", "breast", ...], "tags": ["B-condition", ...]}
(`end` exclusive; doc id = PMID, or the brat file stem for CHIA; an integer PMID is accepted).

A type is the dataset's OMOP domain (`drug`) or a corpus's own type name that the NCER
preparation maps to one (`Chemical`, `ChemicalEntity`, any case): a tagger trained on the corpus
writes the corpus's names, and they are mapped here as they are for model outputs
(`ner_corpora.type_names`). A name mapping to a domain this dataset does not score (`Gene` in
NCBI), and a corpus type NCER drops from the gold (BioRED's OrganismTaxon and CellLine, CHIA's
Person, Temporal, ...: `UNSCORED_TYPES`), are dropped as NCER drops them from the gold; both
are counted (`TypeNames`, noted in the manifest). Only a name no corpus knows is refused.

The file is read by the kit's `read_predictions` with this module's row parser: every problem
is an InputError naming the file and the 1-based line: bad JSON, a line that is not an object,
a missing/unknown/duplicate id (the kit's checks), offsets outside the text or start >= end, a
type the dataset does not score, tokens that differ from the document's tokens, a malformed
tag. Spans are kept in the order given (the reference metrics depend on it). Documents the
file does not mention get an empty prediction and are counted by the caller.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from clineval.benchmarks.ner.bio import bio_to_spans, is_bio_tag, word_offsets
from clineval.benchmarks.ner.records import DATASET_TYPES, NerDocument, Span
from clineval.errors import InputError


class TypeNames:
    """The type names a predictions file may use for a dataset's `types`, and what was done
    with each name the file used (counted for the manifest)."""

    def __init__(self, types: Sequence[str]):
        from clineval.benchmarks.ner.corpora import TYPE_MAPS, UNSCORED_TYPES

        self.types = tuple(types)
        self._scored = {t.lower(): t for t in self.types}
        # every name any corpus maps to a domain, and every domain, lowercased -> the domain
        known: dict[str, str] = {
            source.lower(): target
            for mapping in TYPE_MAPS.values()
            for source, target in mapping.items()
        }
        known.update({d.lower(): d for ts in DATASET_TYPES.values() for d in ts})
        self._known = known
        # corpus types NCER drops everywhere: never scored, whatever the dataset
        self._unscored = {name.lower() for names in UNSCORED_TYPES.values() for name in names}
        self.mapped: Counter[str] = Counter()  # "Chemical -> drug": spans
        self.dropped: Counter[str] = Counter()  # names of domains not scored here: spans

    def resolve(self, label: Any) -> str | bool | None:
        """The scored type of `label`; None to drop it; False when it maps to nothing."""
        if not isinstance(label, str):
            return False
        key = label.lower()
        target = self._scored.get(key) or self._known.get(key)
        if target is None and key in self._unscored:
            self.dropped[label] += 1
            return None
        if target is None:
            return False
        if target not in self.types:
            self.dropped[label] += 1
            return None
        if label != target:
            self.mapped[f"{label} -> {target}"] += 1
        return target

    def accepted(self) -> str:
        return ", ".join(self.types) + " (or a corpus type name mapped to one, e.g. Chemical)"

    def notes(self) -> dict[str, Any]:
        """For the manifest: which names were mapped or dropped, with span counts."""
        out: dict[str, Any] = {}
        if self.mapped:
            out["mapped"] = dict(sorted(self.mapped.items()))
        if self.dropped:
            out["dropped_unscored"] = dict(sorted(self.dropped.items()))
        return out


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _char_spans(row: dict[str, Any], doc: NerDocument, types: TypeNames) -> list[Span]:
    entities = row["entities"]
    if not isinstance(entities, list):
        raise InputError('"entities" must be a list')
    spans: list[Span] = []
    for k, ent in enumerate(entities):
        if not isinstance(ent, dict):
            raise InputError(f"entity {k} is not an object")
        start, end, label = ent.get("start"), ent.get("end"), ent.get("type")
        if not (_is_int(start) and _is_int(end)):
            raise InputError(f'entity {k}: "start" and "end" must be integers')
        assert isinstance(start, int) and isinstance(end, int)
        if not 0 <= start < end <= len(doc.text):
            raise InputError(
                f"entity {k}: offsets [{start}, {end}) are not a non-empty span inside the "
                f"text of {doc.id} (length {len(doc.text)})",
            )
        target = types.resolve(label)
        if target is False:
            raise InputError(
                f"entity {k}: unknown type {label!r} (this dataset scores: {types.accepted()})",
            )
        if isinstance(target, str):
            spans.append(Span(start, end, target))
    return spans


def _bio_spans(row: dict[str, Any], doc: NerDocument, types: TypeNames) -> list[Span]:
    tokens, tags = row.get("tokens"), row.get("tags")
    if not isinstance(tokens, list) or not isinstance(tags, list):
        raise InputError('"tokens" and "tags" must both be lists')
    if len(tokens) != len(tags):
        raise InputError(f"{len(tokens)} tokens but {len(tags)} tags")
    offsets = word_offsets(doc.text)
    words = [doc.text[s:e] for s, e in offsets]
    if tokens != words:
        if len(tokens) != len(words):
            detail = f"{len(tokens)} tokens given, the document has {len(words)}"
        else:
            i = next(i for i, (a, b) in enumerate(zip(tokens, words, strict=True)) if a != b)
            detail = f"token {i} is {tokens[i]!r}, the document has {words[i]!r}"
        raise InputError(
            f"tokens do not match the benchmark's tokens of {doc.id} ({detail}); "
            r"tokenize with the regex \w+(?:[-_]\w+)*|\S",
        )
    scored: list[str] = []
    for i, tag in enumerate(tags):
        prefix, _, label = tag.partition("-") if isinstance(tag, str) else ("", "", "")
        target = types.resolve(label) if prefix in ("B", "I") else False
        if isinstance(target, str):
            tag = f"{prefix}-{target}"
        elif target is None:  # a domain this dataset does not score: outside, as in the gold
            tag = "O"
        if not isinstance(tag, str) or not is_bio_tag(tag, types.types):
            raise InputError(
                f"tag {i} {tag!r} is not O, B-TYPE or I-TYPE with a type of "
                f"this dataset ({types.accepted()})",
            )
        scored.append(tag)
    return bio_to_spans(scored, offsets)


def row_parser(
    documents: Mapping[str, NerDocument], types: TypeNames
) -> Callable[[str, dict[str, Any]], list[Span]]:
    """The spans of a predictions file's line, checked against its document, for the kit's
    `read_predictions` (which checks the id: `documents` is the whole split, not a --limit
    subset, so that a file made for the full split is accepted). `types` counts which type
    names were mapped or dropped."""

    def parse(doc_id: str, row: dict[str, Any]) -> list[Span]:
        has_spans, has_bio = "entities" in row, "tokens" in row or "tags" in row
        if has_spans == has_bio:
            raise InputError('give either "entities" or "tokens" + "tags"')
        doc = documents[doc_id]
        return _char_spans(row, doc, types) if has_spans else _bio_spans(row, doc, types)

    return parse


def write_predictions(path: str | Path, predictions: Mapping[str, Sequence[Span]]) -> None:
    """Write spans in the character-span format (used to export and in tests)."""
    with open(path, "w", encoding="utf-8") as fh:
        for doc_id, spans in predictions.items():
            entities = [{"start": s.start, "end": s.end, "type": s.type} for s in spans]
            fh.write(json.dumps({"id": doc_id, "entities": entities}, ensure_ascii=False) + "\n")
