"""compare draws enough bootstrap resamples for its number of pairs and its threshold.

With a fixed 1,000 resamples the smallest p-value is 2/1001, and Holm over 28 pairs (eight
runs) makes it 0.056: nothing could ever be separated. And a p-value near 0.05 fell on either
side depending on the seed. Oracles: the arithmetic of the smallest attainable p-value; the
real NCBI test set with a gold-perfect run among seven perturbed ones; synthetic paired data
whose exact bootstrap p-value is a little above (or at) 0.05, tried under ten seeds.
"""

from __future__ import annotations

import csv
import io
import json
import random
from pathlib import Path
from typing import Any

import pytest
from test_ner_metrics_real import perturb

from clineval.benchmarks.ner.corpora import load_ner_split
from clineval.benchmarks.ner.records import Span
from clineval.benchmarks.ner.scoring import score_documents
from clineval.cli import main
from clineval.report.compare.build import build_comparison
from clineval.report.compare.command import render_json
from clineval.report.compare.html import render_html
from clineval.report.compare.paired_tests import (
    ALPHA,
    MAX_RESAMPLES,
    initial_resamples,
    too_few,
    undecided,
)
from clineval.report.compare.render import render_csv, render_markdown
from clineval.rundir import write_json, write_jsonl


def test_initial_resamples_put_the_smallest_holm_p_well_under_alpha() -> None:
    for m in range(1, 60):
        b = initial_resamples(m)
        assert b % 1000 == 0
        # the smallest p of a bootstrap with b resamples is 2 / (b + 1); Holm multiplies by m
        assert m * 2 / (b + 1) <= ALPHA / 10
    assert initial_resamples(28) == 12_000  # eight runs: 28 pairs
    assert too_few(28, 1000) and not too_few(28, 12_000)


def test_undecided_only_within_three_standard_errors() -> None:
    # one pair at B = 10,000: SE of p = 2 sqrt(q (1 - q) / B) with q = p / 2
    assert undecided([0.052], 10_000)  # SE 0.0044: 0.002 away is within 3 SE
    assert not undecided([0.08], 10_000)
    assert not undecided([0.0002], 10_000)
    # Holm: the smaller of two p-values is compared as 2p
    assert undecided([0.026, 0.9], 10_000)
    assert not undecided([0.026, 0.9], 10_000_000)


def _mean_run(path: Path, values: list[int], task: str = "tcm-sd") -> Path:
    """A fixture run of one accuracy-like task: one 0/1 value a sample."""
    path.mkdir(parents=True)
    gold = ["a"] * len(values)
    pred = ["a" if v else "b" for v in values]
    write_json(
        path / "results.json",
        {task: {"accuracy": sum(values) / len(values), "fixture": True}},
    )
    write_json(path / "manifest.json", {"config": {"model": f"baseline:{path.name}"}})
    write_jsonl(
        path / "samples.jsonl",
        [
            {"task": task, "id": f"s{i}", "gold": g, "pred": p, "correct": bool(v)}
            for i, (g, p, v) in enumerate(zip(gold, pred, values, strict=True))
        ],
    )
    return path


def _paired(tmp_path: Path, n: int, a_only: int, b_only: int) -> tuple[Path, Path]:
    """Run A right where B is wrong on `a_only` samples, B right alone on `b_only`."""
    rest = n - a_only - b_only
    a = [1] * a_only + [0] * b_only + [1] * rest
    b = [0] * a_only + [1] * b_only + [1] * rest
    return _mean_run(tmp_path / "fixture-a", a), _mean_run(tmp_path / "fixture-b", b)


@pytest.mark.slow
def test_a_decision_near_the_threshold_is_the_same_under_every_seed(tmp_path: Path) -> None:
    # 15 vs 6 discordant of 60: the bootstrap p-value is about 0.053 (200,000 resamples), so
    # 1,000 resamples (SE 0.01) put it under 0.05 for some seeds and over for others.
    a, b = _paired(tmp_path, 60, 15, 6)
    decisions = set()
    for seed in range(10):
        comp = build_comparison([a, b], seed=seed)
        pair = next(p for p in comp.pairs if p.metric == "accuracy")
        assert pair.p_holm is not None and pair.resamples is not None
        assert pair.resamples > 1000
        assert comp.resampling[("tcm-sd", "accuracy")].undecided is False
        decisions.add(pair.p_holm < ALPHA)
    assert decisions == {False}


@pytest.mark.slow
def test_a_p_value_at_the_threshold_is_reported_undecided(tmp_path: Path) -> None:
    # 12 vs 4 of 60: p about 0.0499; no affordable number of resamples settles that
    a, b = _paired(tmp_path, 60, 12, 4)
    comp = build_comparison([a, b], seed=0)
    how = comp.resampling[("tcm-sd", "accuracy")]
    assert how.resamples == MAX_RESAMPLES and how.undecided
    assert "too close to 0.05" in render_markdown(comp)


def _ncbi_runs(tmp_path: Path, root: Path) -> list[Path]:
    split = load_ner_split("ncbi", "test", root)
    types = tuple(split.types)
    docs = split.documents
    runs = []
    for k in range(8):
        rng = random.Random(k)
        preds: list[list[Span]] = (
            [list(d.entities) for d in docs]
            if k == 3  # the gold-perfect one, in the middle of the list
            else [perturb(d.text, list(d.entities), types, rng) for d in docs]
        )
        metrics, rows = score_documents(docs, preds, types)
        path = tmp_path / f"fixture-ncbi-{k}"
        path.mkdir()
        write_json(path / "results.json", {"ner:ncbi": metrics})
        write_json(path / "manifest.json", {"config": {"model": f"predictions:p{k}.jsonl"}})
        write_jsonl(path / "samples.jsonl", [{"task": "ner:ncbi", **r} for r in rows])
        runs.append(path)
    return runs


@pytest.mark.slow
def test_a_gold_perfect_ncbi_run_among_seven_perturbed_ones_is_separated(
    tmp_path: Path, data_root: Path
) -> None:
    runs = _ncbi_runs(tmp_path, data_root)
    comp = build_comparison(runs, seed=0)
    assert comp.cells[(3, "ner:ncbi", "token_macro_f1")].value == 1.0
    for key in ("token_macro_f1", "span_partial_f1", "span_exact_f1"):
        assert comp.best("ner:ncbi", key) == 3, key
        how = comp.resampling[("ner:ncbi", key)]
        assert how.resamples >= 12_000 and not how.too_few
        column = [p for p in comp.pairs if p.metric == key]
        assert len(column) == 28 and {p.resamples for p in column} == {how.resamples}
    # the old fixed 1,000 cannot: Holm's smallest p is 28 x 2 / 1001 > 0.05
    fixed = build_comparison(runs, seed=0, n_resamples=1000)
    assert fixed.best("ner:ncbi", "token_macro_f1") is None
    assert fixed.resampling[("ner:ncbi", "token_macro_f1")].too_few


def test_every_format_says_how_many_resamples(tmp_path: Path, capsys: Any) -> None:
    a, b = _paired(tmp_path, 60, 20, 2)
    comp = build_comparison([a, b], seed=0)
    n = comp.resampling[("tcm-sd", "accuracy")].resamples
    shown = f"{n:,} resamples"
    assert shown in render_markdown(comp)
    assert shown in render_html(comp)
    doc = json.loads(render_json(comp))
    assert {p["resamples"] for p in doc["pairs"]} == {n}
    assert doc["resampling"][0]["resamples"] == n and doc["resampling"][0]["adaptive"]
    rows = list(csv.DictReader(io.StringIO(render_csv(comp))))
    assert {r["resamples"] for r in rows if r["kind"] == "paired"} == {str(n)}
    assert main(["compare", str(a), str(b)]) == 0
    assert shown in capsys.readouterr().out


def test_resamples_flag_fixes_the_number(tmp_path: Path, capsys: Any) -> None:
    a, b = _paired(tmp_path, 60, 20, 2)
    assert main(["compare", str(a), str(b), "--json", "--resamples", "700"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {p["resamples"] for p in doc["pairs"]} == {700}
    assert doc["resampling"][0]["adaptive"] is False
    assert "(--resamples)" in doc["resampling"][0]["text"]
    for bad in ("0", "-5", "x", "10000000000"):
        assert main(["compare", str(a), str(b), "--resamples", bad]) == 2
        err = capsys.readouterr().err
        assert "--resamples" in err and "Traceback" not in err


def test_doubling_stops_at_the_draw_budget(monkeypatch: Any) -> None:
    from clineval.report.compare import paired_tests as ct
    from clineval.reportkit import statistics as st

    # a pair at p about 0.0499 (never settled) on 60 samples: with a budget of 60 x 2 x 10,000
    # draws the doubling stops at 10,000 resamples (not 256,000) and says the call is open
    n, a_only, b_only = 60, 12, 4
    rest = n - a_only - b_only
    ids = [f"s{i}" for i in range(n)]
    sa = st.mean_statistic(ids, [1] * a_only + [0] * b_only + [1] * rest)
    sb = st.mean_statistic(ids, [0] * a_only + [1] * b_only + [1] * rest)
    monkeypatch.setattr(ct, "DRAW_BUDGET", 2 * n * 10_000)
    _, how = ct.column_tests([("a", sa, "b", sb)], ct.ReplicateCache(0))
    assert how.resamples == 10_000 and how.undecided
