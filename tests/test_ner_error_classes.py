"""One classification of NER span errors feeds results.json and every part of the report.

SemEval-2013's categories as nervaluate 0.1.8 assigns them (correct, incorrect, partial,
missed, spurious). Oracle: nervaluate 0.1.8 itself, on the REAL test sets with seeded
perturbed predictions: its four schemes' counts, overall and per type, follow from our
outcomes (correct = strict correct; correct + partial = ent_type correct; incorrect = ent_type
incorrect; correct + same-offset incorrect = partial-scheme and exact correct; partial +
overlapping incorrect = partial-scheme partial). The report's count table, gold x predicted
matrix, examples and CSV must show those very counts, and results.json's `span_errors` too.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from test_ner_metrics import nerv
from test_ner_metrics_real import DATASETS, _split, perturb

from clineval.benchmarks.ner.records import NerDocument, Span
from clineval.benchmarks.ner.report import build
from clineval.benchmarks.ner.scoring import score_documents
from clineval.benchmarks.ner.span_f1 import ERROR_KINDS, SpanOutcome, classify_document
from clineval.report.rundata import load_run
from clineval.rundir import write_json, write_jsonl

FIELDS = ("correct", "incorrect", "partial", "missed", "spurious")


def _schemes(outcomes: list[SpanOutcome]) -> dict[str, dict[str, int]]:
    """nervaluate's four schemes' counts, from our outcomes alone."""
    n = {k: sum(o.kind == k for o in outcomes) for k in ERROR_KINDS}
    same = sum(o.kind == "incorrect" and o.same_offsets for o in outcomes)
    overlap = n["incorrect"] - same
    base = {"missed": n["missed"], "spurious": n["spurious"]}
    return {
        "strict": {
            **base,
            "correct": n["correct"],
            "incorrect": n["incorrect"] + n["partial"],
            "partial": 0,
        },
        "ent_type": {
            **base,
            "correct": n["correct"] + n["partial"],
            "incorrect": n["incorrect"],
            "partial": 0,
        },
        "partial": {
            **base,
            "correct": n["correct"] + same,
            "incorrect": 0,
            "partial": n["partial"] + overlap,
        },
        "exact": {
            **base,
            "correct": n["correct"] + same,
            "incorrect": n["partial"] + overlap,
            "partial": 0,
        },
    }


def _predictions(dataset: str, data_root: Path, seed: int) -> tuple[Any, list[list[Span]]]:
    split = _split(dataset, str(data_root))
    rng = random.Random(f"errors-{dataset}-{seed}")
    return split, [perturb(d.text, d.entities, split.types, rng) for d in split.documents]


@pytest.mark.slow
@pytest.mark.parametrize("dataset", DATASETS)
def test_outcomes_give_every_nervaluate_scheme(dataset: str, data_root: Path) -> None:
    split, pred = _predictions(dataset, data_root, 0)
    gold = [d.entities for d in split.documents]
    outcomes = [classify_document(g, p, split.types) for g, p in zip(gold, pred, strict=True)]
    flat = [o for doc in outcomes for o in doc]
    results, per_tag = nerv(gold, pred, split.types)
    ours = _schemes(flat)
    for scheme, counts in ours.items():
        for key in FIELDS:
            assert counts[key] == results[scheme][key], (scheme, key)
    for t in split.types:
        mine = _schemes([o for o in flat if o.type == t])
        for scheme, counts in mine.items():
            for key in FIELDS:
                assert counts[key] == per_tag[t][scheme][key], (t, scheme, key)
    # every kind occurs, so each comparison above is exercised (one type: no wrong type)
    if len(split.types) == 1:
        assert {o.kind for o in flat} == set(ERROR_KINDS) - {"incorrect"}
        return
    assert {o.kind for o in flat} == set(ERROR_KINDS)
    assert any(o.kind == "incorrect" and o.same_offsets for o in flat)
    assert any(o.kind == "incorrect" and not o.same_offsets for o in flat)


def _run(path: Path, task: str, split: Any, pred: list[list[Span]]) -> tuple[Path, dict[str, Any]]:
    metrics, rows = score_documents(split.documents, pred, split.types)
    path.mkdir()
    write_json(path / "results.json", {task: {**metrics, "fixture": True}})
    write_json(path / "manifest.json", {"config": {"model": "predictions:p.jsonl"}, "seed": 0})
    write_jsonl(path / "samples.jsonl", [{"task": task, **r} for r in rows])
    return path, metrics


def _block(section: dict[str, Any], title: str) -> dict[str, Any]:
    return next(b for b in section["blocks"] if b.get("title") == title)


@pytest.mark.slow
@pytest.mark.parametrize("dataset", DATASETS)
def test_report_table_matrix_examples_csv_and_results_agree_with_nervaluate(
    dataset: str, data_root: Path, tmp_path: Path
) -> None:
    split, pred = _predictions(dataset, data_root, 1)
    task = f"ner:{dataset}"
    path, metrics = _run(tmp_path / "fixture-run", task, split, pred)
    gold = [d.entities for d in split.documents]
    results, per_tag = nerv(gold, pred, split.types)
    ent, strict = results["ent_type"], results["strict"]
    # results.json
    errors = metrics["span_errors"]
    assert errors["correct"] == strict["correct"]
    assert errors["correct"] + errors["partial"] == ent["correct"]
    assert errors["incorrect"] == ent["incorrect"]
    assert (errors["missed"], errors["spurious"]) == (ent["missed"], ent["spurious"])
    for t in split.types:
        mine, theirs = metrics["per_type"][t]["errors"], per_tag[t]
        assert mine["correct"] == theirs["strict"]["correct"]
        assert mine["correct"] + mine["partial"] == theirs["ent_type"]["correct"]
        assert mine["incorrect"] == theirs["ent_type"]["incorrect"]
        assert mine["missed"] == theirs["ent_type"]["missed"]
        assert mine["spurious"] == theirs["ent_type"]["spurious"]
    section = build(load_run(path), task)
    # the count table: the same numbers, per type and in all
    table = _block(section, "Span outcomes by kind and entity type")
    assert table["header"][1:6] == list(FIELDS)
    by_type = {row[0]: [int(c.replace(",", "")) for c in row[1:]] for row in table["rows"]}
    for t in split.types:
        assert by_type[t][:5] == [metrics["per_type"][t]["errors"][k] for k in FIELDS]
    assert by_type["all types"][:5] == [errors[k] for k in FIELDS]
    # the gold x predicted matrix: diagonal = ent_type correct, the rest of a gold row =
    # ent_type incorrect, the (none) column = missed, the (none) row = spurious, per type
    if len(split.types) > 1:
        matrix = _block(section, "Gold x predicted type")
        labels = [h.removeprefix("predicted ") for h in matrix["header"][1:]]
        cells = {
            (row[0].removeprefix("gold "), labels[k]): int(c.replace(",", ""))
            for row in matrix["rows"]
            for k, c in enumerate(row[1:])
        }
        for t in split.types:
            ent_t = per_tag[t]["ent_type"]
            assert cells[(t, t)] == ent_t["correct"]
            others = sum(cells[(t, p)] for p in split.types if p != t)
            assert others == ent_t["incorrect"]
            assert cells[(t, "(none)")] == ent_t["missed"]
            assert cells[("(none)", t)] == ent_t["spurious"]
    # the examples' counts and the CSV: every error once, kind by kind
    groups = {g["kind"]: g["count"] for g in _block(section, "Error examples in context")["groups"]}
    assert groups == {k: errors[k] for k in ("incorrect", "partial", "missed", "spurious")}
    csv_rows = _block(section, "Download every error (CSV)")["data"]["rows"]
    kinds = [r[1] for r in csv_rows]
    assert {k: kinds.count(k) for k in groups} == groups


def test_a_type_error_pairs_as_nervaluate_pairs_it() -> None:
    # gold A (0, 10 condition) is taken by an exact prediction; gold B (5, 10 drug) has the
    # offsets of the prediction (5, 10 condition). nervaluate skips A (already taken) and books
    # an incorrect against B, the drug: the old pairing took A (the first overlapping gold
    # span) and called it a boundary error of a condition.
    a, b = Span(0, 10, "condition"), Span(5, 10, "drug")
    pred = [Span(0, 10, "condition"), Span(5, 10, "condition")]
    outcomes = classify_document([a, b], pred, ("condition", "drug"))
    assert [(o.kind, o.gold) for o in outcomes] == [("correct", a), ("incorrect", b)]
    results, per_tag = nerv([[a, b]], [pred], ("condition", "drug"))
    assert per_tag["drug"]["ent_type"]["incorrect"] == 1
    assert results["ent_type"]["missed"] == 0
    doc = NerDocument("d", "x" * 20, [a, b])
    metrics, _ = score_documents([doc], [pred], ("condition", "drug"))
    assert metrics["per_type"]["drug"]["errors"]["incorrect"] == 1
    assert metrics["per_type"]["condition"]["errors"]["partial"] == 0
