"""`hf:PATH` on TCM-SD with a tiny randomly initialised BERT made here (no download)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clineval.benchmarks.tcm_sd.dataset import TcmRecord, read_records, read_vocab
from clineval.benchmarks.tcm_sd.synthetic import write_synthetic
from clineval.cli import main
from clineval.errors import InputError

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def fixture_root(data_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not (data_root / "tcm-sd" / "zy-bert" / "syndrome_vocab.txt").is_file():
        pytest.skip("TCM-SD label files not available")
    out = tmp_path_factory.mktemp("tcm-hf-synthetic")
    write_synthetic(out, seed=2, data_dir=data_root, scale=0.06)
    return out


def _tiny_model(path: Path, labels: list[str], texts: list[str], window: int = 128) -> Path:
    """A 1-layer BERT over a character vocabulary of the fixture's texts."""
    path.mkdir(parents=True, exist_ok=True)
    chars = sorted({c for t in texts for c in t})
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *chars]
    (path / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    # `vocab=`, not `vocab_file=`: transformers 5 ignores the latter here and builds a
    # tokenizer that maps every character to [UNK].
    tokenizer = transformers.BertTokenizerFast(
        vocab=str(path / "vocab.txt"), tokenize_chinese_chars=True
    )
    tokenizer.save_pretrained(path)
    config = transformers.BertConfig(
        vocab_size=len(vocab),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=window,
        num_labels=len(labels),
        id2label=dict(enumerate(labels)),
        label2id={label: i for i, label in enumerate(labels)},
    )
    torch.manual_seed(0)
    transformers.BertForSequenceClassification(config).save_pretrained(path)
    return path


@pytest.mark.slow
def test_hf_checkpoint_predicts_through_id2label(fixture_root: Path, tmp_path: Path) -> None:
    from clineval.benchmarks.tcm_sd.hf_classifier import HFSyndromeClassifier

    labels = read_vocab(fixture_root / "tcm-sd" / "syndrome_vocab.txt")
    test = read_records(fixture_root / "tcm-sd" / "test.synthetic.json", labels)[:12]
    # id2label in REVERSED order: predictions must follow the names, not the indices
    reversed_labels = labels[::-1]
    texts = [r.chief_complaint + r.description for r in test]
    path = _tiny_model(tmp_path / "model", reversed_labels, texts)
    model = HFSyndromeClassifier(path, labels, max_length=64)
    preds = model.predict(test)
    # oracle: run the checkpoint directly on the sentence pair and map through its config
    tok = transformers.AutoTokenizer.from_pretrained(str(path))
    net = transformers.AutoModelForSequenceClassification.from_pretrained(str(path)).eval()
    for record, pred in zip(test, preds, strict=True):
        enc = tok(
            record.chief_complaint,
            record.description,
            truncation="longest_first",
            max_length=64,
            return_tensors="pt",
        )
        ids = enc["input_ids"][0].tolist()
        assert ids[0] == tok.cls_token_id and ids.count(tok.sep_token_id) == 2  # a pair
        with torch.inference_mode():
            best = int(net(**enc).logits.argmax(-1))
        assert pred == net.config.id2label[best] == reversed_labels[best]


def test_id2label_mismatch_is_a_clear_error(fixture_root: Path, tmp_path: Path) -> None:
    from clineval.benchmarks.tcm_sd.hf_classifier import HFSyndromeClassifier

    labels = read_vocab(fixture_root / "tcm-sd" / "syndrome_vocab.txt")
    wrong = [*labels[:-1], "感冒证"]
    path = _tiny_model(tmp_path / "wrong", wrong, ["头晕"])
    with pytest.raises(InputError, match=r"id2label does not match.*'感冒证'"):
        HFSyndromeClassifier(path, labels)
    short = _tiny_model(tmp_path / "short", labels[:10], ["头晕"])
    with pytest.raises(InputError, match="10 classes instead of 148"):
        HFSyndromeClassifier(short, labels)


@pytest.mark.slow
def test_hf_run_end_to_end(fixture_root: Path, tmp_path: Path) -> None:
    labels = read_vocab(fixture_root / "tcm-sd" / "syndrome_vocab.txt")
    rows = (fixture_root / "tcm-sd" / "test.synthetic.json").read_text().splitlines()
    texts = [json.loads(line)["description"] for line in rows]
    path = _tiny_model(tmp_path / "model", labels, texts)
    out = tmp_path / "run"
    argv = ["run", "tcm-sd", "--model", f"hf:{path}", "--output-dir", str(out)]
    argv += ["--data-dir", str(fixture_root), "--limit", "40", "--option", "tcm.max_length=64"]
    assert main(argv) == 0
    res = json.loads((out / "results.json").read_text())["tcm-sd"]
    assert res["n"] == 40 and res["invalid_rate"] == 0.0
    notes = json.loads((out / "manifest.json").read_text())["tasks"]["tcm-sd"]
    assert notes["hf_model"]["num_labels"] == 148
    # a missing directory is exit 2
    bad = ["run", "tcm-sd", "--model", f"hf:{tmp_path / 'nope'}", "--output-dir"]
    assert main([*bad, str(tmp_path / "r2"), "--data-dir", str(fixture_root)]) == 2


def test_id2label_errors_name_the_config_file(tmp_path: Path) -> None:
    from clineval.benchmarks.tcm_sd.hf_classifier import check_id2label

    config = str(tmp_path / "config.json").replace(".", r"\.")
    with pytest.raises(InputError, match=f"^{config}: config id2label keys are not class"):
        check_id2label({"LABEL_A": "甲证"}, ["甲证"], tmp_path)
    with pytest.raises(InputError, match=f"^{config}: config id2label is not indexed 0"):
        check_id2label({1: "甲证"}, ["甲证"], tmp_path)
    assert check_id2label({"1": "乙证", "0": "甲证"}, ["乙证", "甲证"], tmp_path) == [
        "甲证",
        "乙证",
    ]


def _record(chief_complaint: str, description: str, detection: str = "") -> TcmRecord:
    return TcmRecord("u", "l", "n", "s", chief_complaint, description, detection, None)


def _hand_pair(vocab: list[str], first: str, second: str, max_length: int) -> list[int]:
    """[CLS] first [SEP] second [SEP], one id per character, cut as transformers 2.3.0's
    truncate_sequences('longest_first') does (the authors' library): one token at a time from
    the end of the longer part, from the second part when both are equal."""
    a, b = [vocab.index(c) for c in first], [vocab.index(c) for c in second]
    while len(a) + len(b) + 3 > max_length:
        if len(a) > len(b):
            a.pop()
        else:
            b.pop()
    cls, sep = vocab.index("[CLS]"), vocab.index("[SEP]")
    return [cls, *a, sep, *b, sep]


def test_encoding_is_the_authors_pair_hand_built(tmp_path: Path) -> None:
    from clineval.benchmarks.tcm_sd.hf_classifier import AUTHORS_MAX_LENGTH, HFSyndromeClassifier

    labels = [f"证{i:03d}" for i in range(148)]
    chief, long_text = "头晕三天", "患者自述头痛目眩心烦易怒口苦咽干夜寐不安舌红苔黄脉弦数"
    path = _tiny_model(tmp_path / "m", labels, [chief, long_text, "四诊"], window=512)
    vocab = (path / "vocab.txt").read_text(encoding="utf-8").splitlines()
    model = HFSyndromeClassifier(path, labels, max_length=16)
    records = [
        _record(chief, long_text, detection="四诊四诊"),  # detection never reaches the model
        # equal parts: both cut, the second first, so 7 + 6 survive (transformers 5's own
        # longest_first keeps 6 + 7: the reason clineval cuts by hand)
        _record(long_text[:10], long_text[10:20]),
        _record(chief, "口苦"),  # shorter than the window: not cut
    ]
    ids = model.encode(records)["input_ids"].tolist()
    mask = model.encode(records)["attention_mask"].tolist()
    for row, m, record in zip(ids, mask, records, strict=True):
        real = [i for i, keep in zip(row, m, strict=True) if keep]
        assert real == _hand_pair(vocab, record.chief_complaint, record.description, 16)
    assert [sum(m) for m in mask] == [16, 16, 9]
    second = ids[1][: sum(mask[1])]
    assert second.index(vocab.index("[SEP]")) == 1 + 7  # [CLS] + 7 of the first part
    # the authors' length and clineval's default are recorded; the window caps a request
    assert model.describe()["authors_max_length"] == AUTHORS_MAX_LENGTH == 128
    assert HFSyndromeClassifier(path, labels).describe()["max_length"] == 512
    small = _tiny_model(tmp_path / "small", labels, [chief], window=128)
    capped = HFSyndromeClassifier(small, labels).describe()
    assert (capped["max_length"], capped["max_length_requested"]) == (128, 512)


@pytest.mark.slow
def test_authors_max_length_is_one_option_away(fixture_root: Path, tmp_path: Path) -> None:
    labels = read_vocab(fixture_root / "tcm-sd" / "syndrome_vocab.txt")
    rows = (fixture_root / "tcm-sd" / "test.synthetic.json").read_text().splitlines()
    texts = [json.loads(line)["description"] + json.loads(line)["chief_complaint"] for line in rows]
    path = _tiny_model(tmp_path / "model", labels, texts, window=512)
    used = {}
    for name, extra in (("default", []), ("authors", ["--option", "tcm.max_length=128"])):
        out = tmp_path / name
        argv = ["run", "tcm-sd", "--model", f"hf:{path}", "--output-dir", str(out)]
        assert main([*argv, "--data-dir", str(fixture_root), "--limit", "5", *extra]) == 0
        notes = json.loads((out / "manifest.json").read_text())["tasks"]["tcm-sd"]
        used[name] = notes["hf_model"]["max_length"]
    assert used == {"default": 512, "authors": 128}
