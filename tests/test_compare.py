"""compare: per-sample statistics and the paired bootstrap against independent oracles.

Oracles: sklearn's f1_score / accuracy on the same samples; an explicit per-replicate loop over
the very same bootstrap draws; exact enumeration of every equally likely resample of a tiny
sample; and hand-computed cases.
"""

from __future__ import annotations

import csv
import io
import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sklearn.metrics import f1_score

from clineval.benchmarks.clinconsensus.metrics import cacs, pass_at_k, rubric_accuracy
from clineval.benchmarks.clinconsensus.statistics import cc_statistics
from clineval.benchmarks.ner.statistics import ner_statistics
from clineval.cli import main
from clineval.metrics.bootstrap import bootstrap_indices
from clineval.report.compare.build import build_comparison, holm
from clineval.report.compare.command import compare_runs
from clineval.report.compare.render import render_csv, render_markdown
from clineval.reportkit import statistics as st
from clineval.rundir import write_json, write_jsonl

LABELS = ["a", "b", "c", "d", "e"]


def _sk_macro(gold: list[str], pred: list[str | None], labels: list[str]) -> float:
    # sklearn needs strings: an invalid output is any non-label string (a miss, no FP).
    return float(
        f1_score(
            gold,
            [p if p is not None else "<invalid>" for p in pred],
            labels=labels,
            average="macro",
            zero_division=0,
        )
    )


def _random_preds(rng: np.random.Generator, n: int) -> tuple[list[str], list[str | None]]:
    gold = [LABELS[i] for i in rng.integers(0, 4, n)]  # "e" never gold
    pred: list[str | None] = []
    for g in gold:
        r = rng.random()
        pred.append(
            g if r < 0.5 else None if r < 0.6 else "zzz" if r < 0.65 else LABELS[rng.integers(0, 5)]
        )
    return gold, pred


def test_macro_f1_statistic_matches_sklearn_and_its_replicates_a_loop() -> None:
    rng = np.random.default_rng(7)
    gold, pred = _random_preds(rng, 60)
    ids = [f"s{i}" for i in range(60)]
    stat = st.macro_f1_statistic(ids, gold, pred, LABELS)
    assert stat.point() == pytest.approx(_sk_macro(gold, pred, LABELS), abs=1e-12)
    reps = st.replicates(stat, n_resamples=40, seed=3)
    idx = bootstrap_indices(60, 40, 3)
    loop = [_sk_macro([gold[i] for i in row], [pred[i] for i in row], LABELS) for row in idx]
    np.testing.assert_allclose(reps, loop, atol=1e-12)


def test_accuracy_and_ratio_statistics_by_hand() -> None:
    acc = st.mean_statistic(["x", "y", "z", "w"], [1, 0, 1, 1])
    assert acc.point() == 0.75
    ratio = st.ratio_statistic(["x", "y"], [3, 1], [4, 4])  # pooled: 4 / 8
    assert ratio.point() == 0.5


def test_span_f1_reducer_by_hand() -> None:
    # correct 6, incorrect 1, missed 2, spurious 1 -> P = 6/8, R = 6/9, F1 = 2PR/(P+R) = 12/17.
    sums = np.array([[6.0, 1.0, 2.0, 1.0]])
    assert st.micro_f1_reducer(sums)[0] == pytest.approx(12 / 17)
    assert st.micro_f1_reducer(np.zeros((1, 4)))[0] == 0.0


def test_identical_runs_differ_by_exactly_zero() -> None:
    rng = np.random.default_rng(1)
    gold, pred = _random_preds(rng, 50)
    ids = [str(i) for i in range(50)]
    a = st.macro_f1_statistic(ids, gold, pred, LABELS)
    b = st.macro_f1_statistic(ids[::-1], gold[::-1], pred[::-1], LABELS)  # other order
    r = st.paired_bootstrap(a, b, n_resamples=200, seed=0)
    assert r is not None
    assert (r.delta, r.ci, r.p_value, r.n_shared) == (0.0, (0.0, 0.0), 1.0, 50)


def test_paired_accuracy_three_samples_hand_computed() -> None:
    # A right on samples 1, 2; B right on 2 only. The difference on a resample is k/3, k = how
    # often sample 1 is drawn ~ Binomial(3, 1/3): P(k=0) = 8/27, P(1) = 12/27, P(2) = 6/27,
    # P(3) = 1/27. Two-sided p = 2 * P(diff <= 0) = 16/27; 95% interval = [0, 1] (the 97.5%
    # quantile lies in the k = 3 mass since P(k <= 2) = 26/27 < 0.975).
    a = st.mean_statistic(["1", "2", "3"], [1, 1, 0])
    b = st.mean_statistic(["1", "2", "3"], [0, 1, 0])
    r = st.paired_bootstrap(a, b, n_resamples=40000, seed=5)
    assert r is not None
    assert r.delta == pytest.approx(1 / 3)
    assert r.p_value == pytest.approx(16 / 27, abs=0.015)
    assert r.ci == (0.0, 1.0)


def test_paired_macro_f1_against_exact_enumeration() -> None:
    # n = 5 samples: all 5^5 = 3125 ordered resamples are equally likely; their exact distribution
    # of the macro-F1 difference (the textbook per-class loop, itself checked against sklearn
    # in the TCM-SD tests) is the limit the seeded bootstrap must approach.
    from clineval.benchmarks.tcm_sd.metrics import reference_macro_f1_loop as loop_f1

    gold = ["a", "b", "a", "c", "b"]
    pred_a: list[str | None] = ["a", "b", "b", "c", "b"]
    pred_b: list[str | None] = ["a", "a", "a", None, "b"]
    ids = [f"s{i}" for i in range(5)]
    diffs = []
    for combo in itertools.product(range(5), repeat=5):
        g = [gold[i] for i in combo]
        diffs.append(
            loop_f1(g, [pred_a[i] for i in combo], ["a", "b", "c"])[0]
            - loop_f1(g, [pred_b[i] for i in combo], ["a", "b", "c"])[0]
        )
    exact = np.array(diffs)
    exact_p = min(1.0, 2 * min(np.mean(exact <= 0), np.mean(exact >= 0)))
    a = st.macro_f1_statistic(ids, gold, pred_a, ["a", "b", "c"])
    b = st.macro_f1_statistic(ids, gold, pred_b, ["a", "b", "c"])
    r = st.paired_bootstrap(a, b, n_resamples=30000, seed=11)
    assert r is not None
    assert r.delta == pytest.approx(
        _sk_macro(gold, pred_a, ["a", "b", "c"]) - _sk_macro(gold, pred_b, ["a", "b", "c"])
    )
    assert r.p_value == pytest.approx(exact_p, abs=0.02)
    assert np.mean(exact <= r.ci[0]) == pytest.approx(0.025, abs=0.02)
    assert np.mean(exact >= r.ci[1]) == pytest.approx(0.025, abs=0.02)


def test_only_shared_ids_are_compared() -> None:
    rng = np.random.default_rng(3)
    gold, pred = _random_preds(rng, 40)
    ids = [f"d{i}" for i in range(40)]
    a = st.macro_f1_statistic(ids[:30], gold[:30], pred[:30], LABELS)
    b = st.macro_f1_statistic(ids[10:], gold[10:], pred[10:], LABELS)
    r = st.paired_bootstrap(a, b, n_resamples=50, seed=0)
    assert r is not None and r.n_shared == 20
    shared = slice(10, 30)
    assert r.a == pytest.approx(_sk_macro(gold[shared], pred[shared], LABELS))
    assert r.delta == 0.0  # same predictions on the shared part
    assert st.paired_bootstrap(a, st.macro_f1_statistic(["q"], ["a"], ["a"], LABELS)) is None


def test_seeded_and_reproducible() -> None:
    a = st.mean_statistic([str(i) for i in range(30)], np.arange(30) % 2)
    b = st.mean_statistic([str(i) for i in range(30)], np.arange(30) % 3 == 0)
    assert st.paired_bootstrap(a, b, seed=4) == st.paired_bootstrap(a, b, seed=4)
    assert st.paired_bootstrap(a, b, seed=4) != st.paired_bootstrap(a, b, seed=5)


# -- task statistics against the tasks' own metric code -------------------------------------
def test_ner_statistics_reproduce_the_task_metrics() -> None:
    from clineval.benchmarks.ner.records import NerDocument, Span
    from clineval.benchmarks.ner.scoring import score_documents

    docs = [
        NerDocument(
            "d1",
            "Aspirin causes renal failure in some patients.",
            [Span(0, 7, "drug"), Span(15, 28, "condition")],
        ),
        NerDocument(
            "d2",
            "Cisplatin nephrotoxicity and acute kidney injury.",
            [Span(0, 9, "drug"), Span(10, 24, "condition"), Span(29, 48, "condition")],
        ),
        NerDocument("d3", "No entity here but heparin.", [Span(19, 26, "drug")]),
    ]
    preds = [
        [Span(0, 7, "drug"), Span(15, 20, "condition")],
        [Span(0, 9, "condition"), Span(29, 48, "condition"), Span(35, 40, "drug")],
        [],
    ]
    metrics, samples = score_documents(docs, preds, ("drug", "condition"))
    stats = ner_statistics(metrics, samples)
    for key in ("token_macro_f1", "span_partial_f1", "span_exact_f1"):
        assert stats[key].point() == pytest.approx(metrics[key], abs=1e-12), key


def test_cc_statistics_match_the_cacs_module() -> None:
    s = [3, 7, 12, 30, 0, 9]
    rows = [
        {"id": f"c{i}", "s": v, "judged": 30 - (i == 2), "complete": i != 2}
        for i, v in enumerate(s)
    ]
    metrics = {"cacs@7": 0.0, "cacs@10": 0.0, "n_criteria_per_case": 30}
    stats = cc_statistics(metrics, rows)
    complete = [v for i, v in enumerate(s) if i != 2]
    assert stats["cacs@7"].point() == pytest.approx(cacs(complete, 30, 7))
    assert stats["cacs@10"].point() == pytest.approx(cacs(complete, 30, 10))
    assert stats["pass@7"].point() == pytest.approx(pass_at_k(complete, 7))
    judged = [30 - (i == 2) for i in range(6)]
    assert stats["rubric_accuracy"].point() == pytest.approx(rubric_accuracy(s, judged))


# -- compare end to end ----------------------------------------------------------------------
def _tcm_run(path: Path, gold: list[str], pred: list[str | None], fixture: bool = True) -> Path:
    ids = [f"r{i}" for i in range(len(gold))]
    correct = [g == p for g, p in zip(gold, pred, strict=True)]
    metrics: dict[str, Any] = {
        "macro_f1": _sk_macro(gold, pred, LABELS),
        "accuracy": sum(correct) / len(gold),
        "macro_f1_ci": [0.1, 0.9],
        "per_class": {lab: {"f1": 0.0, "support": 0} for lab in LABELS},
        "fixture": fixture,
    }
    write_json(path / "results.json", {"tcm-sd": metrics})
    write_json(path / "manifest.json", {"config": {"model": f"baseline:{path.name}"}})
    write_jsonl(
        path / "samples.jsonl",
        [
            {"task": "tcm-sd", "id": i, "gold": g, "pred": p, "correct": c}
            for i, g, p, c in zip(ids, gold, pred, correct, strict=True)
        ],
    )
    return path


@pytest.fixture
def two_runs(tmp_path: Path) -> tuple[Path, Path, list[str], list[str | None], list[str | None]]:
    rng = np.random.default_rng(9)
    gold, pred_a = _random_preds(rng, 80)
    _, pred_b = _random_preds(rng, 80)
    a = _tcm_run(tmp_path / "fixture-run-a", gold, pred_a)
    b = _tcm_run(tmp_path / "fixture-run-b", gold, pred_b)
    return a, b, gold, pred_a, pred_b


def test_compare_csv_numbers(two_runs: Any) -> None:
    a, b, gold, pred_a, pred_b = two_runs
    comp = build_comparison([a, b], seed=0, n_resamples=300)
    rows = list(csv.DictReader(io.StringIO(render_csv(comp))))
    scores = {(r["run"], r["metric"]): r for r in rows if r["kind"] == "score"}
    assert float(scores[("fixture-run-a", "macro_f1")]["value"]) == _sk_macro(gold, pred_a, LABELS)
    assert float(scores[("fixture-run-a", "macro_f1")]["ci_low"]) == 0.1
    assert scores[("fixture-run-b", "accuracy")]["fixture"] == "True"
    assert {r["higher_is_better"] for r in rows} == {"True"}  # TCM-SD's figures all rise
    paired = {r["metric"]: r for r in rows if r["kind"] == "paired"}
    expected = _sk_macro(gold, pred_a, LABELS) - _sk_macro(gold, pred_b, LABELS)
    assert float(paired["macro_f1"]["value"]) == pytest.approx(expected, abs=1e-12)
    assert int(paired["macro_f1"]["n_shared"]) == 80
    low, high = float(paired["macro_f1"]["ci_low"]), float(paired["macro_f1"]["ci_high"])
    assert low <= expected <= high
    assert 0.0 < float(paired["accuracy"]["p_value"]) <= 1.0


def test_compare_refuses_runs_with_different_gold(tmp_path: Path) -> None:
    a = _tcm_run(tmp_path / "a", ["a", "b", "c"], ["a", "b", "c"])
    b = _tcm_run(tmp_path / "b", ["a", "b", "b"], ["a", "b", "c"])
    comp = build_comparison([a, b], n_resamples=50)
    assert comp.pairs and all(p.difference is None and "gold" in p.note for p in comp.pairs)


def test_holm_adjusted_p_values_by_hand() -> None:
    # sorted 0.01, 0.03, 0.04 -> x3, x2, x1 = 0.03, 0.06, 0.04 -> monotone: 0.03, 0.06, 0.06
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5]) == [0.5]
    assert holm([0.9, 0.8]) == pytest.approx([1.0, 1.0])  # capped at 1


def _row(text: str, task: str, metric: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(f"| {task} | {metric}"))


def test_compare_marks_best_only_where_the_test_separates(two_runs: Any, tmp_path: Path) -> None:
    _, _, gold, _, _ = two_runs
    # one answer apart out of 80: the leader is the all-correct run, the test cannot tell them
    near = [g if k != 0 else "zzz" for k, g in enumerate(gold)]
    a = _tcm_run(tmp_path / "fixture-all", gold, list(gold))
    b = _tcm_run(tmp_path / "fixture-near", gold, near)
    comp = build_comparison([a, b], n_resamples=200)
    text = render_markdown(comp)
    assert comp.leader("tcm-sd", "accuracy") == 0
    pair = next(p for p in comp.pairs if p.metric == "accuracy")
    assert pair.p_holm is not None and pair.p_holm >= 0.05
    assert comp.best("tcm-sd", "accuracy") is None
    assert "**" not in _row(text, "tcm-sd", "accuracy")
    assert "(fixture)" in text and "Holm" in text
    # a run right on all 80 samples against one right on half of them: separated, in bold
    good = _tcm_run(tmp_path / "fixture-good", gold, list(gold))
    half = [g if k % 2 else "zzz" for k, g in enumerate(gold)]
    poor = _tcm_run(tmp_path / "fixture-poor", gold, half)
    comp = build_comparison([poor, good], n_resamples=200)
    assert comp.best("tcm-sd", "accuracy") == 1
    row = _row(render_markdown(comp), "tcm-sd", "accuracy")
    assert row.split(" | ")[3].startswith("**1.0000 [")  # the good run's column, bold
    # a third run as good as the first: the leader is not separated from it, so no bold
    also_good = [g if k != 0 else "zzz" for k, g in enumerate(gold)]  # 79 of 80
    close = _tcm_run(tmp_path / "fixture-close", gold, also_good)
    comp = build_comparison([poor, good, close], n_resamples=200)
    assert comp.leader("tcm-sd", "accuracy") == 1 and comp.best("tcm-sd", "accuracy") is None


def test_compare_cli_formats(two_runs: Any, tmp_path: Path, capsys) -> None:
    a, b, *_ = two_runs
    for fmt in ("table", "markdown", "csv", "html"):
        out = tmp_path / f"board.{fmt}"
        assert main(["compare", str(a), str(b), "--format", fmt, "-o", str(out)]) == 0
        assert "fixture-run-a" in out.read_text(encoding="utf-8")
    assert main(["compare", str(a), "--format", "pdf"]) == 2
    assert main(["compare", str(tmp_path / "missing")]) == 2
    assert "not a run directory" in capsys.readouterr().err


def test_compare_runs_prints_a_table(two_runs: Any) -> None:
    from rich.console import Console

    a, b, *_ = two_runs
    console = Console(record=True, width=160, file=io.StringIO())
    compare_runs([a, b], fmt="table", console=console)
    text = console.export_text()
    assert "leaderboard" in text and "paired bootstrap" in text and "fixture-run-b" in text


def test_sparse_counts_agree_with_dense_matrix_products() -> None:
    rng = np.random.default_rng(0)
    dense = rng.integers(0, 3, (40, 7)).astype(float)
    dense[:, 3] = 0  # an all-zero column
    counts = st.Counts.from_dense(dense)
    weights = rng.integers(0, 4, (5, 40)).astype(float)
    np.testing.assert_allclose(counts.weighted(weights), weights @ dense)
    np.testing.assert_allclose(counts.total(), dense.sum(axis=0))
    rows = np.array([5, 2, 30, 7])
    np.testing.assert_allclose(
        counts.take(rows).weighted(weights[:, :4]), weights[:, :4] @ dense[rows]
    )
    empty = st.Counts.from_dense(np.zeros((3, 2)))
    assert empty.weighted(np.ones((2, 3))).tolist() == [[0.0, 0.0], [0.0, 0.0]]


def test_compare_table_shows_bracketed_names_as_text(tmp_path: Path) -> None:
    """Run names and model specs are user text: "[red]" or "[/x]" in them is shown, not parsed
    as rich markup (which swallowed the tag, or raised MarkupError: an internal error)."""
    from rich.console import Console

    a = _tcm_run(tmp_path / "[red]a", ["a", "b", "c"], ["a", "b", "c"])
    b = _tcm_run(tmp_path / "[bold]b", ["a", "b", "c"], ["a", "c", "c"])
    write_json(b / "manifest.json", {"config": {"model": "predictions:[/x]p.jsonl"}})
    console = Console(record=True, width=200, file=io.StringIO())
    compare_runs([a, b], fmt="table", console=console)
    text = console.export_text()
    assert "[red]a (fixture)" in text and "baseline:[red]a" in text
    assert "predictions:[/x]p.jsonl" in text
    assert "[red]a vs [bold]b" in text  # the paired-test rows
