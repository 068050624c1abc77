"""Typed records shared by the NER readers, metrics, models and the NER task."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# The OMOP CDM domains each dataset is scored on, in a fixed order (report order).
DATASET_TYPES: dict[str, tuple[str, ...]] = {
    "ncbi": ("condition",),
    "bc5cdr": ("drug", "condition"),
    "biored": ("gene", "condition", "drug", "gene variant"),
    "chia": ("condition", "drug", "procedure", "measurement"),
}


@dataclass(frozen=True, slots=True)
class Span:
    """A typed character span; `end` is exclusive."""

    start: int
    end: int
    type: str


@dataclass
class NerDocument:
    id: str  # PMID for PubTator/BioC corpora, brat file stem for CHIA
    text: str  # the document text the offsets index into
    entities: list[Span]  # gold, in corpus order (never sorted or de-duplicated beyond NCER)


@dataclass
class PreparedSplit:
    dataset: str  # "ncbi" | "bc5cdr" | "biored" | "chia"
    split: str  # "train" | "dev" | "test"
    documents: list[NerDocument]
    types: tuple[str, ...]
    # Counts for the manifest: files read (+ sha256), types dropped, spans moved/dropped,
    # spans whose text does not match the document, documents dropped for having no entity.
    notes: dict[str, Any] = field(default_factory=dict)
