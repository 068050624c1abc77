"""predictions:FILE reading/validation (the kit's reader with NER's row parser) and the BIO <->
span helpers (hand cases + seqeval)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from seqeval.metrics.sequence_labeling import get_entities

from clineval.benchmarks import InputError, read_predictions as read_keyed
from clineval.benchmarks.ner.bio import bio_to_spans, is_bio_tag, spans_to_bio, word_offsets
from clineval.benchmarks.ner.predictions import TypeNames, row_parser, write_predictions
from clineval.benchmarks.ner.records import NerDocument, Span

TYPES = ("drug", "condition")
DOCS = {
    "101": NerDocument("101", "Aspirin-induced asthma in adults.", [Span(0, 22, "condition")]),
    "102": NerDocument("102", "No cancer (HNPCC) seen.", [Span(3, 9, "condition")]),
}


def read_predictions(
    path: Path, docs: dict[str, NerDocument], types: tuple[str, ...] | TypeNames
) -> dict[str, list[Span]]:
    """The kit's reader with NER's row parser, as the task reads a file."""
    names = types if isinstance(types, TypeNames) else TypeNames(types)
    return read_keyed(path, docs, parse=row_parser(docs, names), noun="document")


def _write(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "preds.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _row(**kw: object) -> str:
    return json.dumps(kw)


def test_word_offsets_follow_the_benchmark_regex() -> None:
    text = "BRCA1-related x_y (n=3)."
    assert [text[s:e] for s, e in word_offsets(text)] == [
        "BRCA1-related",
        "x_y",
        "(",
        "n",
        "=",
        "3",
        ")",
        ".",
    ]


def test_character_spans_are_read_in_file_order(tmp_path: Path) -> None:
    ents = [
        {"start": 16, "end": 22, "type": "condition"},
        {"start": 0, "end": 7, "type": "drug"},
        {"start": 0, "end": 7, "type": "drug"},  # duplicates are kept, as given
    ]
    path = _write(tmp_path, [_row(id="101", entities=ents), "", _row(id=102, entities=[])])
    got = read_predictions(path, DOCS, TYPES)
    assert got == {
        "101": [Span(16, 22, "condition"), Span(0, 7, "drug"), Span(0, 7, "drug")],
        "102": [],
    }


def test_bio_variant_becomes_character_spans(tmp_path: Path) -> None:
    text = DOCS["102"].text  # No cancer ( HNPCC ) seen .
    tokens = [text[s:e] for s, e in word_offsets(text)]
    tags = ["O", "B-condition", "O", "B-condition", "O", "O", "O"]
    path = _write(tmp_path, [_row(id="102", tokens=tokens, tags=tags)])
    assert read_predictions(path, DOCS, TYPES)["102"] == [
        Span(3, 9, "condition"),
        Span(11, 16, "condition"),
    ]


def test_written_file_reads_back(tmp_path: Path) -> None:
    preds = {"101": [Span(0, 7, "drug"), Span(16, 22, "condition")], "102": []}
    write_predictions(tmp_path / "p.jsonl", preds)
    assert read_predictions(tmp_path / "p.jsonl", DOCS, TYPES) == preds


GOOD = _row(id="101", entities=[])
BAD_CASES = [
    # (lines, line number of the error, message fragment)
    ([GOOD, _row(id="102", entities=[]), "{not json"], 3, "invalid JSON"),
    (["[1, 2]"], 1, "expected a JSON object"),
    ([_row(entities=[])], 1, '"id"'),
    ([_row(id="999", entities=[])], 1, "unknown id '999' (not a document)"),
    ([GOOD, GOOD], 2, "id '101' given twice (first on line 1)"),
    ([_row(id="101", entities=[{"start": 5, "end": 5, "type": "drug"}])], 1, "offsets"),
    ([_row(id="101", entities=[{"start": 9, "end": 3, "type": "drug"}])], 1, "offsets"),
    ([_row(id="101", entities=[{"start": -1, "end": 3, "type": "drug"}])], 1, "offsets"),
    ([_row(id="101", entities=[{"start": 0, "end": 999, "type": "drug"}])], 1, "offsets"),
    ([_row(id="101", entities=[{"start": "0", "end": 3, "type": "drug"}])], 1, "integers"),
    ([_row(id="101", entities=[{"start": True, "end": 3, "type": "drug"}])], 1, "integers"),
    ([_row(id="101", entities=[{"start": 0, "end": 3, "type": "Organism"}])], 1, "unknown type"),
    ([_row(id="101", entities=[{"start": 0, "end": 3}])], 1, "unknown type"),
    ([_row(id="101", entities={"start": 0})], 1, "must be a list"),
    ([_row(id="101", entities=["x"])], 1, "not an object"),
    ([_row(id="101")], 1, "either"),
    ([_row(id="101", entities=[], tokens=[], tags=[])], 1, "either"),
    ([GOOD, "", _row(id="102", tokens=["No"], tags=["O"])], 3, "1 tokens given"),
    ([_row(id="102", tokens=["No", "cancers", "(", "HNPCC", ")", "seen", "."], tags=["O"] * 7)],
     1, "token 1 is 'cancers'"),
    ([_row(id="102", tokens=["No"], tags=["O", "O"])], 1, "1 tokens but 2 tags"),
    ([_row(id="102", tokens=["No", "cancer", "(", "HNPCC", ")", "seen", "."],
           tags=["O", "B-Species", "O", "O", "O", "O", "O"])], 1, "tag 1 'B-Species'"),
    ([_row(id="102", tokens=["No", "cancer", "(", "HNPCC", ")", "seen", "."],
           tags=["O", "X-drug", "O", "O", "O", "O", "O"])], 1, "tag 1 'X-drug'"),
]  # fmt: skip


@pytest.mark.parametrize(("lines", "line", "fragment"), BAD_CASES)
def test_bad_lines_name_file_and_line(
    tmp_path: Path, lines: list[str], line: int, fragment: str
) -> None:
    path = _write(tmp_path, lines)
    with pytest.raises(InputError) as info:
        read_predictions(path, DOCS, TYPES)
    assert info.value.path == str(path)
    assert info.value.line == line
    assert fragment in info.value.message
    assert info.value.one_line().startswith(f"{path}:{line}: ")


def test_missing_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not found"):
        read_predictions(tmp_path / "absent.jsonl", DOCS, TYPES)


def test_is_bio_tag() -> None:
    assert is_bio_tag("O", TYPES)
    assert is_bio_tag("I-drug", TYPES)
    assert not is_bio_tag("B-", TYPES)
    assert not is_bio_tag("drug", TYPES)
    assert not is_bio_tag("B-gene", TYPES)


def test_bio_decoding_agrees_with_seqeval_on_random_sequences() -> None:
    rng = random.Random(7)
    labels = ["O", "B-drug", "I-drug", "B-condition", "I-condition"]
    for _ in range(500):
        n = rng.randint(1, 30)
        tags = [rng.choice(labels) for _ in range(n)]
        tokens = [(3 * i, 3 * i + 2) for i in range(n)]  # token i spans [3i, 3i+2)
        ours = [(s.type, s.start // 3, (s.end - 2) // 3) for s in bio_to_spans(tags, tokens)]
        assert ours == [tuple(e) for e in get_entities(tags)], tags


def test_spans_to_bio_hand_cases() -> None:
    text = "left breast cancer and ovarian cancer"
    tokens = word_offsets(text)
    spans = [Span(5, 18, "condition"), Span(23, 37, "condition")]
    tags = spans_to_bio(spans, tokens)
    assert tags == ["O", "B-condition", "I-condition", "O", "B-condition", "I-condition"]
    assert bio_to_spans(tags, tokens) == spans
    # adjacent spans of one type stay two spans
    adjacent = [Span(0, 4, "condition"), Span(5, 11, "condition")]
    assert spans_to_bio(adjacent, tokens)[:3] == ["B-condition", "B-condition", "O"]


def test_bio_round_trip_on_token_aligned_random_spans() -> None:
    rng = random.Random(3)
    text = " ".join(rng.choice(["a", "bb", "c-d", "(", "e_f", "12"]) for _ in range(200))
    tokens = word_offsets(text)
    for _ in range(100):
        spans, i = [], 0
        while i < len(tokens):
            length = rng.randint(1, 4)
            if rng.random() < 0.4:
                j = min(i + length, len(tokens)) - 1
                spans.append(Span(tokens[i][0], tokens[j][1], rng.choice(TYPES)))
            i += length
        assert bio_to_spans(spans_to_bio(spans, tokens), tokens) == spans


def test_corpus_type_names_are_mapped_to_the_datasets_domains(tmp_path: Path) -> None:
    """A BC5CDR tagger writes BC5CDR's own names (Chemical, Disease), in spans or BIO tags:
    mapped to drug / condition as NCER maps the gold, and counted for the manifest. A name of
    a domain the dataset does not score (gene) is dropped and counted; this was refused."""
    path = _write(
        tmp_path,
        [
            _row(id="101", entities=[
                {"start": 0, "end": 7, "type": "Chemical"},
                {"start": 16, "end": 22, "type": "disease"},
                {"start": 24, "end": 26, "type": "GeneOrGeneProduct"},
            ]),
            _row(id="102", tokens=["No", "cancer", "(", "HNPCC", ")", "seen", "."],
                 tags=["O", "B-Disease", "O", "B-Gene", "O", "O", "O"]),
        ],
    )  # fmt: skip
    names = TypeNames(TYPES)
    got = read_predictions(path, DOCS, names)
    assert got["101"] == [Span(0, 7, "drug"), Span(16, 22, "condition")]
    assert got["102"] == [Span(3, 9, "condition")]
    assert names.notes() == {
        "mapped": {"Chemical -> drug": 1, "Disease -> condition": 1, "disease -> condition": 1},
        "dropped_unscored": {"Gene": 1, "GeneOrGeneProduct": 1},
    }


def test_corpus_types_ncer_drops_are_dropped_and_counted(tmp_path: Path) -> None:
    """BioRED's OrganismTaxon / CellLine and CHIA's unscored types (Person, Temporal, ...) are
    what a tagger trained on those corpora writes; NCER drops them from the gold, so a
    predictions file's are dropped and counted too (they were refused). A name no corpus
    knows is still refused."""
    path = _write(
        tmp_path,
        [
            _row(id="101", entities=[
                {"start": 0, "end": 7, "type": "OrganismTaxon"},
                {"start": 8, "end": 15, "type": "CellLine"},
                {"start": 16, "end": 22, "type": "condition"},
                {"start": 24, "end": 26, "type": "Temporal"},
            ]),
            _row(id="102", tokens=["No", "cancer", "(", "HNPCC", ")", "seen", "."],
                 tags=["O", "B-Person", "O", "B-CellLine", "O", "B-Value", "O"]),
        ],
    )  # fmt: skip
    names = TypeNames(TYPES)
    got = read_predictions(path, DOCS, names)
    assert got == {"101": [Span(16, 22, "condition")], "102": []}
    assert names.notes() == {
        "dropped_unscored": {
            "CellLine": 2,
            "OrganismTaxon": 1,
            "Person": 1,
            "Temporal": 1,
            "Value": 1,
        }
    }
    bad = _write(tmp_path, [_row(id="101", entities=[{"start": 0, "end": 3, "type": "Taxon"}])])
    with pytest.raises(InputError, match="unknown type 'Taxon'"):
        read_predictions(bad, DOCS, TYPES)


def test_real_biored_organisms_and_cell_lines_are_dropped(tmp_path: Path, data_root: Path) -> None:
    """The real BioRED test file's own OrganismTaxon and CellLine annotations, written into a
    predictions file beside the scored gold: read, every one dropped and counted, the scored
    spans kept as they are."""
    from clineval.benchmarks.ner.corpora import load_ner_split

    split = load_ner_split("biored", "test", data_root)
    docs = {d.id: d for d in split.documents}
    extra: dict[str, list[dict[str, object]]] = {}
    expected = {"OrganismTaxon": 0, "CellLine": 0}
    pubtator = data_root / "ner" / "biored" / "Test.PubTator"
    for line in pubtator.read_text(encoding="utf-8").splitlines():
        cells = line.split("\t")
        if len(cells) >= 5 and cells[4] in expected and cells[0] in docs:
            extra.setdefault(cells[0], []).append(
                {"start": int(cells[1]), "end": int(cells[2]), "type": cells[4]}
            )
            expected[cells[4]] += 1
    assert expected["OrganismTaxon"] > 100 and expected["CellLine"] > 10
    lines = [
        _row(
            id=d.id,
            entities=[{"start": s.start, "end": s.end, "type": s.type} for s in d.entities]
            + extra.get(d.id, []),
        )
        for d in split.documents
    ]
    names = TypeNames(split.types)
    got = read_predictions(_write(tmp_path, lines), docs, names)
    assert all(got[d.id] == d.entities for d in split.documents)
    assert names.notes() == {"dropped_unscored": expected}
