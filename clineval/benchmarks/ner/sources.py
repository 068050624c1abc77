"""The NER corpora's official addresses for `clineval data fetch` (raw files of public
mirrors at pinned commits; every file is checked against the package manifest's sha256)."""

from __future__ import annotations

from clineval.benchmarks.declaration import DataSource
from clineval.data.fetch import Source

_NCBI = "https://raw.githubusercontent.com/spyysalo/ncbi-disease/5a266c6fc76fb2b5184cfa397ff0a5ecdb133aec/original-data"
_CDR = "https://raw.githubusercontent.com/cryptoradon/biomedRelExt/{commit}/CDR_Data"
_CDR_FIRST = "c3f40f6f28da6c2f227f487bd3c46a78215a2b2f"
_CDR_TRAIN_PUBTATOR = "e42e94570138158963ae4696298bf09232071740"
_BIORED = "https://raw.githubusercontent.com/ndlongvn/BioRED-NER-RE/637e02c9746de045ef56dbf543d77602783d63d9/NER%20BioRED/BioRED"
_CHIA = (
    "https://raw.githubusercontent.com/Vidhate/CHIA-NER-RE/ed84384ba70275eac69d273eb5325b321cda1c72"
)


def _cdr(name: str, commit: str = _CDR_FIRST) -> str:
    return f"{_CDR.format(commit=commit)}/CDR.Corpus.v010516/{name}"


SOURCES: dict[str, tuple[Source, ...]] = {
    "ncbi": (
        Source(
            "ner/ncbi_disease/NCBItrainset_corpus.txt", f"{_NCBI}/train/NCBItrainset_corpus.txt"
        ),
        Source(
            "ner/ncbi_disease/NCBIdevelopset_corpus.txt", f"{_NCBI}/devel/NCBIdevelopset_corpus.txt"
        ),
        Source("ner/ncbi_disease/NCBItestset_corpus.txt", f"{_NCBI}/test/NCBItestset_corpus.txt"),
        Source("ner/ncbi_disease/LICENSE.txt", f"{_NCBI}/LICENSE"),
    ),
    "bc5cdr": (
        Source(
            "ner/bc5cdr/CDR_TrainingSet.PubTator.txt",
            _cdr("CDR_TrainingSet.PubTator.txt", _CDR_TRAIN_PUBTATOR),
        ),
        Source(
            "ner/bc5cdr/CDR_DevelopmentSet.PubTator.txt", _cdr("CDR_DevelopmentSet.PubTator.txt")
        ),
        Source("ner/bc5cdr/CDR_TestSet.PubTator.txt", _cdr("CDR_TestSet.PubTator.txt")),
        Source("ner/bc5cdr/CDR_TrainingSet.BioC.xml.gz", _cdr("CDR_TrainingSet.BioC.xml"), True),
        Source(
            "ner/bc5cdr/CDR_DevelopmentSet.BioC.xml.gz", _cdr("CDR_DevelopmentSet.BioC.xml"), True
        ),
        Source("ner/bc5cdr/CDR_TestSet.BioC.xml.gz", _cdr("CDR_TestSet.BioC.xml"), True),
        Source(
            "ner/bc5cdr/README_original_release.txt",
            f"{_CDR.format(commit=_CDR_FIRST)}/README.txt",
        ),
    ),
    "biored": (
        Source("ner/biored/Train.PubTator", f"{_BIORED}/Train.PubTator"),
        Source("ner/biored/Dev.PubTator", f"{_BIORED}/Dev.PubTator"),
        Source("ner/biored/Test.PubTator", f"{_BIORED}/Test.PubTator"),
        Source("ner/biored/Train.BioC.XML.gz", f"{_BIORED}/Train.BioC.XML", True),
        Source("ner/biored/Dev.BioC.XML.gz", f"{_BIORED}/Dev.BioC.XML", True),
        Source("ner/biored/Test.BioC.XML.gz", f"{_BIORED}/Test.BioC.XML", True),
    ),
    "chia": (
        Source("ner/chia/chia_without_scope.zip", f"{_CHIA}/chia_without_scope.zip"),
        Source("ner/chia/chia_with_scope.zip", f"{_CHIA}/chia_with_scope.zip"),
        # Derived by the data's curators, not published upstream: only a mirror has it
        # (without it, load_ner_split recomputes the same split from the zip).
        Source("ner/chia/ncer_split_ids.json", None),
    ),
}

# `clineval data fetch NAME`, one source per corpus
DATA_SOURCES = tuple(DataSource(name, files) for name, files in SOURCES.items())
