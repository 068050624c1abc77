"""The four NCER corpora prepared as NCER does (docs/metrics.md, "NCER corpus preparation").

``load_ner_split(dataset, split, data_root)`` reads the corpus files in their own formats and
returns documents with gold spans of the OMOP types in corpus order, plus notes for the run
manifest (files read with sha256, span counts, dropped types, CHIA's moved/dropped spans, gold
spans whose text does not match the document, documents dropped for having no entity).

`preparation="ncer"` (`--option ner.preparation=ncer`) follows NCER's `prepare_dataset.py` in
the two places where clineval's defaults differ from it: an NCBI mention whose text does not
match its offsets is dropped (clineval keeps and counts it), and BC5CDR is not de-duplicated,
while a BC5CDR annotation whose text does not match moves to the first occurrence of its text.
docs/metrics.md counts what each changes per split.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from clineval.benchmarks.ner.bioc import read_bioc
from clineval.benchmarks.ner.brat import BratDocument, read_brat_zip, zip_stems
from clineval.benchmarks.ner.chia import ChiaPrepCounts, ncer_split, ncer_surviving_spans
from clineval.benchmarks.ner.pubtator import read_pubtator
from clineval.benchmarks.ner.records import DATASET_TYPES, NerDocument, PreparedSplit, Span
from clineval.data.checksums import sha256_file
from clineval.datapaths import data_file, require_file, search_roots
from clineval.errors import InputError
from clineval.jsonio import read_json_file

SPLITS = ("train", "dev", "test")
PREPARATIONS = ("clineval", "ncer")

# Corpus type -> OMOP domain; every other type is dropped (and counted in the notes).
TYPE_MAPS: dict[str, dict[str, str]] = {
    "ncbi": {
        "SpecificDisease": "condition",
        "DiseaseClass": "condition",
        "Modifier": "condition",
        "CompositeMention": "condition",
    },
    "bc5cdr": {"Chemical": "drug", "Disease": "condition"},
    "biored": {
        "GeneOrGeneProduct": "gene",
        "DiseaseOrPhenotypicFeature": "condition",
        "ChemicalEntity": "drug",
        "SequenceVariant": "gene variant",
    },
    "chia": {
        "Condition": "condition",
        "Drug": "drug",
        "Procedure": "procedure",
        "Measurement": "measurement",
    },
}

# The corpus types NCER's preparation drops (no OMOP domain). A tagger trained on the corpus
# writes them too: a predictions file may hold them, and they are dropped and counted there as
# they are from the gold. CHIA: its annotation schema's other entity types, and the labels its
# annotators used for problems in the text, as they appear in the released files.
UNSCORED_TYPES: dict[str, tuple[str, ...]] = {
    "biored": ("OrganismTaxon", "CellLine"),
    "chia": (
        "Person",
        "Observation",
        "Device",
        "Visit",
        "Mood",
        "Negation",
        "Qualifier",
        "Temporal",
        "Value",
        "Multiplier",
        "Reference_point",
        "Scope",
        "Non-query-able",
        "Parsing_Error",
        "Post-eligibility",
        "Non-representable",
        "Undefined_semantics",
        "Informed_consent",
        "Subjective_judgement",
        "Pregnancy_considerations",
        "Context_Error",
        "Line",
        "Competing_trial",
        "Grammar_Error",
        "Not_a_criteria",
        "Intoxication_considerations",
    ),
}


def type_names(types: Sequence[str]) -> dict[str, str]:
    """Lowercased names a model may use for each of `types` -> that type: the type itself and
    every corpus type the NCER preparation maps to it (Disease -> condition, ...)."""
    names = {
        source.lower(): target
        for mapping in TYPE_MAPS.values()
        for source, target in mapping.items()
        if target in types
    }
    names.update({t.lower(): t for t in types})
    return names


# Data files per dataset and split, relative to the data root.
SPLIT_FILES: dict[str, dict[str, str]] = {
    "ncbi": {
        "train": "ner/ncbi_disease/NCBItrainset_corpus.txt",
        "dev": "ner/ncbi_disease/NCBIdevelopset_corpus.txt",
        "test": "ner/ncbi_disease/NCBItestset_corpus.txt",
    },
    "bc5cdr": {
        "train": "ner/bc5cdr/CDR_TrainingSet.BioC.xml.gz",
        "dev": "ner/bc5cdr/CDR_DevelopmentSet.BioC.xml.gz",
        "test": "ner/bc5cdr/CDR_TestSet.BioC.xml.gz",
    },
    "biored": {
        "train": "ner/biored/Train.PubTator",
        "dev": "ner/biored/Dev.PubTator",
        "test": "ner/biored/Test.PubTator",
    },
}
CHIA_ZIP = "ner/chia/chia_without_scope.zip"
CHIA_SPLIT_IDS = "ner/chia/ncer_split_ids.json"
# Our split names -> the keys of ncer_split_ids.json (lists before NCER's empty-doc filter).
CHIA_SPLIT_KEYS = {"train": "train_all", "dev": "validation_all", "test": "test_all"}

_MAX_EXAMPLES = 5  # mismatch examples kept in the notes


def data_files(dataset: str, split: str) -> list[str]:
    """Relative paths of the files ``load_ner_split(dataset, split, ...)`` reads."""
    _check(dataset, split)
    if dataset == "chia":
        return [CHIA_ZIP, CHIA_SPLIT_IDS]
    return [SPLIT_FILES[dataset][split]]


def optional_data_files(dataset: str) -> frozenset[str]:
    """Files of `data_files` a split loads without: CHIA's split ids have no official address
    (`clineval data fetch chia` cannot get them) and are recomputed from the zip by NCER's
    rule when absent. When present they must still match the manifest."""
    return frozenset({CHIA_SPLIT_IDS}) if dataset == "chia" else frozenset()


def _check(dataset: str, split: str) -> None:
    if dataset not in DATASET_TYPES:
        raise InputError(f"unknown NER dataset {dataset!r} (known: {', '.join(DATASET_TYPES)})")
    if split not in SPLITS:
        raise InputError(f"unknown split {split!r} (known: {', '.join(SPLITS)})")


class _Notes:
    """Counters shared by the per-dataset builders, rendered into PreparedSplit.notes."""

    def __init__(self, dataset: str) -> None:
        self.dataset = dataset
        self.source_types: Counter[str] = Counter()
        self.dropped_types: Counter[str] = Counter()
        self.mismatches = 0
        self.mismatch_examples: list[dict[str, Any]] = []
        self.dropped_docs: list[str] = []
        self.extra: dict[str, Any] = {}

    def mismatch(self, doc_id: str, start: int, end: int, expected: str, found: str) -> None:
        self.mismatches += 1
        if len(self.mismatch_examples) < _MAX_EXAMPLES:
            self.mismatch_examples.append(
                {"id": doc_id, "start": start, "end": end, "annotation": expected, "text": found}
            )

    def map_type(self, source_type: str) -> str | None:
        self.source_types[source_type] += 1
        mapped = TYPE_MAPS[self.dataset].get(source_type)
        if mapped is None:
            self.dropped_types[source_type] += 1
        return mapped


def _relative(path: Path, root: Path | None) -> str:
    """How the manifest names a data file: by its path under the data root or the fetch
    cache, whichever it was read from."""
    for base in search_roots(root):
        if path.is_relative_to(base):
            return path.relative_to(base).as_posix()
    return str(path)


def _finish(
    dataset: str,
    split: str,
    docs: list[NerDocument],
    notes: _Notes,
    files: list[Path],
    root: Path | None,
) -> PreparedSplit:
    kept = []
    for doc in docs:
        if doc.entities:
            kept.append(doc)
        else:
            notes.dropped_docs.append(doc.id)
    types = DATASET_TYPES[dataset]
    per_type = Counter(span.type for doc in kept for span in doc.entities)
    ids = Counter(doc.id for doc in kept)
    rendered: dict[str, Any] = {
        "files": [
            {
                "path": _relative(p, root),
                "sha256": sha256_file(p),
            }
            for p in files
        ],
        "documents": len(kept),
        "spans": sum(per_type.values()),
        "spans_by_type": {t: per_type.get(t, 0) for t in types},
        "source_types": dict(notes.source_types),
        "dropped_types": dict(notes.dropped_types),
        "text_mismatches": notes.mismatches,
        "text_mismatch_examples": notes.mismatch_examples,
        "documents_dropped_no_entities": len(notes.dropped_docs),
        "documents_dropped_ids": notes.dropped_docs[:50],
        "duplicate_document_ids": sorted(i for i, c in ids.items() if c > 1),
    }
    rendered.update(notes.extra)
    return PreparedSplit(dataset=dataset, split=split, documents=kept, types=types, notes=rendered)


def _load_pubtator(path: Path, notes: _Notes, drop_mismatches: bool) -> list[NerDocument]:
    """NCBI (original release) and BioRED: PubTator mentions, title + " " + abstract.

    `drop_mismatches`: NCER's NCBI rule, a mention whose text differs from the document text at
    its offsets is left out (and counted); otherwise it is kept and counted."""
    docs = []
    dropped = 0
    for source in read_pubtator(path):
        text = source.text
        spans = []
        for m in source.mentions:
            mapped = notes.map_type(m.type)
            if mapped is None:
                continue
            if m.end > len(text):
                raise InputError(
                    f"span {m.start}-{m.end} outside document {source.pmid} "
                    f"({len(text)} characters)",
                    path=path,
                    line=m.line,
                )
            if text[m.start : m.end] != m.text:
                notes.mismatch(source.pmid, m.start, m.end, m.text, text[m.start : m.end])
                if drop_mismatches:
                    dropped += 1
                    continue
            spans.append(Span(m.start, m.end, mapped))
        docs.append(NerDocument(id=source.pmid, text=text, entities=spans))
    if drop_mismatches:
        notes.extra["ncer_mismatches_dropped"] = dropped
    return docs


def _first_location_text(ann_text: str, locations: Sequence[tuple[int, int]]) -> str:
    """The part of a composite component's text that belongs to its first location, as the
    BigBIO loader NCER reads splits it: the first `length` characters of the annotation text."""
    return ann_text[: locations[0][1]] if len(locations) > 1 else ann_text


def _load_bc5cdr(path: Path, notes: _Notes, ncer: bool) -> list[NerDocument]:
    """BC5CDR BioC: first location per annotation, (start, end, type) duplicates dropped.

    `ncer`: NCER's rules instead. Duplicates are kept; an annotation whose (first-location)
    text differs from the document at its offsets moves to the first occurrence of that text
    in the document (`str.find`), counted in `ncer_moved`; one whose text does not occur at
    all (NCER would write a span at -1; no split of the corpus has one) is dropped and
    counted in `ncer_unlocated`."""
    docs = []
    multi_location = duplicates = moved = unlocated = 0
    for source in read_bioc(path):
        passages = source.passages
        if len(passages) != 2 or passages[0].type != "title":
            raise InputError(
                f"document {source.id}: expected a title and an abstract passage",
                path=path,
                line=source.line,
            )
        title, abstract = passages
        if title.offset != 0 or abstract.offset != len(title.text) + 1:
            raise InputError(
                f"document {source.id}: passage offsets are not title=0, abstract=len(title)+1",
                path=path,
                line=source.line,
            )
        text = title.text + " " + abstract.text
        seen: set[tuple[int, int, str]] = set()
        spans = []
        for passage in passages:  # title first, then abstract: corpus order
            for ann in passage.annotations:
                mapped = notes.map_type(ann.type)
                if mapped is None:
                    continue
                offset, length = ann.locations[0]
                start, end = offset, offset + length
                if start < 0 or end > len(text):
                    raise InputError(
                        f"document {source.id} annotation {ann.id}: span {start}-{end} "
                        f"outside the text ({len(text)} characters)",
                        path=path,
                        line=ann.line,
                    )
                if len(ann.locations) > 1:
                    # A composite mention's component: its text names all locations, so it
                    # cannot equal the first location's text; counted, not a mismatch.
                    multi_location += 1
                elif text[start:end] != ann.text:
                    notes.mismatch(source.id, start, end, ann.text, text[start:end])
                if ncer:
                    expected = _first_location_text(ann.text, ann.locations)
                    if text[start:end] != expected:
                        found = text.find(expected)
                        if found < 0:
                            unlocated += 1
                            continue
                        moved += 1
                        start, end = found, found + len(expected)
                    spans.append(Span(start, end, mapped))
                    continue
                key = (start, end, mapped)
                if key in seen:
                    duplicates += 1
                    continue
                seen.add(key)
                spans.append(Span(start, end, mapped))
        docs.append(NerDocument(id=source.id, text=text, entities=spans))
    notes.extra["multi_location_annotations"] = multi_location
    if ncer:
        notes.extra["ncer_moved"] = moved
        notes.extra["ncer_unlocated"] = unlocated
    else:
        notes.extra["duplicate_spans_removed"] = duplicates
    return docs


def chia_split_ids(root: Path | None, split: str) -> list[str]:
    """Document ids of NCER's CHIA split (before the empty-document filter), in split order."""
    path = require_file(root, CHIA_SPLIT_IDS)
    try:
        payload = read_json_file(path, "split ids file")
        ids = payload[CHIA_SPLIT_KEYS[split]]
    except (KeyError, TypeError) as exc:
        raise InputError(f"not an NCER split-id file ({exc})", path=path) from None
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise InputError(f"{CHIA_SPLIT_KEYS[split]!r} is not a list of ids", path=path)
    return ids


def derive_chia_split_ids(zip_path: Path, split: str) -> list[str]:
    """The same split recomputed from the corpus (used when ncer_split_ids.json is absent)."""
    return ncer_split(zip_stems(zip_path))[CHIA_SPLIT_KEYS[split]]


def _load_chia(
    root: Path | None, split: str, notes: _Notes, files: list[Path]
) -> list[NerDocument]:
    zip_path = require_file(root, CHIA_ZIP)
    files.append(zip_path)
    split_ids = data_file(root, CHIA_SPLIT_IDS)
    if split_ids is not None:
        files.append(split_ids)
        ids = chia_split_ids(root, split)
        notes.extra["chia_split_source"] = CHIA_SPLIT_IDS
    else:
        ids = derive_chia_split_ids(zip_path, split)
        notes.extra["chia_split_source"] = "derived from the zip (NCER rule, seed 42)"
    corpus: dict[str, BratDocument] = read_brat_zip(zip_path, ids)
    type_map = TYPE_MAPS["chia"]
    totals = ChiaPrepCounts()
    docs = []
    for doc_id in ids:
        source = corpus[doc_id]
        for ent in source.entities:
            notes.map_type(ent.type)
            if ent.type in type_map:
                # brat's text column joins a discontinuous entity's fragments with a space.
                found = " ".join(source.text[s:e] for s, e in ent.fragments)
                if found != ent.text:
                    start, end = ent.fragments[0][0], ent.fragments[-1][1]
                    notes.mismatch(doc_id, start, end, ent.text, found)
        spans, counts = ncer_surviving_spans(source.text, source.entities, type_map)
        totals.add(counts)
        docs.append(
            NerDocument(id=doc_id, text=source.text, entities=[Span(s, e, t) for s, e, t in spans])
        )
    notes.extra["chia_ncer_preparation"] = totals.as_dict()
    return docs


def load_ner_split(
    dataset: str, split: str, data_root: str | Path | None, preparation: str = "clineval"
) -> PreparedSplit:
    """Documents and gold spans of one split, prepared as NCER does (see module docstring);
    `preparation="ncer"` applies NCER's NCBI mismatch drop and BC5CDR rules instead."""
    _check(dataset, split)
    if preparation not in PREPARATIONS:
        raise InputError(f"unknown preparation {preparation!r} (known: {', '.join(PREPARATIONS)})")
    ncer = preparation == "ncer"
    # each file from the data root, else from the fetch cache (clineval.datapaths)
    root = None if data_root is None else Path(data_root)
    notes = _Notes(dataset)
    notes.extra["preparation"] = preparation
    files: list[Path] = []
    if dataset == "chia":
        docs = _load_chia(root, split, notes, files)
    else:
        path = require_file(root, SPLIT_FILES[dataset][split])
        files.append(path)
        if dataset == "bc5cdr":
            docs = _load_bc5cdr(path, notes, ncer)
        else:  # NCER checks NCBI's mention texts only, not BioRED's
            docs = _load_pubtator(path, notes, drop_mismatches=ncer and dataset == "ncbi")
    return _finish(dataset, split, docs, notes, files, root)


def document_ids(dataset: str, split: str, data_root: str | Path | None) -> list[str]:
    """Ids of the documents of a prepared split, in order (the benchmark's sample ids)."""
    return [doc.id for doc in load_ner_split(dataset, split, data_root).documents]
