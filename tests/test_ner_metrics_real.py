"""NER metrics on the REAL test sets against independent oracles, with perturbed predictions.

Predictions start from the gold and get seeded damage: shifted boundaries, wrong types, types
outside the dataset, dropped spans, spurious spans, duplicates and reordering. The token metric
must equal sklearn's classification_report over labels from a naive per-character reference,
and both span metrics nervaluate 0.1.8, to 1e-9, per type too.
"""

from __future__ import annotations

import random
from functools import cache
from pathlib import Path

import pytest
from test_ner_metrics import assert_span_matches_nervaluate, sklearn_macro

from clineval.benchmarks.ner.corpora import load_ner_split
from clineval.benchmarks.ner.records import PreparedSplit, Span
from clineval.benchmarks.ner.span_f1 import span_f1
from clineval.benchmarks.ner.token_f1 import token_macro_f1

DATASETS = ("ncbi", "bc5cdr", "biored", "chia")
TOL = 1e-9
pytestmark = pytest.mark.slow


@cache
def _split(dataset: str, root: str) -> PreparedSplit:
    return load_ner_split(dataset, "test", root)


def perturb(text: str, gold: list[Span], types: tuple[str, ...], rng: random.Random) -> list[Span]:
    """A plausible, imperfect prediction of one document."""
    n = len(text)
    out: list[Span] = []
    for span in gold:
        r = rng.random()
        if r < 0.15:
            continue  # dropped
        start, end, kind = span.start, span.end, span.type
        if r < 0.45:  # shifted boundaries, possibly touching or crossing neighbours
            start = min(max(0, start + rng.randint(-4, 4)), n)
            end = min(max(start, end + rng.randint(-4, 4)), n)
        if rng.random() < 0.15:
            kind = rng.choice([*types, "not-a-type"])
        out.append(Span(start, end, kind))
        if rng.random() < 0.05:
            out.append(out[-1])  # duplicate
    for _ in range(rng.randint(0, 3)):  # spurious
        start = rng.randrange(n) if n else 0
        out.append(Span(start, min(n, start + rng.randint(1, 25)), rng.choice(types)))
    if rng.random() < 0.3:
        rng.shuffle(out)  # order matters to both references; keep it whatever it is
    return out


def _check(split: PreparedSplit, pred: list[list[Span]]) -> None:
    texts = [d.text for d in split.documents]
    gold = [d.entities for d in split.documents]
    ours = token_macro_f1(texts, gold, pred, split.types)
    report = sklearn_macro(texts, gold, pred, split.types)
    assert ours.macro_f1 == pytest.approx(report["macro avg"]["f1-score"], abs=TOL)
    for t in split.types:
        got = ours.per_type[t]
        assert got.precision == pytest.approx(report[t]["precision"], abs=TOL)
        assert got.recall == pytest.approx(report[t]["recall"], abs=TOL)
        assert got.f1 == pytest.approx(report[t]["f1-score"], abs=TOL)
        assert got.support == report[t]["support"]
    assert_span_matches_nervaluate(gold, pred, split.types)


@pytest.mark.parametrize("dataset", DATASETS)
def test_gold_against_itself_scores_one(dataset: str, data_root: Path) -> None:
    split = _split(dataset, str(data_root))
    texts = [d.text for d in split.documents]
    gold = [d.entities for d in split.documents]
    tokens = token_macro_f1(texts, gold, gold, split.types)
    spans = span_f1(gold, gold, split.types)
    assert tokens.macro_f1 == 1.0 and all(s.f1 == 1.0 for s in tokens.per_type.values())
    assert spans.partial.f1 == 1.0 and spans.exact.f1 == 1.0
    assert all(c.f1 == 1.0 for c in spans.exact.per_type.values())
    _check(split, gold)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("dataset", DATASETS)
def test_perturbed_predictions_agree_with_oracles(dataset: str, seed: int, data_root: Path) -> None:
    split = _split(dataset, str(data_root))
    rng = random.Random(f"{dataset}-{seed}")
    pred = [perturb(d.text, d.entities, split.types, rng) for d in split.documents]
    _check(split, pred)
    # the damage is real: every metric drops below 1
    texts = [d.text for d in split.documents]
    gold = [d.entities for d in split.documents]
    assert token_macro_f1(texts, gold, pred, split.types).macro_f1 < 1.0
    assert span_f1(gold, pred, split.types).exact.f1 < 1.0
