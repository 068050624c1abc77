"""NER corpus readers and the NCER preparation.

Oracles: the published NCER test-gold counts and the raw-file counts (docs/metrics.md,
docs/data-sources.md; recounted from the raw files in tests/test_ner_independent_counts.py),
the CHIA split ids shipped with the data, and small hand-made files whose
expected spans are worked out by hand in each test.
"""

from __future__ import annotations

import gzip
import json
import re
import zipfile
from collections import Counter
from pathlib import Path

import pytest

from clineval.benchmarks.ner.bioc import read_bioc
from clineval.benchmarks.ner.brat import parse_ann, read_brat_pair, read_brat_zip
from clineval.benchmarks.ner.chia import ncer_split, ncer_surviving_spans, ncer_text
from clineval.benchmarks.ner.corpora import (
    CHIA_SPLIT_IDS,
    CHIA_ZIP,
    chia_split_ids,
    data_files,
    document_ids,
    load_ner_split,
)
from clineval.benchmarks.ner.pubtator import read_pubtator
from clineval.benchmarks.ner.records import DATASET_TYPES
from clineval.errors import InputError

# --- published test gold (NCER; docs/metrics.md, "Published test gold") --------------------

PUBLISHED = {
    "ncbi": (100, {"condition": 960}),
    "bc5cdr": (500, {"drug": 5394, "condition": 4530}),
    "biored": (100, {"gene": 1180, "condition": 917, "drug": 754, "gene variant": 241}),
    "chia": (191, {"condition": 1103, "drug": 295, "procedure": 300, "measurement": 258}),
}


@pytest.mark.parametrize("dataset", list(PUBLISHED))
def test_published_test_gold_counts(data_root: Path, dataset: str) -> None:
    prepared = load_ner_split(dataset, "test", data_root)
    n_docs, per_type = PUBLISHED[dataset]
    assert len(prepared.documents) == n_docs
    counted: dict[str, int] = {}
    for doc in prepared.documents:
        for span in doc.entities:
            counted[span.type] = counted.get(span.type, 0) + 1
    assert counted == per_type
    assert prepared.notes["spans_by_type"] == per_type
    assert prepared.types == DATASET_TYPES[dataset]
    assert prepared.notes["text_mismatches"] == 0
    # Every span lies inside its document and is non-empty; ids are unique.
    for doc in prepared.documents:
        for span in doc.entities:
            assert 0 <= span.start < span.end <= len(doc.text)
    assert len({d.id for d in prepared.documents}) == n_docs
    assert prepared.notes["files"][0]["path"] == data_files(dataset, "test")[0]


def test_bc5cdr_bioc_rules(data_root: Path) -> None:
    notes = load_ner_split("bc5cdr", "test", data_root).notes
    # 9,928 BioC annotations: 37 composite components with several locations, 4 duplicates
    # (docs/data-sources.md; recounted in tests/test_ner_independent_counts.py).
    assert notes["source_types"] == {"Chemical": 5394, "Disease": 4534}
    assert notes["multi_location_annotations"] == 37
    assert notes["duplicate_spans_removed"] == 4


def test_biored_drops_organism_and_cell_line(data_root: Path) -> None:
    notes = load_ner_split("biored", "test", data_root).notes
    # raw Test.PubTator counts (docs/data-sources.md; recounted in test_ner_independent_counts.py)
    assert notes["dropped_types"] == {"OrganismTaxon": 393, "CellLine": 50}


def test_chia_test_preparation_counts(data_root: Path) -> None:
    notes = load_ner_split("chia", "test", data_root).notes
    prep = notes["chia_ncer_preparation"]
    # docs/metrics.md (CHIA): all 134 discontinuous entities drop out, 460 spans move, 93 drop
    # (several matches); counted from the raw zip in tests/test_ner_independent_counts.py.
    assert prep["discontinuous"] == 134
    assert prep["discontinuous_dropped"] == 134
    assert prep["moved"] == 460
    assert prep["dropped_several_matches"] == 93
    assert prep["dropped_no_match"] == 134  # exactly the discontinuous ones
    assert prep["kept_in_place"] + prep["moved"] == 1956
    assert notes["documents_dropped_no_entities"] == 200 - 191


@pytest.mark.parametrize(("split", "key"), [("test", "test"), ("dev", "validation")])
def test_chia_split_matches_ncer_ids(data_root: Path, split: str, key: str) -> None:
    ids = json.loads((data_root / "ner/chia/ncer_split_ids.json").read_text())
    assert document_ids("chia", split, data_root) == ids[key]
    counts = ids["counts"][key]
    prepared = load_ner_split("chia", split, data_root)
    assert prepared.notes["spans_by_type"] == counts["gold_spans_after_benchmark_prep"]


def test_chia_train_matches_ncer_counts(data_root: Path) -> None:
    ids = json.loads((data_root / "ner/chia/ncer_split_ids.json").read_text())
    prepared = load_ner_split("chia", "train", data_root)
    assert [d.id for d in prepared.documents] == ids["train"]
    assert prepared.notes["spans"] == ids["counts"]["train"]["gold_spans_total"]


def test_chia_split_recomputed_from_zip_equals_shipped_ids(data_root: Path) -> None:
    ids = json.loads((data_root / "ner/chia/ncer_split_ids.json").read_text())
    derived = ncer_split(list(read_brat_zip(data_root / CHIA_ZIP)))
    for key in ("train_all", "validation_all", "test_all"):
        assert derived[key] == ids[key]


def test_chia_with_scope_zip_gives_same_gold(data_root: Path) -> None:
    """The with-scope zip (NCER's variant) gives the same gold for the test split."""
    with_scope = read_brat_zip(data_root / "ner/chia/chia_with_scope.zip")
    without = read_brat_zip(data_root / CHIA_ZIP)
    type_map = {"Condition": "c", "Drug": "d", "Procedure": "p", "Measurement": "m"}
    for doc_id in document_ids("chia", "test", data_root):
        a, _ = ncer_surviving_spans(with_scope[doc_id].text, with_scope[doc_id].entities, type_map)
        b, _ = ncer_surviving_spans(without[doc_id].text, without[doc_id].entities, type_map)
        assert a == b


def test_chia_spans_index_raw_text_with_crlf(data_root: Path) -> None:
    """Surviving spans are in raw coordinates: CRLF files keep their CRs, spans match text."""
    corpus = read_brat_zip(data_root / CHIA_ZIP)
    prepared = load_ner_split("chia", "test", data_root)
    with_cr = [d for d in prepared.documents if "\r\n" in d.text]
    assert with_cr, "the test split has CRLF documents"
    for doc in prepared.documents:
        assert doc.text == corpus[doc.id].text
        annotated = {ent.text for ent in corpus[doc.id].entities}
        for span in doc.entities:
            assert doc.text[span.start : span.end] in annotated


def test_unknown_dataset_split_and_missing_root(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="unknown NER dataset"):
        load_ner_split("conll", "test", tmp_path)
    with pytest.raises(InputError, match="unknown split"):
        load_ner_split("ncbi", "validation", tmp_path)
    with pytest.raises(InputError) as info:
        load_ner_split("ncbi", "test", tmp_path)
    assert info.value.path is not None and info.value.path.endswith("NCBItestset_corpus.txt")


# --- PubTator ---------------------------------------------------------------------------

PUBTATOR = (
    "111|t|Renal failure.\n"
    "111|a|Cisplatin caused renal and hepatic failure.\n"
    "111\t0\t13\tRenal failure\tDisease\tD1\n"
    "111\t15\t24\tCisplatin\tChemical\tD2\n"
    "111\t32\t57\trenal and hepatic failure\tDisease\tD3|D4\trenal failure|hepatic failure\n"
    "111\tCID\tD2\tD1\n"
    "\n"
    "222|t|Nothing here\n"
    "222|a|\n"
    "\n"
)


def test_pubtator_reader_hand_made(tmp_path: Path) -> None:
    path = tmp_path / "tiny.PubTator"
    path.write_text(PUBTATOR)
    docs = read_pubtator(path)
    assert [d.pmid for d in docs] == ["111", "222"]
    first = docs[0]
    assert first.text == "Renal failure. Cisplatin caused renal and hepatic failure."
    assert [(m.start, m.end, m.type) for m in first.mentions] == [
        (0, 13, "Disease"),
        (15, 24, "Chemical"),
        (32, 57, "Disease"),
    ]
    for m in first.mentions:
        assert first.text[m.start : m.end] == m.text
    assert docs[1].mentions == () and docs[1].text == "Nothing here "


def test_pubtator_mismatch_is_counted_not_moved(tmp_path: Path) -> None:
    root = tmp_path
    path = root / "ner/ncbi_disease/NCBItestset_corpus.txt"
    path.parent.mkdir(parents=True)
    # "failure" is at 6..13; the annotation says 5..12 (off by one): kept, counted.
    path.write_text("9|t|Renal failure\n9|a|x\n9\t5\t12\tfailure\tSpecificDisease\tD1\n\n")
    prepared = load_ner_split("ncbi", "test", root)
    assert [(s.start, s.end) for s in prepared.documents[0].entities] == [(5, 12)]
    assert prepared.notes["text_mismatches"] == 1
    assert prepared.notes["text_mismatch_examples"][0]["text"] == " failur"


@pytest.mark.parametrize(
    ("content", "bad_line", "message"),
    [
        ("1|t|T\n1|a|A\n1\t0\tx\tT\tDisease\tD\n", 3, "end offset"),
        ("1|t|T\n1|a|A\n1\t0\t1\tT\n", 3, "mention line needs"),
        ("1|t|T\n1|a|A\n1\t5\t2\tT\tDisease\tD\n", 3, "before start"),
        ("1|t|T\n1|a|A\n2\t0\t1\tT\tDisease\tD\n", 3, "PMID"),
        ("1|t|T\n1|x|A\n", 2, re.escape("expected 'PMID|t|title'")),
        ("1|t|T\ngarbage line\n", 2, "expected"),
        ("1\t0\t1\tT\tDisease\tD\n", 1, "before any"),
        ("1|t|T\n1|a|A\n1\t-3\t1\tT\tDisease\tD\n", 3, "start offset"),
        # "²" passes str.isdigit() but not int(): still a one-line InputError
        ("1|t|T\n1|a|A\n1\t\u00b2\t1\tT\tDisease\tD\n", 3, "start offset"),
        ("1|t|T\n1|a|A\n1\t0\t\u00b2\tT\tDisease\tD\n", 3, "end offset"),
    ],
)
def test_pubtator_malformed_lines(
    tmp_path: Path, content: str, bad_line: int, message: str
) -> None:
    path = tmp_path / "bad.PubTator"
    path.write_text(content)
    with pytest.raises(InputError, match=message) as info:
        read_pubtator(path)
    assert info.value.path == str(path)
    assert info.value.line == bad_line
    assert f"bad.PubTator:{bad_line}:" in str(info.value)


# --- BioC --------------------------------------------------------------------------------

BIOC = """<?xml version='1.0' encoding='UTF-8'?><!DOCTYPE collection SYSTEM 'BioC.dtd'>
<collection><source>hand-made</source>
<document><id>42</id>
<passage><infon key="type">title</infon><offset>0</offset><text>Aspirin hurts.</text>
<annotation id='0'><infon key="type">Chemical</infon><location offset='0' length='7' />
<text>Aspirin</text></annotation>
</passage>
<passage><infon key="type">abstract</infon><offset>15</offset>
<text>Renal and hepatic failure after aspirin.</text>
<annotation id='1'><infon key="type">Disease</infon><location offset='15' length='25' />
<text>Renal and hepatic failure</text></annotation>
<annotation id='2'><infon key="type">Disease</infon><location offset='15' length='5' />
<location offset='33' length='7' /><text>Renal failure</text></annotation>
<annotation id='3'><infon key="type">Chemical</infon><location offset='47' length='7' />
<text>aspirin</text></annotation>
<annotation id='4'><infon key="type">Chemical</infon><location offset='47' length='7' />
<text>aspirin</text></annotation>
<annotation id='5'><infon key="type">Species</infon><location offset='0' length='3' />
<text>Asp</text></annotation>
</passage></document></collection>
"""


def test_bioc_reader_and_bc5cdr_rules(tmp_path: Path) -> None:
    path = tmp_path / "ner/bc5cdr/CDR_TestSet.BioC.xml.gz"
    path.parent.mkdir(parents=True)
    path.write_bytes(gzip.compress(BIOC.encode()))
    (doc,) = read_bioc(path)
    assert doc.id == "42"
    assert [p.type for p in doc.passages] == ["title", "abstract"]
    assert doc.passages[1].annotations[1].locations == ((15, 5), (33, 7))

    prepared = load_ner_split("bc5cdr", "test", tmp_path)
    (ner_doc,) = prepared.documents
    assert ner_doc.text == "Aspirin hurts. Renal and hepatic failure after aspirin."
    # title first; composite component keeps its FIRST location (15, 20); duplicate aspirin
    # (47, 54, drug) kept once; Species dropped.
    assert [(s.start, s.end, s.type) for s in ner_doc.entities] == [
        (0, 7, "drug"),
        (15, 40, "condition"),
        (15, 20, "condition"),
        (47, 54, "drug"),
    ]
    assert prepared.notes["duplicate_spans_removed"] == 1
    assert prepared.notes["multi_location_annotations"] == 1
    assert prepared.notes["dropped_types"] == {"Species": 1}
    assert prepared.notes["text_mismatches"] == 0


def test_bioc_malformed(tmp_path: Path) -> None:
    path = tmp_path / "bad.xml"
    path.write_text("<collection>\n<document><id>1</id>\n<passage></document>\n</collection>\n")
    with pytest.raises(InputError, match="malformed XML") as info:
        read_bioc(path)
    assert info.value.path == str(path) and info.value.line == 3
    missing_location = BIOC.replace("<location offset='47' length='7' />", "", 1)
    path.write_text(missing_location)
    with pytest.raises(InputError, match="document 42 annotation 3: no location") as info:
        read_bioc(path)
    lines = missing_location.splitlines()
    assert info.value.line == 1 + next(i for i, t in enumerate(lines) if "id='3'" in t)
    bad_offset = BIOC.replace("offset='47' length='7'", "offset='4x' length='7'", 1)
    path.write_text(bad_offset)
    with pytest.raises(InputError, match="location offset '4x' is not an integer") as info:
        read_bioc(path)
    assert info.value.line == 1 + next(
        i for i, t in enumerate(bad_offset.splitlines()) if "offset='4x'" in t
    )
    # Both pass a plain str.isdigit() check (after stripping every "-"), but not int().
    for value in ("\u00b2", "--5"):
        path.write_text(BIOC.replace("<offset>15</offset>", f"<offset>{value}</offset>"))
        with pytest.raises(InputError, match=f"passage offset {value!r} is not an integer"):
            read_bioc(path)


# --- brat --------------------------------------------------------------------------------

# Raw text with CRLF line ends: "Heart failure\r\nNo aspirin or insulin\r\naspirin\r\n".
# Offsets count "\r\n" as two characters: "aspirin" on line 2 is at 18..25, "insulin" 29..36,
# the second "aspirin" (line 3) at 38..45.
BRAT_TXT = "Heart failure\r\nNo aspirin or insulin\r\naspirin\r\n"
BRAT_ANN = (
    "T1\tCondition 0 13\tHeart failure\n"
    "T2\tDrug 18 25\taspirin\n"
    "T3\tDrug 29 36\tinsulin\n"
    "R1\tAND Arg1:T2 Arg2:T3\t\n"
    "T4\tCondition 0 5;6 13\tHeart failure\n"
    "*\tOR T2 T3\n"
    "T5\tNegation 15 17\tNo\n"
    "#1\tAnnotatorNotes T1\tnote\n"
)


def _write_zip(path: Path, members: dict[str, str]) -> None:
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in members.items():
            archive.writestr(name, text.encode("utf-8"))


def test_brat_zip_offsets_count_crlf_as_two(tmp_path: Path) -> None:
    zip_path = tmp_path / "chia_fixture.zip"
    _write_zip(zip_path, {"top/D1_inc.txt": BRAT_TXT, "top/D1_inc.ann": BRAT_ANN})
    docs = read_brat_zip(zip_path)
    doc = docs["D1_inc"]
    assert doc.text == BRAT_TXT  # no newline translation
    assert [e.id for e in doc.entities] == ["T1", "T2", "T3", "T4", "T5"]
    for ent in doc.entities:
        assert " ".join(doc.text[s:e] for s, e in ent.fragments) == ent.text
    assert doc.entities[3].fragments == ((0, 5), (6, 13))
    assert doc.entities[3].discontinuous


def test_brat_loose_pair(tmp_path: Path) -> None:
    (tmp_path / "D2_exc.txt").write_bytes(BRAT_TXT.encode())
    (tmp_path / "D2_exc.ann").write_bytes(BRAT_ANN.encode())
    doc = read_brat_pair(tmp_path / "D2_exc.txt")
    assert doc.id == "D2_exc" and doc.text[18:25] == "aspirin"


@pytest.mark.parametrize(
    ("ann", "bad_line", "message"),
    [
        ("T1\tCondition 0 5\tHeart\nT2\tDrug 18 x\taspirin\n", 2, "bad offsets"),
        ("T1\tCondition 0 5\tHeart\nT2\tDrug 18 25\n", 2, "T line needs"),
        ("what is this\n", 1, "unknown brat annotation line"),
        ("T1\tCondition 0 5\tHeart\nQ9\twhat\n", 2, "unknown brat annotation line"),
        ("T1\tCondition\tHeart\n", 1, "without type or offsets"),
        ("T1\tCondition 9 5\tHeart\n", 1, "before start"),
        ("T1\tCondition 0 5;7\tHeart\n", 1, "bad offsets"),
        ("T1\tCondition 0 \u00b2\tHeart\n", 1, "bad offsets"),  # isdigit() but not int()
        ("T1\tCondition 0 \u0665\tHeart\n", 1, "bad offsets"),  # Arabic-Indic 5
        ("R1\tAND Arg1:T1 Arg2:T2\nstray text\n", 2, "unknown brat annotation line"),
    ],
)
def test_brat_malformed_lines_name_zip_member_and_line(
    tmp_path: Path, ann: str, bad_line: int, message: str
) -> None:
    zip_path = tmp_path / "chia_bad_fixture.zip"
    _write_zip(zip_path, {"top/D1_inc.txt": BRAT_TXT, "top/D1_inc.ann": ann})
    with pytest.raises(InputError, match=message) as info:
        read_brat_zip(zip_path)
    assert info.value.path == "chia_bad_fixture.zip:top/D1_inc.ann"
    assert info.value.line == bad_line


def test_brat_damaged_zip_member_is_an_input_error(tmp_path: Path) -> None:
    zip_path = tmp_path / "chia_damaged_fixture.zip"
    with zipfile.ZipFile(zip_path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("top/D1_inc.txt", BRAT_TXT * 20)
        archive.writestr("top/D1_inc.ann", BRAT_ANN)
    data = bytearray(zip_path.read_bytes())
    data[40 + len("top/D1_inc.txt")] ^= 0xFF  # a byte of the .txt member's compressed data
    zip_path.write_bytes(bytes(data))
    with pytest.raises(InputError, match="damaged zip member") as info:
        read_brat_zip(zip_path)
    assert info.value.path == "chia_damaged_fixture.zip:top/D1_inc.txt"


def test_brat_parse_ann_keeps_only_text_bound() -> None:
    entities = parse_ann(BRAT_ANN, "x.ann")
    assert [(e.type, e.line) for e in entities] == [
        ("Condition", 1),
        ("Drug", 2),
        ("Drug", 3),
        ("Condition", 5),
        ("Negation", 7),
    ]


# --- NCER's CHIA rule on hand-made text ---------------------------------------------------


def test_ncer_text_doubles_newlines_and_maps_back() -> None:
    raw = "ab\r\ncd\r\n1\r\nx"
    prepared = ncer_text(raw)
    # CRLF -> LF; the LF between "b" and "c" doubles, the ones next to "1" do not.
    assert prepared.text == "ab\n\ncd\n1\nx"
    assert prepared.to_raw(4, 6) == (4, 6)  # "cd"
    assert prepared.to_raw(2, 4) == (2, 4)  # both doubled LFs -> the one raw CRLF
    assert prepared.to_raw(7, 8) == (8, 9)  # "1"
    assert prepared.to_raw(9, 10) == (11, 12)  # "x"
    # A lone CR is a line end too (universal newlines); here it sits between letters.
    lone = ncer_text("a\rb")
    assert lone.text == "a\n\nb"
    assert lone.to_raw(3, 4) == (2, 3)
    assert lone.to_raw(1, 3) == (1, 2)


def test_ncer_surviving_spans_hand_made() -> None:
    raw = "Asthma 1\r\nAsthma or copd 2\r\ncopd\r\ndiabetes"
    # raw offsets: "Asthma" 0-6, "Asthma" 10-16, "copd" 20-24, "copd" 28-32, "diabetes" 34-42.
    # NCER text: "Asthma 1\nAsthma or copd 2\ncopd\n\ndiabetes" (CRLF -> LF shifts every
    # later offset back; only the LF between "d" and "d" doubles): "diabetes" at 32-40.
    assert ncer_text(raw).text == "Asthma 1\nAsthma or copd 2\ncopd\n\ndiabetes"
    ents = parse_ann(
        "T1\tCondition 0 6\tAsthma\n"  # same text at the same offsets: kept in place
        "T2\tCondition 10 16\tAsthma\n"  # NCER text there is "sthma ": 2 occurrences, dropped
        "T3\tCondition 20 24\tcopd\n"  # NCER text there is "opd ": 2 occurrences, dropped
        "T4\tCondition 34 42\tdiabetes\n"  # NCER text there is "abetes": 1 occurrence, moved
        "T5\tDrug 0 6;20 24\tAsthma copd\n"  # discontinuous: joined text absent, dropped
        "T6\tTemporal 0 6\tAsthma\n",  # unmapped type: ignored
        "x.ann",
    )
    type_map = {"Condition": "condition", "Drug": "drug"}
    spans, counts = ncer_surviving_spans(raw, ents, type_map)
    # The moved span (NCER 32-40) maps back to raw 34-42.
    assert spans == [(0, 6, "condition"), (34, 42, "condition")]
    assert raw[34:42] == "diabetes"
    assert counts.as_dict() == {
        "kept_in_place": 1,
        "moved": 1,
        "dropped_no_match": 1,
        "dropped_several_matches": 2,
        "dropped": 3,
        "discontinuous": 1,
        "discontinuous_dropped": 1,
    }


def test_chia_loader_on_fixture_root_derives_split(tmp_path: Path) -> None:
    """Without ncer_split_ids.json the split is recomputed; empty documents are dropped."""
    members = {}
    for i in range(10):
        stem = f"NCT{i:08d}_inc"
        members[f"chia_without_scope/{stem}.txt"] = "Heart failure\r\n"
        ann = "T1\tCondition 0 13\tHeart failure\n" if i % 2 == 0 else "T1\tTemporal 0 5\tHeart\n"
        members[f"chia_without_scope/{stem}.ann"] = ann
    zip_path = tmp_path / CHIA_ZIP
    zip_path.parent.mkdir(parents=True)
    _write_zip(zip_path, members)
    stems = [f"NCT{i:08d}_inc" for i in range(10)]
    expected = ncer_split(stems)
    assert sorted(s for ids in expected.values() for s in ids) == stems
    assert [len(expected[k]) for k in ("train_all", "validation_all", "test_all")] == [8, 1, 1]
    for split, key in (("train", "train_all"), ("dev", "validation_all"), ("test", "test_all")):
        prepared = load_ner_split("chia", split, tmp_path)
        kept = [s for s in expected[key] if int(s[3:11]) % 2 == 0]
        assert [d.id for d in prepared.documents] == kept
        assert prepared.notes["documents_dropped_no_entities"] == len(expected[key]) - len(kept)
        assert prepared.notes["chia_split_source"].startswith("derived")


def test_brat_entity_text_spanning_a_line_break() -> None:
    """CHIA's with-scope files have entity texts that continue on the next .ann line(s);
    a continuation line may start with a letter that is also a brat prefix ("E")."""
    text = "Age : 20.\r\n HBsAg positive\r\nEstablished T2DM\r\n"
    ann = (
        "T1\tScope 0 9;10 44\tAge : 20.\n HBsAg positive\nEstablished T2DM\n"
        "R1\tAND Arg1:T1 Arg2:T1\t\n"
    )
    (entity,) = parse_ann(ann, "x.ann")
    assert entity.text == "Age : 20.\n HBsAg positive\nEstablished T2DM"
    assert entity.fragments == ((0, 9), (10, 44))
    assert text[10:44] == "\n HBsAg positive\r\nEstablished T2DM"


def test_span_outside_document_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "ner/biored/Test.PubTator"
    path.parent.mkdir(parents=True)
    # text = "Title Abstract" (14 characters); the mention on line 4 ends at 20.
    path.write_text(
        "7|t|Title\n7|a|Abstract\n7\t0\t5\tTitle\tChemicalEntity\tX\n7\t6\t20\tA\tChemicalEntity\tX\n"
    )
    with pytest.raises(InputError, match="outside document 7") as info:
        load_ner_split("biored", "test", tmp_path)
    assert info.value.path == str(path) and info.value.line == 4


def test_bioc_passage_offsets_must_fit_title_plus_space(tmp_path: Path) -> None:
    path = tmp_path / "ner/bc5cdr/CDR_TestSet.BioC.xml.gz"
    path.parent.mkdir(parents=True)
    path.write_bytes(
        gzip.compress(BIOC.replace("<offset>15</offset>", "<offset>16</offset>").encode())
    )
    with pytest.raises(InputError, match="document 42: passage offsets") as info:
        load_ner_split("bc5cdr", "test", tmp_path)
    assert info.value.path == str(path)
    assert info.value.line == 1 + next(
        i for i, t in enumerate(BIOC.splitlines()) if "<document>" in t
    )


def test_bioc_annotation_outside_text_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "ner/bc5cdr/CDR_TestSet.BioC.xml.gz"
    path.parent.mkdir(parents=True)
    # annotation 3 (aspirin, 47..54) moved past the 55-character text
    bad = BIOC.replace("offset='47' length='7'", "offset='50' length='7'", 1)
    path.write_bytes(gzip.compress(bad.encode()))
    with pytest.raises(InputError, match="document 42 annotation 3: span 50-57 outside") as info:
        load_ner_split("bc5cdr", "test", tmp_path)
    assert info.value.path == str(path)
    assert info.value.line == 1 + next(
        i for i, t in enumerate(bad.splitlines()) if "annotation id='3'" in t
    )


def test_pubtator_and_bioc_agree_on_real_files(data_root: Path) -> None:
    """docs/data-sources.md: same PMIDs and texts in both formats, every PubTator mention is a BioC
    annotation (BC5CDR adds composite components); BioRED's two formats carry the same mentions."""
    for pubtator, bioc, n_mentions in (
        ("ner/bc5cdr/CDR_TestSet.PubTator.txt", "ner/bc5cdr/CDR_TestSet.BioC.xml.gz", 9809),
        ("ner/biored/Test.PubTator", "ner/biored/Test.BioC.XML.gz", 3535),
    ):
        p_docs = read_pubtator(data_root / pubtator)
        b_docs = read_bioc(data_root / bioc)
        assert [d.pmid for d in p_docs] == [d.id for d in b_docs]
        assert sum(len(d.mentions) for d in p_docs) == n_mentions
        for p_doc, b_doc in zip(p_docs, b_docs, strict=True):
            assert p_doc.text == " ".join(p.text for p in b_doc.passages)
            b_spans = Counter(
                (a.locations[0][0], a.locations[0][0] + a.locations[0][1], a.type)
                for p in b_doc.passages
                for a in p.annotations
                if len(a.locations) == 1
            )
            p_spans = Counter((m.start, m.end, m.type) for m in p_doc.mentions)
            assert not p_spans - b_spans
            for m in p_doc.mentions:
                assert p_doc.text[m.start : m.end] == m.text


def test_ncbi_source_type_counts(data_root: Path) -> None:
    """The raw mention counts per NCBI type (docs/data-sources.md), all mapped to condition."""
    notes = load_ner_split("ncbi", "test", data_root).notes
    assert notes["source_types"] == {
        "SpecificDisease": 555,
        "Modifier": 264,
        "DiseaseClass": 121,
        "CompositeMention": 20,
    }
    train = load_ner_split("ncbi", "train", data_root).notes
    assert train["spans"] == 5145 and train["documents"] == 593
    assert train["duplicate_document_ids"] == ["8528200"]


def test_ncer_text_maps_empty_spans_to_raw_coordinates() -> None:
    # raw "ab\r\n1" (5 characters) -> NCER "ab\n1" (4): the CRLF is one character and is not
    # doubled ("1" is not in [a-zA-Z,.]). NCER position 3 is "1", raw position 4.
    prepared = ncer_text("ab\r\n1")
    assert prepared.text == "ab\n1"
    assert prepared.to_raw(3, 3) == (4, 4)
    assert prepared.to_raw(4, 4) == (5, 5)  # the end of NCER's text is the end of the raw text
    assert prepared.to_raw(0, 0) == (0, 0)
    assert ncer_text("").to_raw(0, 0) == (0, 0)
    assert prepared.to_raw(7, 9) == (5, 5)  # past the end: clamped, not an IndexError


def test_empty_annotation_text_past_the_end_does_not_crash() -> None:
    # NCER keeps an entity when its slice equals the annotation text; past the end of the text
    # both are "" (a malformed .ann): the span survives as an empty span at the raw end.
    (ent,) = parse_ann("T1\tCondition 20 25\t\n", "x.ann")
    spans, counts = ncer_surviving_spans("ab\r\n1", [ent], {"Condition": "condition"})
    assert spans == [(5, 5, "condition")] and counts.kept_in_place == 1


@pytest.mark.parametrize("content", [b"\xff\xfe not UTF-8", b"[1, 2]", b'{"test_all": [1]}'])
def test_bad_chia_split_id_file_is_an_input_error(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / CHIA_SPLIT_IDS
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    with pytest.raises(InputError) as info:
        chia_split_ids(tmp_path, "test")
    assert info.value.path == str(path)
