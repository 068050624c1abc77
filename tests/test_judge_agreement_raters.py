"""`clineval judge-agreement` with several raters who each label only some units: every figure
of a judge and of each rater (leave-one-out) equals an independent computation with
scikit-learn, krippendorff and pingouin; `--json` prints the document alone."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score, f1_score
from test_clinconsensus_agreement import _scored_run, _write

from clineval.benchmarks.clinconsensus.cases import fixture_path, load_cases
from clineval.cli import main
from clineval.judge_agreement import agreement_figures
from clineval.judge_labels import read_labels

krippendorff = pytest.importorskip("krippendorff")
RATERS = ("dr a", "dr b", "dr c")


def _units() -> list[tuple[str, str]]:
    return [(c.case_id, r.criterion_id) for c in load_cases(fixture_path())[:4] for r in c.rubrics]


def _rater_labels(rng: np.random.Generator, truth: np.ndarray, flip: float) -> np.ndarray:
    """(units x raters) labels near `truth`, about a quarter missing, nan = none."""
    flipped = rng.random((truth.size, len(RATERS))) < flip
    labels = np.where(flipped, 1 - truth[:, None], truth[:, None]).astype(float)
    labels[rng.random(labels.shape) < 0.25] = np.nan
    return labels


def _majority(row: np.ndarray) -> float | None:
    given = [v for v in row if not np.isnan(v)]
    if not given:
        return None
    value, count = Counter(given).most_common(1)[0]
    return value if 2 * count > len(given) else None


def _oracle(own: np.ndarray, others: np.ndarray) -> dict[str, Any]:
    """The figures recomputed with the libraries, written apart from clineval's."""
    labelled = ~np.isnan(others).all(axis=1)
    a, b, no_majority = [], [], 0
    for u in np.nonzero(labelled & ~np.isnan(own))[0]:
        m = _majority(others[u])
        if m is None:
            no_majority += 1
        else:
            a.append(own[u])
            b.append(m)
    g, p = [], []
    for u in range(own.size):
        for v in others[u]:
            if not np.isnan(own[u]) and not np.isnan(v):
                g.append(own[u])
                p.append(v)
    reliability = np.column_stack([others, own])[labelled].T
    return {
        "cohen_kappa": cohen_kappa_score(a, b),
        "n_no_majority": no_majority,
        "balanced_f1": f1_score(p, g, average="macro"),
        "n_pairs": len(g),
        "krippendorff_alpha": krippendorff.alpha(
            reliability_data=reliability, level_of_measurement="nominal"
        ),
    }


def _check(figures: dict[str, Any], want: dict[str, Any]) -> None:
    for key, value in want.items():
        assert figures[key] == pytest.approx(value, abs=1e-10), key


@pytest.mark.parametrize("seed", [3, 11])
def test_binary_figures_of_judge_and_raters_equal_the_libraries(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], seed: int
) -> None:
    rng = np.random.default_rng(seed)
    units = _units()
    truth = (rng.random(len(units)) < 0.45).astype(float)
    judge = np.where(rng.random(truth.size) < 0.2, 1 - truth, truth)
    judge[rng.random(truth.size) < 0.05] = np.nan  # judge errors: no verdict
    labels = _rater_labels(rng, truth, flip=0.15)
    rows = [
        {"id": item, "criterion": crit, "rater": rater, "label": bool(labels[u, r])}
        for u, (item, crit) in enumerate(units)
        for r, rater in enumerate(RATERS)
        if not np.isnan(labels[u, r])
    ]
    path = _write(tmp_path / "labels.jsonl", rows)
    run = _scored_run(tmp_path, judge)
    capsys.readouterr()
    assert main(["judge-agreement", str(run), "--labels", str(path), "--json"]) == 0
    out = capsys.readouterr().out
    result = json.loads(out)  # stdout holds the document and nothing else
    assert result == json.loads((run / "judge_agreement.json").read_text("utf-8"))
    figures = result["judges"]["verdicts-file"]
    _check(figures, _oracle(judge, labels))
    assert figures["n"] == int((~np.isnan(judge) & ~np.isnan(labels).all(axis=1)).sum())
    for r, rater in enumerate(RATERS):
        _check(result["raters"][rater], _oracle(labels[:, r], np.delete(labels, r, axis=1)))
    assert result["kind"] == "binary" and result["n_raters"] == 3
    assert "strict-majority" in result["variants"]["cohen_kappa"]
    # the text output names the variants and the units left out
    assert main(["judge-agreement", str(run), "--labels", str(path)]) == 0
    text = capsys.readouterr().out
    assert "leave-one-out" in text and "HealthBench's pooled pairwise balanced F1" in text
    if figures["n_no_majority"]:
        assert f"{figures['n_no_majority']} unit(s) without a strict majority" in text


# pingouin calls a pandas keyword pandas deprecates: its warning, not ours
@pytest.mark.filterwarnings("ignore:The inplace keyword")
def test_graded_figures_equal_the_libraries(tmp_path: Path) -> None:
    pingouin = pytest.importorskip("pingouin")
    import pandas as pd

    rng = np.random.default_rng(5)
    n = 40
    truth = rng.integers(1, 6, n).astype(float)
    labels = np.clip(truth[:, None] + rng.integers(-1, 2, (n, len(RATERS))), 1, 5).astype(float)
    labels[rng.random(labels.shape) < 0.25] = np.nan
    judge = np.clip(truth + rng.integers(-1, 2, n), 1, 5).astype(float)
    rows = [
        {"id": f"item-{u}", "criterion": "overall", "rater": rater, "label": int(labels[u, r])}
        for u in range(n)
        for r, rater in enumerate(RATERS)
        if not np.isnan(labels[u, r])
    ]
    parsed = read_labels(_write(tmp_path / "labels.jsonl", rows))
    assert parsed.kind == "graded"
    # the units of the file are the items in order (every item has a label)
    order = [u for u in range(n) if not np.isnan(labels[u]).all()]
    judge, labels = judge[order], labels[order]
    result = agreement_figures(parsed, {"jury": judge})
    figures = result["judges"]["jury"]
    mean = np.nanmean(labels, axis=1)
    long = pd.DataFrame(
        [(u, who, x) for u in range(judge.size) for who, x in (("j", judge[u]), ("m", mean[u]))],
        columns=["unit", "rater", "score"],
    )
    icc = pingouin.intraclass_corr(long, targets="unit", raters="rater", ratings="score")
    want_icc = float(icc[icc["Type"].isin(["ICC(A,1)", "ICC2"])]["ICC"].iloc[0])
    assert figures["icc_2_1"] == pytest.approx(want_icc, abs=1e-10)
    alpha = krippendorff.alpha(
        reliability_data=np.column_stack([labels, judge]).T, level_of_measurement="ordinal"
    )
    assert figures["krippendorff_alpha"] == pytest.approx(alpha, abs=1e-10)
    a, b = [], []
    for u in range(judge.size):
        if (m := _majority(labels[u])) is not None:
            a.append(judge[u])
            b.append(m)
    assert figures["cohen_kappa"] == pytest.approx(cohen_kappa_score(a, b), abs=1e-10)
    scale = [1.0, 2.0, 3.0, 4.0, 5.0]
    quadratic = cohen_kappa_score(a, b, labels=scale, weights="quadratic")
    assert figures["cohen_kappa_quadratic"] == pytest.approx(quadratic, abs=1e-10)
    assert figures["balanced_f1"] is None and figures["n_no_majority"] == judge.size - len(a)
    assert set(result["raters"]) == set(RATERS)


def test_graded_labels_against_true_false_verdicts_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _scored_run(tmp_path, np.ones(120))
    item, crit = _units()[0]
    path = _write(tmp_path / "labels.jsonl", [{"id": item, "criterion": crit, "label": 4}])
    capsys.readouterr()
    assert main(["judge-agreement", str(run), "--labels", str(path)]) == 2
    assert capsys.readouterr().err == (
        f"error: {path}: score labels, but the run's verdicts are true/false\n"
    )


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([{"rater": "a", "label": True}, {"label": False}], "2: the rater is left out here"),
        ([{"label": True, "criteria_met": True}], "1: give 'label' or 'criteria_met', not both"),
        ([{"label": True}, {"label": 2}], "2: a graded label here, binary labels from line 1"),
        ([{"label": float("nan")}], "1: 'label' must be true or false, or a finite number"),
        ([{"label": True, "rater": "a"}, {"label": False, "rater": "a"}], "2: rater 'a' labels"),
    ],
)
def test_bad_label_lines_name_the_line(
    tmp_path: Path, rows: list[dict[str, Any]], message: str
) -> None:
    from clineval.errors import InputError

    path = tmp_path / "labels.jsonl"
    path.write_text(
        "".join(json.dumps({"id": "x", "criterion": "c", **row}) + "\n" for row in rows)
    )
    with pytest.raises(InputError) as caught:
        read_labels(path)
    assert caught.value.one_line().startswith(f"{path}:{message}")


def test_the_report_shows_the_figures_and_names_the_variants(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from clineval.report.agreement_section import agreement_blocks
    from clineval.report.rundata import load_run

    rng = np.random.default_rng(2)
    units = _units()
    judge = (rng.random(len(units)) < 0.5).astype(float)
    run = _scored_run(tmp_path, judge)
    assert agreement_blocks(load_run(run, with_samples=False), "clinconsensus") == []
    rows = [
        {"id": item, "criterion": crit, "rater": rater, "label": bool(rng.random() < 0.5)}
        for item, crit in units
        for rater in RATERS[:2]
    ]
    labels = _write(tmp_path / "labels.jsonl", rows)
    assert main(["judge-agreement", str(run), "--labels", str(labels)]) == 0
    written = json.loads((run / "judge_agreement.json").read_text("utf-8"))
    blocks = agreement_blocks(load_run(run, with_samples=False), "clinconsensus")
    judges, raters = blocks
    assert judges["header"][1:] == [
        "n", "n_no_majority", "cohen_kappa", "krippendorff_alpha", "balanced_f1", "accuracy"
    ]  # fmt: skip
    figures = written["judges"]["verdicts-file"]
    assert 0 < figures["n_no_majority"] < len(units)  # two raters who split on some units
    assert judges["rows"][0][:4] == [
        "verdicts-file",
        str(len(units)),
        str(figures["n_no_majority"]),
        f"{figures['cohen_kappa']:.3f}",
    ]
    assert "HealthBench's pooled pairwise balanced F1" in judges["note"]
    assert [r[0] for r in raters["rows"]] == list(RATERS[:2])
    assert agreement_blocks(load_run(run, with_samples=False), "another task") == []
    capsys.readouterr()
    report = tmp_path / "report.html"
    assert main(["report", str(run), "-o", str(report)]) == 0
    html = report.read_text("utf-8")
    assert "Judges vs human labels" in html and "strict-majority label" in html


def test_a_panel_aggregate_is_compared_as_one_more_judge(tmp_path: Path) -> None:
    from clineval.judge_agreement import compare

    rows = [
        {"id": f"i{u}", "criterion": "c", "rater": r, "label": bool((u + k) % 3)}
        for u in range(12)
        for k, r in enumerate(RATERS)
    ]
    parsed = read_labels(_write(tmp_path / "labels.jsonl", rows))
    one = np.array([u % 2 for u in range(12)], dtype=float)
    two = np.array([1.0] * 6 + [0.0] * 6)
    result = agreement_figures(parsed, {"j1": one, "j2": two}, "majority")
    # majority of two judges: met only when both say met (a split is not met)
    combined = ((one + two) == 2).astype(float)
    matrix = np.array([[float(bool((u + k) % 3)) for k in range(3)] for u in range(12)])
    assert result["aggregate"] == {"rule": "majority", **compare(combined, matrix, "binary")}
    graded = read_labels(
        _write(tmp_path / "g.jsonl", [{**r, "label": int(r["label"]) + 1} for r in rows])
    )
    result = agreement_figures(graded, {"j1": one + 1, "j2": two + 1})
    assert result["aggregate"]["rule"] == "mean"
    assert result["aggregate"] == {
        "rule": "mean",
        **compare((one + two) / 2 + 1, matrix + 1, "graded"),
    }
