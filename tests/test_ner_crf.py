"""The CRF baseline: features, training on fixture documents, model bytes, parallel training."""

from __future__ import annotations

import io
import random

import pytest
from rich.console import Console

from clineval.benchmarks.ner.bio import word_offsets
from clineval.benchmarks.ner.crf import (
    FEATURES,
    FEATURES_CRFSUITE,
    LBFGS,
    CrfConfig,
    document_features,
    open_tagger,
    train_crf,
)
from clineval.benchmarks.ner.crf_jobs import READING, CrfJob, run_job, train_many
from clineval.benchmarks.ner.records import NerDocument, Span


def test_features_of_a_hand_example() -> None:
    text = "BRCA1-linked breast cancer (x)"
    feats = document_features(text, word_offsets(text))
    first, second, paren = feats[0], feats[1], feats[3]
    assert first["w"] == "brca1-linked"
    # full shape "XXXXd-xxxxxx" is longer than 8 characters: the collapsed one stands in
    assert first["sh"] == first["ss"] == "Xd-x"
    assert first["p3"] == "brc" and first["s3"] == "ked"
    assert first["hlast"] == "linked"
    assert "upper" not in first  # "linked" is lower case
    assert first["cap"] == 1.0 and first["digit"] == 1.0 and first["hyphen"] == 1.0
    assert document_features("DNA", [(0, 3)])[0]["upper"] == 1.0
    assert first["-1w"] == "<pad>" and first["1w"] == "breast" and first["2w"] == "cancer"
    assert "bg-" not in first and first["bg+"] == "brca1-linked|breast"
    assert second["sh"] == "xxxxxx" and "upper" not in second and "cap" not in second
    assert second["-1w"] == "brca1-linked" and second["bg-"] == "brca1-linked|breast"
    assert paren["w"] == "(" and paren["gap"] == "1"
    assert feats[4]["gap"] == "0"  # "x" follows "(" directly
    assert feats[-1]["1w"] == "<pad>"


def test_artifact_name_changes_with_every_setting() -> None:
    base = CrfConfig()
    names = {
        base.artifact_name("ncbi", ("train",)),
        base.artifact_name("bc5cdr", ("train",)),
        base.artifact_name("ncbi", ("train", "dev")),
        CrfConfig(c1=0.5).artifact_name("ncbi", ("train",)),
        CrfConfig(c2=0.5).artifact_name("ncbi", ("train",)),
        CrfConfig(max_iterations=7).artifact_name("ncbi", ("train",)),
        CrfConfig(feature_version="other").artifact_name("ncbi", ("train",)),
    }
    assert len(names) == 7
    assert base.artifact_name("ncbi", ("train",)) == CrfConfig().artifact_name("ncbi", ("train",))


_DRUGS = ["aspirin", "ibuprofen", "warfarin", "heparin"]
_CONDITIONS = ["asthma", "gout", "migraine", "anemia"]
_FILLER = ["the", "patient", "was", "given", "for", "with", "and", "after", "severe", "a"]


def _fixture_documents(n: int, seed: int) -> list[NerDocument]:
    """Synthetic fixture sentences: '<filler> <drug> <filler> <condition> ...'."""
    rng = random.Random(seed)
    docs = []
    for k in range(n):
        parts: list[str] = []
        spans: list[Span] = []
        pos = 0
        for _ in range(6):
            for word, kind in (
                (rng.choice(_FILLER), None),
                (rng.choice(_DRUGS), "drug"),
                (rng.choice(_FILLER), None),
                (rng.choice(_CONDITIONS), "condition"),
            ):
                if kind is not None:
                    spans.append(Span(pos, pos + len(word), kind))
                parts.append(word)
                pos += len(word) + 1
        docs.append(NerDocument(f"fixture-{seed}-{k}", " ".join(parts), spans))
    return docs


def test_training_on_fixture_documents_learns_the_entities() -> None:
    train = _fixture_documents(30, seed=1)
    reports: list[tuple[str, int, int | None]] = []
    model = train_crf(train, CrfConfig(max_iterations=30), lambda *r: reports.append(r))
    parts = [part for part, _, _ in reports]
    # every part of the training is named, in order: features, crfsuite's features, L-BFGS
    assert list(dict.fromkeys(parts)) == [FEATURES, FEATURES_CRFSUITE, LBFGS]
    assert (FEATURES, 30, 30) in reports and (FEATURES_CRFSUITE, 100, 100) in reports
    iterations = [done for part, done, _ in reports if part == LBFGS]
    assert iterations[0] == 0 and 1 <= iterations[-1] <= 30  # one report per iteration
    assert iterations == list(range(len(iterations)))
    assert model[:4] == b"lCRF"  # a crfsuite model file, not a pickle
    test = _fixture_documents(5, seed=2)
    with open_tagger(model) as tagger:
        assert set(tagger.labels) == {"O", "B-drug", "B-condition"}
        for doc in test:
            assert tagger.predict(doc.text) == doc.entities
        assert tagger.predict("") == []
    # the same data and settings give the same model
    assert train_crf(train, CrfConfig(max_iterations=30)) == model


@pytest.mark.slow
def test_parallel_training_equals_in_process_training(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    # Two tiny jobs through the spawn pool vs in-process: identical model bytes.
    pytest.importorskip("multiprocessing")
    from clineval.datapaths import resolve_data_root

    root = resolve_data_root(None)
    if root is None or not (root / "ner").is_dir():
        pytest.skip("real data root not available")
    config = CrfConfig(max_iterations=3)
    jobs = [
        CrfJob("ncbi", str(root), ("dev",), config),
        CrfJob("biored", str(root), ("dev",), config),
    ]
    events: list[tuple[str, str, int, int | None]] = []
    results = {r.job.dataset: r for r in train_many(jobs, 2, events.append)}
    assert set(results) == {"ncbi", "biored"}
    # every worker iteration reached the parent's progress display
    assert sum(part == LBFGS and done > 0 for _, part, done, _ in events) == 6
    assert {(d, p) for d, p, done, total in events if done == total} >= {
        (d, p) for d in ("ncbi", "biored") for p in (READING, FEATURES, FEATURES_CRFSUITE)
    }
    for job in jobs:
        alone = run_job(job)
        assert alone.model == results[job.dataset].model
        assert alone.documents == results[job.dataset].documents == 100
        assert alone.meta()["config"]["max_iterations"] == 3


def test_the_crf_display_names_each_part(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A training once sat at "0/240" for a minute with nothing saying what it did: each
    corpus' row names its part, on a terminal (bars) and in a log (a line per part)."""
    from clineval import progress
    from clineval.benchmarks.ner.task import _CrfDisplay

    monkeypatch.setattr(progress, "_quiet", False)  # an in-process `--quiet` run may precede
    events = [
        ("ncbi", READING, 0, 1),
        ("ncbi", READING, 1, 1),
        ("ncbi", FEATURES, 0, 593),
        ("ncbi", FEATURES, 593, 593),
        ("ncbi", FEATURES_CRFSUITE, 100, 100),
        *[("ncbi", LBFGS, i, 60) for i in range(61)],
    ]
    screen = io.StringIO()
    terminal = Console(file=screen, force_terminal=True, width=120)
    with monkeypatch.context() as patched:
        patched.setattr(progress, "console", terminal)
        with _CrfDisplay() as display:
            for event in events:
                display.on_event(event)
            display.finished("ncbi")
    assert "ner:ncbi CRF training (L-BFGS)" in screen.getvalue()
    assert "60/60" in screen.getvalue()

    with _CrfDisplay() as display:  # stderr captured: a log's lines
        for event in events[:4]:
            display.on_event(event)
    lines = [line[9:] for line in capsys.readouterr().err.splitlines()]
    assert lines[0] == "ner:ncbi CRF reading the training split: started (1 splits)"
    assert lines[2] == "ner:ncbi CRF feature generation: started (593 documents)"
    assert lines[-1].startswith("ner:ncbi CRF feature generation: stopped at 593/593 documents")
