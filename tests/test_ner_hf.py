"""hf:PATH on a tiny randomly initialised BERT + WordPiece tokenizer built in the test."""

from __future__ import annotations

import itertools
import json
import sqlite3
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from sklearn.metrics import classification_report  # noqa: E402
from test_ner_metrics import naive_token_labels  # noqa: E402

from clineval.benchmarks.ner.bio import word_offsets  # noqa: E402
from clineval.benchmarks.ner.hf_tagger import HfTagger, LabelMapping  # noqa: E402
from clineval.benchmarks.ner.records import Span  # noqa: E402
from clineval.cli import main  # noqa: E402
from clineval.errors import InputError  # noqa: E402
from clineval.store import RunStore  # noqa: E402

# Tiny WordPiece vocabulary: whole words, a few continuation pieces, single characters, so
# that most words split into several subwords and every character is covered.
_WORDS = ["the", "patient", "has", "breast", "cancer", "and", "colon", "disease", "of"]
_PIECES = ["##s", "##ing", "##er", "##ed", "##al", "##ic"]
_CHARS = list("abcdefghijklmnopqrstuvwxyz0123456789.,;:()-/%'")


def _build_checkpoint(
    path: Path, id2label: dict[int, str], max_positions: int = 16, favour: int | None = None
) -> Path:
    """A random BertForTokenClassification; `favour` makes one label win everywhere."""
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *_WORDS, *_PIECES, *_CHARS]
    vocab += ["##" + c for c in _CHARS]
    path.mkdir(parents=True, exist_ok=True)
    (path / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    tokenizer = transformers.BertTokenizerFast(vocab_file=str(path / "vocab.txt"))
    tokenizer.model_max_length = max_positions
    tokenizer.save_pretrained(path)
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=len(vocab),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=max_positions,
        id2label=id2label,
        label2id={v: k for k, v in id2label.items()},
    )
    model = transformers.BertForTokenClassification(config)
    if favour is not None:
        with torch.no_grad():
            model.classifier.weight.zero_()
            model.classifier.bias.zero_()
            model.classifier.bias[favour] = 10.0
    model.save_pretrained(path)
    return path


BIO = {0: "O", 1: "B-condition", 2: "I-condition"}
TEXT = (
    "The patients' breast cancers and colonic diseases (BRCA1-related) were studied; "
    "42% of 3,000 patients had hereditary non-polyposis colorectal cancer."
)


def test_label_mapping_prefixes_aliases_and_unmapped() -> None:
    id2label = {
        0: "O",
        1: "B-Disease",
        2: "I-Disease",
        3: "S-Chemical",
        4: "E-Chemical",
        5: "B-Cell",
    }
    mapping = LabelMapping.build(id2label, ("drug", "condition"))
    assert mapping.tags == {
        0: "O",
        1: "B-condition",
        2: "I-condition",
        3: "B-drug",
        4: "I-drug",
        5: "O",
    }
    assert mapping.unmapped == ["B-Cell"]
    with pytest.raises(InputError, match="maps to"):
        LabelMapping.build({0: "O", 1: "LABEL_1"}, ("condition",))
    user = LabelMapping.build({0: "O", 1: "LABEL_1"}, ("condition",), {"label_1": "condition"})
    assert user.tags[1] == "B-condition"


@pytest.mark.slow
def test_every_word_gets_exactly_its_first_subword_label(tmp_path: Path) -> None:
    # B-condition wins at every position: each regex word must come back as its own span,
    # across several windows (16 positions, 14 subwords a window, the text needs many more).
    path = _build_checkpoint(tmp_path / "ckpt", BIO, favour=1)
    tagger = HfTagger.load(str(path), ("condition",))
    assert tagger.budget == 14
    result = tagger.predict(TEXT)
    words = word_offsets(TEXT)
    assert [(s.start, s.end) for s in result.spans] == words
    assert len(result.model_tokens) > 14 * 2  # really several windows
    # model tokens are subword pieces: they tile each word exactly
    for start, end in words:
        inside = [t for t in result.model_tokens if start <= t[0] < end]
        assert inside[0][0] == start and inside[-1][1] == end
        assert all(a[1] == b[0] for a, b in itertools.pairwise(inside))


@pytest.mark.slow
def test_inside_label_everywhere_gives_one_span_and_o_gives_none(tmp_path: Path) -> None:
    inside = HfTagger.load(str(_build_checkpoint(tmp_path / "i", BIO, favour=2)), ("condition",))
    words = word_offsets(TEXT)
    assert inside.predict(TEXT).spans == [Span(words[0][0], words[-1][1], "condition")]
    outside = HfTagger.load(str(_build_checkpoint(tmp_path / "o", BIO, favour=0)), ("condition",))
    assert outside.predict(TEXT).spans == []


@pytest.mark.slow
def test_random_model_predictions_are_valid_and_deterministic(tmp_path: Path) -> None:
    tagger = HfTagger.load(str(_build_checkpoint(tmp_path / "r", BIO)), ("condition",))
    first = tagger.predict(TEXT)
    assert first.spans == tagger.predict(TEXT).spans
    starts = {s for s, _ in word_offsets(TEXT)}
    ends = {e for _, e in word_offsets(TEXT)}
    for span in first.spans:
        assert span.start in starts and span.end in ends and span.type == "condition"


def test_missing_checkpoint_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="checkpoint"):
        HfTagger.load(str(tmp_path / "nothing"), ("condition",))


@pytest.mark.slow
def test_cli_hf_run_with_model_tokenizer_metric(
    tmp_path: Path, data_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # I-condition wins everywhere: each document is one predicted span from its first to its
    # last word, so every token is predicted "condition" and the expected scores follow from
    # the gold labels alone (naive reference + sklearn, over either tokenization).
    path = _build_checkpoint(tmp_path / "ckpt", BIO, favour=2)
    out = tmp_path / "run"
    argv = ["run", "ner:ncbi", "--model", f"hf:{path}", "--output-dir", str(out), "--limit", "2"]
    argv += ["--data-dir", str(data_root)]
    assert main([*argv, "--option", "ner.tokenizer=model"]) == 0
    results = json.loads((out / "results.json").read_text())["ner:ncbi"]
    rows = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    with RunStore.in_dir(out) as store:
        records = store.records("ner:ncbi", "prediction")
    gold_regex: list[str] = []
    gold_model: list[str] = []
    for row in rows:
        text = row["text"]
        gold = [Span(s, e, t) for s, e, t in row["gold"]]
        words = word_offsets(text)
        assert row["pred"] == [[words[0][0], words[-1][1], "condition"]]
        tokens = [(s, e) for s, e in records[row["id"]]["model_tokens"]]
        # the tiny vocabulary covers every character: subwords partition the non-space text
        assert sorted(i for s, e in tokens for i in range(s, e)) == [
            i for i, c in enumerate(text) if not c.isspace()
        ]
        gold_regex += naive_token_labels(text, gold)
        gold_model += naive_token_labels(text, gold, tokens)
    expected = {}
    for key, labels in (
        ("token_macro_f1", gold_regex),
        ("token_macro_f1_model_tokens", gold_model),
    ):
        predicted = ["condition"] * len(labels)
        report = classification_report(
            labels, predicted, labels=["condition"], zero_division=0, output_dict=True
        )
        expected[key] = report["macro avg"]["f1-score"]
    # the two tokenizations give different scores, so each result is told apart
    assert expected["token_macro_f1"] != pytest.approx(expected["token_macro_f1_model_tokens"])
    for key, value in expected.items():
        assert results[key] == pytest.approx(value, abs=1e-9), key
    assert "token_model_tokens" in results["per_type"]["condition"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["tasks"]["ner:ncbi"]["hf_label_map"]["labels"]["B-condition"] == "B-condition"

    # A document without a stored prediction: its model tokens are unknown, and the error
    # says so (not that hf:PATH has no tokenizer).
    with sqlite3.connect(out / "store.sqlite") as conn:
        conn.execute("DELETE FROM records WHERE kind = 'prediction' AND key = ?", (rows[0]["id"],))
    capsys.readouterr()
    # --force: the store now holds fewer outputs than the results came from, which score
    # refuses by itself; asked to go on, the task says what is missing.
    assert main(["score", str(out), "--force"]) == 2
    assert "1 document(s) have no stored prediction" in capsys.readouterr().err
