"""ClinConsensus loader, fixture cases, verdict files, and scoring verdicts with no model."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from clineval.benchmarks.clinconsensus.cases import fixture_path, load_cases, load_verdicts
from clineval.cli import main
from clineval.errors import InputError
from clineval.judge.verdict import verdict_key

FIXTURE = fixture_path()


def _rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines()]


def _write(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return path


def test_fixture_cases_are_valid_varied_chinese_and_named_fixture() -> None:
    cases = load_cases(FIXTURE)
    assert "fixture" in FIXTURE.name
    assert len(cases) >= 12
    assert all(c.case_id.startswith("fixture-") for c in cases)
    assert all(len(c.rubrics) == 30 for c in cases)
    han = re.compile(r"[\u4e00-\u9fff]")
    assert all(han.search(c.user_request) and han.search(c.clinical_context) for c in cases)
    assert all(han.search(r.criterion) for c in cases for r in c.rubrics)
    assert len({c.difficulty for c in cases}) >= 3
    assert len({c.subject for c in cases}) >= 6
    assert len({c.task for c in cases}) >= 4
    assert len({c.user_role for c in cases}) >= 4
    assert cases[0].query == cases[0].clinical_context + "\n\n" + cases[0].user_request


def _broken(mutate) -> list[dict[str, Any]]:
    rows = _rows()[:3]
    mutate(rows[1])
    return rows


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda r: r["rubrics"].pop(), "expected 30 rubrics, found 29"),
        (lambda r: r.pop("user_request"), "user_request"),
        (lambda r: r.__setitem__("task_labels", "诊断"), "task_labels"),
        (lambda r: r["rubrics"][3].pop("criterion"), r"rubrics\[3\]"),
        (
            lambda r: r["rubrics"][4].__setitem__("criterion_id", r["rubrics"][0]["criterion_id"]),
            "duplicate criterion_id",
        ),
        (lambda r: r.__setitem__("case_id", "fixture-001"), "duplicate case_id"),
        (lambda r: r.__setitem__("rubrics", {}), "must be a list"),
    ],
)
def test_bad_line_names_file_and_line(tmp_path: Path, mutate, message: str) -> None:
    path = _write(tmp_path / "cases.jsonl", _broken(mutate))
    with pytest.raises(InputError, match=message) as info:
        load_cases(path)
    assert info.value.path == str(path) and info.value.line == 2


def test_invalid_json_and_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_text(json.dumps(_rows()[0], ensure_ascii=False) + "\n\n{not json\n", "utf-8")
    with pytest.raises(InputError) as info:
        load_cases(path)
    assert info.value.line == 3
    with pytest.raises(InputError, match="not found"):
        load_cases(tmp_path / "absent.jsonl")


def test_verdicts_file_validation(tmp_path: Path) -> None:
    cases = load_cases(FIXTURE)
    c0 = cases[0]
    good: list[dict[str, Any]] = [
        {"case_id": c0.case_id, "criterion_id": c0.rubrics[0].criterion_id, "criteria_met": True},
        {"case_id": c0.case_id, "criterion_id": c0.rubrics[1].criterion_id, "criteria_met": None},
    ]
    out = load_verdicts(_write(tmp_path / "v.jsonl", good), cases)
    assert out == {
        verdict_key(c0.case_id, c0.rubrics[0].criterion_id): True,
        verdict_key(c0.case_id, c0.rubrics[1].criterion_id): None,
    }
    for bad, message in [
        ({**good[0], "criteria_met": "yes"}, "true, false or null"),
        ({**good[0], "case_id": "nope"}, "unknown case_id"),
        ({**good[0], "criterion_id": "nope"}, "no criterion_id"),
        ({"case_id": c0.case_id, "criterion_id": c0.rubrics[0].criterion_id}, "criteria_met"),
        (good[0], "duplicate verdict"),
    ]:
        path = _write(
            tmp_path / "bad.jsonl", [good[0], bad] if bad is not good[0] else good[:1] * 2
        )
        with pytest.raises(InputError, match=message) as info:
            load_verdicts(path, cases)
        assert info.value.line == 2


# ---- scoring a verdicts file end to end (no model) ----------------------------------------
def _verdict_rows(s_per_case: list[int], errors: dict[int, int] | None = None) -> list[dict]:
    """Case i gets its first s_i criteria met and the rest not met; `errors` = {case: n null}
    turns the last n criteria of that case into null verdicts."""
    cases = load_cases(FIXTURE)
    rows = []
    for i, s in enumerate(s_per_case):
        case = cases[i]
        n_null = (errors or {}).get(i, 0)
        for j, rubric in enumerate(case.rubrics):
            met: bool | None = j < s
            if j >= 30 - n_null:
                met = None
            rows.append(
                {"case_id": case.case_id, "criterion_id": rubric.criterion_id, "criteria_met": met}
            )
    return rows


def _run(tmp_path: Path, rows: list[dict], *extra: str) -> tuple[int, dict, Path]:
    verdicts = _write(tmp_path / "verdicts.jsonl", rows)
    out = tmp_path / "run"
    argv = ["run", "clinconsensus", "--model", f"predictions:{verdicts}", "--cases", str(FIXTURE)]
    code = main([*argv, "--output-dir", str(out), "--limit", "4", *extra])
    results = json.loads((out / "results.json").read_text())["clinconsensus"]
    return code, results, out


def test_score_verdicts_file_hand_computed(tmp_path: Path) -> None:
    s = [30, 7, 6, 10]
    code, res, out = _run(tmp_path, _verdict_rows(s))
    assert code == 0
    assert res["fixture"] is True and res["source"] == "verdicts-file"
    assert res["n_cases"] == 4 and res["n_cases_scored"] == 4
    assert res["cacs@7"] == pytest.approx(100 * 29 / 96)
    assert res["cacs@10"] == pytest.approx(100 * 22 / 84)
    assert res["pass@7"] == 0.75
    assert res["rubric_accuracy"] == pytest.approx(53 / 120)
    assert res["judge_errors"] == 0 and res["judge_error_rate"] == 0.0
    assert res["curve"]["share_at_least"][7] == 0.75
    low, high = res["cacs@7_ci95"]
    assert low <= res["cacs@7"] <= high
    by_role = res["slices"]["user_role"]
    assert sum(v["n_cases"] for v in by_role.values()) == 4
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert [r["s"] for r in samples] == s
    first = samples[0]
    assert {"id", "difficulty", "subject", "case_task", "user_role", "query"} <= set(first)
    assert first["task"] == "clinconsensus" and first["case_task"] == "诊断与鉴别诊断"
    assert "answer" in first
    assert len(first["verdicts"]) == 30
    assert set(first["verdicts"][0]) >= {"criterion_id", "criterion", "met", "explanation", "judge"}
    # re-scoring from the store gives the same results
    assert main(["score", str(out)]) == 0
    again = json.loads((out / "results.json").read_text())["clinconsensus"]
    assert again == res


def test_judge_errors_excluded_reported_and_bounded(tmp_path: Path) -> None:
    s = [30, 7, 6, 10]
    # case 0: its last 3 criteria have null verdicts -> 27 met of 27 judged; with a missing
    # verdict its s is unknown, so it is left out of the case-level metrics
    code, res, _ = _run(tmp_path, _verdict_rows(s, errors={0: 3}))
    assert code == 1  # 3 / 120 = 2.5% > the default bound of 2%, results still written
    assert res["judge_errors"] == 3
    assert res["judge_error_rate"] == pytest.approx(3 / 120)
    assert res["n_cases_scored"] == 3
    # cases 1-3 only: k=7 terms 1, 0, 4 -> 100 * 5 / (3 * 24)
    assert res["cacs@7"] == pytest.approx(100 * 5 / 72)
    assert res["rubric_accuracy"] == pytest.approx((27 + 23) / 117)
    # 2 errors (1.7%) are within the bound
    (tmp_path / "second").mkdir()
    code, res, _ = _run(tmp_path / "second", _verdict_rows(s, errors={0: 2}))
    assert code == 0 and res["judge_errors"] == 2


def test_judge_errors_as_unmet_and_raised_bound(tmp_path: Path) -> None:
    s = [30, 7, 6, 10]
    code, res, _ = _run(
        tmp_path,
        _verdict_rows(s, errors={0: 3}),
        "--judge-errors-as-unmet",
        "--max-judge-error-rate",
        "0.05",
    )
    assert code == 0
    assert res["judge_errors_as_unmet"] is True and res["judge_errors"] == 3
    s_unmet = np.array([27, 7, 6, 10])
    assert res["cacs@7"] == pytest.approx(100 * np.maximum(0, s_unmet - 6).sum() / 96)
    assert res["rubric_accuracy"] == pytest.approx(50 / 120)


def test_bad_verdicts_file_exits_2_naming_line(tmp_path: Path, capsys) -> None:
    rows = _verdict_rows([1])
    rows[5]["criteria_met"] = "yes"
    verdicts = _write(tmp_path / "verdicts.jsonl", rows)
    argv = ["run", "clinconsensus", "--model", "baseline:none", "--verdicts", str(verdicts)]
    code = main([*argv, "--cases", str(FIXTURE), "--output-dir", str(tmp_path / "o")])
    assert code == 2
    assert f"{verdicts}:6:" in capsys.readouterr().err


def test_missing_cases_source_is_input_error(tmp_path: Path, capsys) -> None:
    predictions = tmp_path / "x.jsonl"  # exists: the missing piece is the cases file
    predictions.write_text("")
    argv = ["run", "clinconsensus", "--model", f"predictions:{predictions}"]
    argv += ["--data-dir", str(tmp_path)]
    assert main([*argv, "--output-dir", str(tmp_path / "o")]) == 2
    assert "clinconsensus_low.jsonl" in capsys.readouterr().err


def test_options_k_bootstrap_and_unknown(tmp_path: Path, capsys) -> None:
    s = [30, 7, 6, 10]
    opts = ["--option", "clinconsensus.k=3,30", "--option", "clinconsensus.bootstrap=0"]
    code, res, _ = _run(tmp_path, _verdict_rows(s), *opts)
    assert code == 0
    # k=3: max(0, s-2) = 28, 5, 4, 8 -> 45; 100 * 45 / (4 * 28)
    assert res["cacs@3"] == pytest.approx(100 * 45 / 112)
    assert res["cacs@30"] == pytest.approx(100 * 1 / 4)  # only s=30 scores, 1 / (N-k+1) = 1
    assert res["pass@3"] == 1.0
    assert not [k for k in res if k.endswith("_ci95")]
    (tmp_path / "x").mkdir()
    argv = ["run", "clinconsensus", "--model", "predictions:v.jsonl", "--cases", str(FIXTURE)]
    code = main([*argv, "--option", "clinconsensus.bogus=1", "-o", str(tmp_path / "x" / "o")])
    assert code == 2
    assert "clinconsensus.bogus" in capsys.readouterr().err


def test_reimport_replaces_earlier_verdicts_and_missing_rows_are_errors(tmp_path: Path) -> None:
    s = [30, 7, 6, 10]
    rows = _verdict_rows(s)
    code, first, out = _run(tmp_path, rows)
    assert code == 0 and first["judge_errors"] == 0
    # the same run directory, the file now lacks case 0's first 3 rows: they become judge
    # errors (not the stale "met" verdicts of the first import)
    code, again, _ = _run(tmp_path, rows[3:], "--max-judge-error-rate", "0.05")
    assert code == 0
    assert again["judge_errors"] == 3 and again["n_cases_scored"] == 3
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert [r["id"] for r in samples] == [f"fixture-00{i}" for i in range(1, 5)]  # rewritten
    errors = [v["error"] for v in samples[0]["verdicts"][:3]]
    assert errors == ["no row in the verdicts file"] * 3


def test_a_renamed_copy_of_the_fixture_is_still_reported_as_fixture(tmp_path: Path) -> None:
    cases = tmp_path / "clinconsensus_low.jsonl"
    cases.write_bytes(FIXTURE.read_bytes())
    verdicts = _write(tmp_path / "verdicts.jsonl", _verdict_rows([30, 7, 6, 10]))
    out = tmp_path / "run"
    argv = ["run", "clinconsensus", "--model", f"predictions:{verdicts}", "--cases", str(cases)]
    assert main([*argv, "--output-dir", str(out), "--limit", "4"]) == 0
    assert json.loads((out / "results.json").read_text())["clinconsensus"]["fixture"] is True


def test_no_scored_case_writes_strict_json(tmp_path: Path) -> None:
    """Every case has a null verdict, so no case is scored: nulls, never NaN, in results."""

    def reject(constant: str) -> None:
        raise AssertionError(f"{constant} in results.json")

    verdicts = _write(tmp_path / "verdicts.jsonl", _verdict_rows([5, 5], errors={0: 1, 1: 1}))
    out = tmp_path / "run"
    argv = ["run", "clinconsensus", "--model", f"predictions:{verdicts}", "--cases", str(FIXTURE)]
    main([*argv, "--output-dir", str(out), "--limit", "2", "--max-judge-error-rate", "1"])
    text = (out / "results.json").read_text()
    res = json.loads(text, parse_constant=reject)["clinconsensus"]
    assert res["n_cases_scored"] == 0 and res["cacs@7"] is None
    assert res["curve"]["share_at_least"] == [None] * 31


def test_judge_errors_name_the_flag_and_score_recounts_them_without_a_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every case holds a judge error: CACS@7 is empty, and the one line says what to do
    (`clineval score DIR --judge-errors-as-unmet`); that re-score, with no model, fills it in
    and records the setting in the manifest. A setting that changes what a model is asked
    stays refused by `score`, naming the option."""
    code, res, out = _run(tmp_path, _verdict_rows([30, 7, 6, 10], errors={0: 1, 1: 1, 2: 1, 3: 1}))
    assert code == 1 and res["cacs@7"] is None and res["n_cases_scored"] == 0
    captured = capsys.readouterr()
    err = captured.err
    # the failed bound ends the run as a success does: the table first, then the error line
    assert re.search(r"^clinconsensus \(fixture\)\s+0\.\d{4}", captured.out, re.M)
    assert f"run directory: {out}" in captured.out
    assert f"clineval score {out} --judge-errors-as-unmet" in err
    assert res["judge_errors_hint"].startswith("4 of 4 case(s) hold a judge error")
    assert "clineval score RUN_DIR --judge-errors-as-unmet" in res["judge_errors_hint"]
    # a verdicts file has no judge: no call to retry, the file is what can fill the gaps
    assert "retry the failed judge calls" not in err + res["judge_errors_hint"]
    assert "missing verdicts in the verdicts file" in res["judge_errors_hint"]

    argv = ["score", str(out), "--judge-errors-as-unmet", "--max-judge-error-rate", "0.5"]
    assert main([*argv, "--option", "clinconsensus.k=3"]) == 0
    res = json.loads((out / "results.json").read_text())["clinconsensus"]
    assert res["judge_errors_as_unmet"] is True and res["n_cases_scored"] == 4
    assert res["cacs@7"] == pytest.approx(100 * (23 + 1 + 0 + 4) / 96)  # s = 29, 7, 6, 10
    assert "cacs@3" in res and "judge_errors_hint" not in res
    config = json.loads((out / "manifest.json").read_text())["config"]
    assert config["judge_errors_as_unmet"] is True and config["max_judge_error_rate"] == 0.5
    # the scoring option joins the run's own (its cases file, given as --cases)
    assert config["options"] == {"clinconsensus.cases": str(FIXTURE), "clinconsensus.k": "3"}
    capsys.readouterr()

    assert main(["score", str(out), "--option", "clinconsensus.judge_max_tokens=9"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --option clinconsensus.judge_max_tokens: score only changes")
    assert err.count("\n") == 1
    assert main(["score", str(out), "--max-judge-error-rate", "nan"]) == 2
    assert "--max-judge-error-rate" in capsys.readouterr().err


def test_the_python_api_rescores_with_the_same_settings(tmp_path: Path) -> None:
    """clineval.score takes the scoring-only settings the command takes; the figures are the
    hand-computed ones of the test above (s = 29, 7, 6, 10 once errors count as unmet)."""
    import clineval

    code, res, out = _run(tmp_path, _verdict_rows([30, 7, 6, 10], errors={0: 1, 1: 1, 2: 1, 3: 1}))
    assert code == 1 and res["cacs@7"] is None
    result = clineval.score(
        out, judge_errors_as_unmet=True, max_judge_error_rate=0.5, options={"clinconsensus.k": 3}
    )
    metrics = result["clinconsensus"]
    assert metrics.cacs_at_7 == pytest.approx(100 * (23 + 1 + 0 + 4) / 96)
    assert metrics.get("cacs@3") is not None and result.manifest["config"]["judge_errors_as_unmet"]
    with pytest.raises(clineval.InputError, match="judge_max_tokens"):
        clineval.score(out, options=["clinconsensus.judge_max_tokens=9"])
