"""The NER counts that tests/test_ner_data.py asserts, counted again from the raw files with a
few lines of plain Python (stdlib only, no clineval reader), so that no expected number rests
on clineval's own code. Definitions: docs/metrics.md, "NCER corpus preparation"; the raw-file
counts: docs/data-sources.md.

The CHIA count restates NCER's rule literally (universal newlines via io.StringIO, the newline
doubling, first fragment, then a search with re.findall); clineval's implementation
(clineval.benchmarks.ner.chia) works differently (a character map back to raw offsets), so the two
agreeing is evidence for both.
"""

from __future__ import annotations

import gzip
import io
import json
import re
import xml.etree.ElementTree as ET
import zipfile
from collections import Counter
from pathlib import Path

import pytest

from clineval.benchmarks.ner.corpora import load_ner_split

CHIA_MAPPED = {"Condition", "Drug", "Procedure", "Measurement"}


def _chia_plain_count(root: Path) -> tuple[Counter[tuple[str, str]], Counter[str], int]:
    """((outcome, continuous|discontinuous) -> entities, surviving spans by type, documents
    with a survivor) over NCER's CHIA test split."""
    ids = json.loads((root / "ner/chia/ncer_split_ids.json").read_text("utf-8"))["test_all"]
    outcomes: Counter[tuple[str, str]] = Counter()
    survivors: Counter[str] = Counter()
    documents = 0
    with zipfile.ZipFile(root / "ner/chia/chia_without_scope.zip") as archive:
        members = {name.rsplit("/", 1)[-1]: name for name in archive.namelist()}
        for stem in ids:
            raw = archive.read(members[stem + ".txt"]).decode("utf-8")
            text = io.StringIO(raw, newline=None).read()
            text = re.sub(r"(?<=[a-zA-Z,.])\n(?=[a-zA-Z,.])", "\n\n", text)
            kept = 0
            for line in archive.read(members[stem + ".ann"]).decode("utf-8").splitlines():
                fields = line.split("\t")
                if not line.startswith("T") or len(fields) < 3:
                    continue
                kind, offsets = fields[1].split(" ", 1)
                if kind not in CHIA_MAPPED:
                    continue
                fragments = offsets.split(";")
                start, end = map(int, fragments[0].split())
                shape = "discontinuous" if len(fragments) > 1 else "continuous"
                if text[start:end] == fields[2]:
                    outcome = "kept"
                else:
                    hits = len(re.findall(re.escape(fields[2]), text))
                    outcome = {0: "no match", 1: "moved"}.get(hits, "several matches")
                outcomes[outcome, shape] += 1
                if outcome in ("kept", "moved"):
                    survivors[kind.lower()] += 1
                    kept += 1
            documents += kept > 0
    return outcomes, survivors, documents


def test_chia_preparation_counts_from_the_raw_zip(data_root: Path) -> None:
    outcomes, survivors, documents = _chia_plain_count(data_root)
    # The figures quoted in docs/metrics.md and asserted in tests/test_ner_data.py:
    assert outcomes == {
        ("kept", "continuous"): 1496,
        ("moved", "continuous"): 460,
        ("several matches", "continuous"): 93,
        ("no match", "discontinuous"): 134,  # every discontinuous entity, and only those
    }
    assert survivors == {"condition": 1103, "drug": 295, "procedure": 300, "measurement": 258}
    assert documents == 191
    notes = load_ner_split("chia", "test", data_root).notes
    prep = notes["chia_ncer_preparation"]
    assert prep["kept_in_place"] == outcomes["kept", "continuous"]
    assert prep["moved"] == outcomes["moved", "continuous"]
    assert prep["dropped_several_matches"] == outcomes["several matches", "continuous"]
    assert prep["dropped_no_match"] == prep["discontinuous_dropped"] == prep["discontinuous"]
    assert prep["discontinuous"] == outcomes["no match", "discontinuous"]
    assert notes["spans_by_type"] == survivors and notes["documents"] == documents


def test_bc5cdr_bioc_counts_from_the_raw_xml(data_root: Path) -> None:
    path = data_root / "ner/bc5cdr/CDR_TestSet.BioC.xml.gz"
    with gzip.open(path) as handle:
        collection = ET.parse(handle).getroot()
    by_type: Counter[str] = Counter()
    distinct: Counter[str] = Counter()
    multi_location = 0
    for document in collection.iter("document"):
        seen: set[tuple[str, str, str]] = set()
        for annotation in document.iter("annotation"):
            kind = next(i.text or "" for i in annotation.iter("infon") if i.get("key") == "type")
            locations = annotation.findall("location")
            by_type[kind] += 1
            multi_location += len(locations) > 1
            key = (locations[0].get("offset", ""), locations[0].get("length", ""), kind)
            if key not in seen:
                seen.add(key)
                distinct[kind] += 1
    assert by_type == {"Chemical": 5394, "Disease": 4534}
    assert multi_location == 37
    assert distinct == {"Chemical": 5394, "Disease": 4530}  # 9,924: the published gold
    notes = load_ner_split("bc5cdr", "test", data_root).notes
    assert notes["source_types"] == dict(by_type)
    assert notes["multi_location_annotations"] == multi_location
    assert notes["duplicate_spans_removed"] == by_type.total() - distinct.total()


def _pubtator_types(path: Path) -> Counter[str]:
    """Mention lines (PMID, start, end, text, type, ...) by type; relation lines have a
    word, not a number, in their second field."""
    counts: Counter[str] = Counter()
    for line in path.read_text("utf-8").splitlines():
        fields = line.split("\t")
        if len(fields) >= 5 and fields[1].isdigit():
            counts[fields[4]] += 1
    return counts


def test_biored_and_ncbi_type_counts_from_the_raw_files(data_root: Path) -> None:
    biored = _pubtator_types(data_root / "ner/biored/Test.PubTator")
    assert (biored["OrganismTaxon"], biored["CellLine"]) == (393, 50)
    notes = load_ner_split("biored", "test", data_root).notes
    assert notes["dropped_types"] == {"OrganismTaxon": 393, "CellLine": 50}
    ncbi = _pubtator_types(data_root / "ner/ncbi_disease/NCBItestset_corpus.txt")
    assert ncbi == {"SpecificDisease": 555, "Modifier": 264, "DiseaseClass": 121,
                    "CompositeMention": 20}  # fmt: skip
    assert ncbi.total() == 960
    assert load_ner_split("ncbi", "test", data_root).notes["source_types"] == dict(ncbi)


# --- NCER's own preparation rules (--option ner.preparation=ncer) ----------------------------

NCBI_FILES = {"train": "NCBItrainset", "dev": "NCBIdevelopset", "test": "NCBItestset"}
BC5CDR_FILES = {"train": "Training", "dev": "Development", "test": "Test"}


def _ncbi_plain_mismatches(path: Path) -> tuple[int, int]:
    """(mentions, mentions whose text differs from title + " " + abstract at their offsets)."""
    texts: dict[str, dict[str, str]] = {}
    mentions = mismatches = 0
    for line in path.read_text("utf-8").splitlines():
        if "|t|" in line[:20] or "|a|" in line[:20]:
            pmid, kind, body = line.split("|", 2)
            texts.setdefault(pmid, {})[kind] = body
            continue
        fields = line.split("\t")
        if len(fields) >= 5 and fields[1].isdigit():
            doc = texts[fields[0]]
            text = doc["t"] + " " + doc["a"]
            mentions += 1
            mismatches += text[int(fields[1]) : int(fields[2])] != fields[3]
    return mentions, mismatches


@pytest.mark.parametrize(("split", "expected"), [("test", 0), ("dev", 0), ("train", 1)])
def test_ncbi_ncer_mismatch_drop_counts_from_the_raw_files(
    data_root: Path, split: str, expected: int
) -> None:
    path = data_root / f"ner/ncbi_disease/{NCBI_FILES[split]}_corpus.txt"
    mentions, mismatches = _ncbi_plain_mismatches(path)
    assert mismatches == expected  # the counts quoted in docs/metrics.md
    ours = load_ner_split("ncbi", split, data_root).notes
    ncer = load_ner_split("ncbi", split, data_root, "ncer").notes
    assert ours["spans"] == mentions and ours["text_mismatches"] == mismatches
    assert ncer["spans"] == mentions - mismatches
    assert ncer["ncer_mismatches_dropped"] == mismatches and ncer["preparation"] == "ncer"


def _bc5cdr_plain(path: Path) -> tuple[int, int, int]:
    """(annotations, annotations whose first-location text, as BigBIO splits a composite
    component's text, differs from the document there, how many of those occur elsewhere)."""
    with gzip.open(path) as handle:
        collection = ET.parse(handle).getroot()
    total = mismatched = found = 0
    for document in collection.iter("document"):
        passages = document.findall("passage")
        text = " ".join(p.findtext("text") or "" for p in passages)
        for annotation in document.iter("annotation"):
            locations = annotation.findall("location")
            start, length = int(locations[0].get("offset", "")), int(locations[0].get("length", ""))
            written = annotation.findtext("text") or ""
            first = written[:length] if len(locations) > 1 else written
            total += 1
            if text[start : start + length] != first:
                mismatched += 1
                found += text.find(first) >= 0
    return total, mismatched, found


@pytest.mark.parametrize(("split", "moved"), [("test", 0), ("dev", 1), ("train", 1)])
def test_bc5cdr_ncer_preparation_counts_from_the_raw_xml(
    data_root: Path, split: str, moved: int
) -> None:
    path = data_root / f"ner/bc5cdr/CDR_{BC5CDR_FILES[split]}Set.BioC.xml.gz"
    total, mismatched, found = _bc5cdr_plain(path)
    assert mismatched == found == moved  # quoted in docs/metrics.md
    ncer = load_ner_split("bc5cdr", split, data_root, "ncer").notes
    ours = load_ner_split("bc5cdr", split, data_root).notes
    # NCER keeps every annotation (no de-duplication): 9,928 on test against clineval's 9,924.
    assert ncer["spans"] == total
    assert ours["spans"] == total - ours["duplicate_spans_removed"]
    assert ncer["ncer_moved"] == moved and ncer["ncer_unlocated"] == 0
    if split == "test":
        assert (ncer["spans"], ours["spans"]) == (9928, 9924)
