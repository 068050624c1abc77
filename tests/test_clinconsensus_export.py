"""`clineval export`: a ClinConsensus run as the authors' judgements file, and samples as CSV.

The exported file is checked by `official_scores` below, which restates the official format
and scoring from the authors' README and the documented behaviour of their eval_cacs.py (one
JSON list aligned with the cases file, ids by case_id / id / prompt_id / position, the first
of criteria_results / rubric_results / rubric_judgments, 30 Boolean criteria_met per case,
CACS over the 30 criteria of a case). It shares no code with clineval's own reader.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from clineval.benchmarks.clinconsensus.cases import fixture_path
from clineval.cli import main

THRESHOLDS = (7, 10)


# ---- the official format and scorer, restated independently --------------------------------
def _official_id(item: dict[str, Any], index: int) -> str:
    for key in ("case_id", "id"):
        text = str(item.get(key, "")).strip()
        if text:
            return text
    prompt = str(item.get("prompt_id", "")).strip()
    number = int(prompt) if prompt.isdigit() else index + 1
    return "CC-%04d" % number  # noqa: UP031 - the id scheme as the README's data uses it


def _official_list(item: dict[str, Any]) -> list[dict[str, Any]]:
    for key in ("criteria_results", "rubric_results", "rubric_judgments"):
        if isinstance(item.get(key), list):
            return [e for e in item[key] if isinstance(e, dict)]
    return []


def _figures(scores: list[int], entries: int, per_case: int, k: int) -> dict[str, float]:
    levels = range(k, per_case + 1)
    survival = [sum(s >= level for s in scores) / len(scores) for level in levels]
    return {
        "cases": len(scores),
        "rubric_accuracy": sum(scores) / entries,
        "pass": sum(s >= k for s in scores) / len(scores),
        "cacs": 100 * sum(survival) / len(survival),
    }


def official_scores(judged: Path, cases_path: Path, k: int) -> dict[str, dict[str, float]]:
    """{slice: figures} as the official scorer computes them: overall, by difficulty and by
    each subject label. Asserts the file has the documented shape."""
    cases = [json.loads(x) for x in cases_path.read_text("utf-8").splitlines() if x.strip()]
    by_id = {str(c["case_id"]): c for c in cases}
    data = json.loads(judged.read_text("utf-8"))
    assert judged.name.endswith("_judge.json")
    assert isinstance(data, list) and len(data) == len(cases), "one item per case, in order"
    groups: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for index, item in enumerate(data):
        assert isinstance(item, dict)
        case = by_id[_official_id(item, index)]
        entries = _official_list(item)
        assert len(entries) == len(case["rubrics"]) == 30
        assert all(isinstance(e["criteria_met"], bool) for e in entries), "Boolean decisions"
        positive = sum(e["criteria_met"] is True for e in entries)
        row = (positive, len(entries))
        groups["overall"].append(row)
        groups[str(case["difficulty"])].append(row)
        for label in case["subject_labels"]:
            groups[f"subject:{label}"].append(row)
    return {
        name: _figures([p for p, _ in rows], sum(n for _, n in rows), 30, k)
        for name, rows in groups.items()
    }


# ---- runs to export -----------------------------------------------------------------------
def cc_cases(tmp_path: Path) -> Path:
    """The fixture cases renamed CC-0001.. (the official id scheme)."""
    rows = [json.loads(x) for x in fixture_path().read_text("utf-8").splitlines()]
    for i, row in enumerate(rows):
        row["case_id"] = f"CC-{i + 1:04d}"
    path = tmp_path / "fixture_cc_cases.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return path


def verdict_rows(cases_path: Path) -> list[dict[str, Any]]:
    """Deterministic verdicts with a spread of s and some judge errors (null)."""
    rows = []
    for i, line in enumerate(cases_path.read_text("utf-8").splitlines()):
        case = json.loads(line)
        for j, rubric in enumerate(case["rubrics"]):
            code = (7 * i + 3 * j + i * j) % 11
            met: bool | None = None if (i + j) % 37 == 5 else code < 3 + i % 6
            rows.append(
                {
                    "case_id": case["case_id"],
                    "criterion_id": rubric["criterion_id"],
                    "criteria_met": met,
                }
            )
    return rows


def run_verdicts(tmp_path: Path, cases: Path, name: str, *extra: str) -> Path:
    verdicts = tmp_path / "verdicts.jsonl"
    if not verdicts.exists():
        verdicts.write_text("".join(json.dumps(r) + "\n" for r in verdict_rows(cases)), "utf-8")
    out = tmp_path / name
    argv = ["run", "clinconsensus", "--verdicts", str(verdicts), "--cases", str(cases)]
    assert main([*argv, "-o", str(out), "--max-judge-error-rate", "1", *extra]) == 0
    return out


def results(run: Path) -> dict[str, Any]:
    return json.loads((run / "results.json").read_text("utf-8"))["clinconsensus"]


def assert_matches_official(res: dict[str, Any], judged: Path, cases: Path) -> None:
    for k in THRESHOLDS:
        official = official_scores(judged, cases, k)
        overall = official.pop("overall")
        assert res[f"cacs@{k}"] == pytest.approx(overall["cacs"], abs=1e-9)
        assert res[f"pass@{k}"] == pytest.approx(overall["pass"], abs=1e-12)
        assert res["rubric_accuracy"] == pytest.approx(overall["rubric_accuracy"], abs=1e-12)
        for name, figures in official.items():
            kind, _, label = name.partition(":")
            mine = (
                res["slices"]["subject_labels"][label]
                if label
                else res["slices"]["difficulty"][kind]
            )
            assert mine["n_cases"] == figures["cases"], name
            assert mine[f"cacs@{k}"] == pytest.approx(figures["cacs"], abs=1e-9), name
            assert mine[f"pass@{k}"] == pytest.approx(figures["pass"], abs=1e-12), name
            assert mine["rubric_accuracy"] == pytest.approx(figures["rubric_accuracy"]), name


# ---- export -> official format -> the same numbers; read back -> the same numbers ------------
def test_export_is_scored_by_the_official_rules_as_clineval_scores_it(tmp_path: Path) -> None:
    cases = cc_cases(tmp_path)
    plain = run_verdicts(tmp_path, cases, "run")
    unmet = run_verdicts(tmp_path, cases, "run-unmet", "--judge-errors-as-unmet")
    assert results(plain)["judge_errors"] > 0  # the export has judge errors to carry
    out = tmp_path / "judged"
    assert main(["export", str(plain), "--format", "clinconsensus-judgements", "-o", str(out)]) == 0
    judged = out / "verdicts_judge.json"  # named after the verdicts file the run scored
    assert [p.name for p in out.iterdir()] == [judged.name]
    # the official reading equals clineval with --judge-errors-as-unmet, overall and per slice
    assert_matches_official(results(unmet), judged, cases)
    item = json.loads(judged.read_text("utf-8"))[0]
    assert item["case_id"] == "CC-0001" and len(item["criteria_results"]) == 30
    errors = [e for e in item["criteria_results"] if "error" in e]
    assert errors and all(e["criteria_met"] is False for e in errors)

    # read back: the same results as the run it came from, with and without the flag
    for source, extra in ((plain, ()), (unmet, ("--judge-errors-as-unmet",))):
        back = tmp_path / f"back-{source.name}"
        argv = ["run", "clinconsensus", "--model", f"predictions:{judged}", "--cases", str(cases)]
        assert main([*argv, "-o", str(back), "--max-judge-error-rate", "1", *extra]) == 0
        again, first = results(back), results(source)
        assert again["judge_errors"] == first["judge_errors"]
        for key in ("cacs@7", "cacs@10", "pass@7", "rubric_accuracy", "curve", "slices"):
            assert again[key] == first[key], key


def test_export_of_a_judge_panel_uses_the_aggregate(tmp_path: Path) -> None:
    """Two judges behind a stub server: the exported verdicts are the majority's."""
    from llm_stub_server import StubServer

    cases = cc_cases(tmp_path)
    with StubServer() as stub:
        url = stub.base_url
        out = tmp_path / "panel"
        argv = ["run", "clinconsensus", "--model", f"openai:cand@{url}", "--cases", str(cases)]
        argv += ["--judge", f"openai:j1@{url}", "--judge", f"openai:j2@{url}"]
        argv += ["--judge-errors-as-unmet", "--option", "clinconsensus.bootstrap=0"]
        assert main([*argv, "-o", str(out)]) == 0
    res = results(out)
    assert res["aggregate"] == "majority" and res["aggregate_ties"] > 0
    target = tmp_path / "judged"
    assert (
        main(["export", str(out), "--format", "clinconsensus-judgements", "-o", str(target)]) == 0
    )
    judged = target / "openai_cand_judge.json"
    assert_matches_official(res, judged, cases)
    item = json.loads(judged.read_text("utf-8"))[0]
    assert item["response"]  # the candidate's answer travels with its verdicts


def test_export_from_a_subprocess_and_samples_csv(tmp_path: Path) -> None:
    cases = cc_cases(tmp_path)
    run = run_verdicts(tmp_path, cases, "run")
    command = [sys.executable, "-m", "clineval", "export", str(run), "-o", str(tmp_path / "x")]
    done = subprocess.run([*command, "--format", "samples-csv"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    with open(tmp_path / "x" / "clinconsensus.samples.csv", encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    samples = [json.loads(x) for x in (run / "samples.jsonl").read_text("utf-8").splitlines()]
    assert len(rows) == len(samples) == 12
    assert rows[3]["id"] == "CC-0004" and int(rows[3]["s"]) == samples[3]["s"]
    assert json.loads(rows[3]["verdicts"]) == samples[3]["verdicts"]  # a list: its JSON text
    assert json.loads(rows[3]["subject_labels"]) == samples[3]["subject_labels"]
    named = [*command, "--format", "clinconsensus-judgements", "--name", "my-model.v2"]
    done = subprocess.run(named, capture_output=True, text=True)
    assert done.returncode == 0 and (tmp_path / "x" / "my-model.v2_judge.json").is_file()


# ---- what cannot be exported: one line, exit 2, nothing written -----------------------------
def test_export_refusals(tmp_path: Path, capsys) -> None:
    cases = cc_cases(tmp_path)
    run = run_verdicts(tmp_path, cases, "run")
    partial = run_verdicts(tmp_path, cases, "limited", "--limit", "5")
    smoke = run_verdicts(tmp_path, cases, "smoke", "--option", "clinconsensus.max_criteria=3")
    out = tmp_path / "out"
    fmt = ["--format", "clinconsensus-judgements", "-o", str(out)]
    for argv, message in [
        (["export", str(partial), *fmt], "the run covers 5 of the 12 cases"),
        (["export", str(smoke), *fmt], "judged 3 criteria per case"),
        (["export", str(run), "--format", "xlsx", "-o", str(out)], "--format 'xlsx' is not"),
        (["export", str(tmp_path), *fmt], "not a clineval run directory"),
        (["export", str(run), *fmt, "--name", "../up"], "--name '../up'"),
        (["export", str(run), *fmt, "--cases", str(tmp_path / "no.jsonl")], "not found"),
        (["export", str(run), "--format", "samples-csv", "-o", str(out), "--name", "a"], "--name"),
    ]:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip()
        assert err.startswith("error: ") and message in err and "\n" not in err, err
    assert not out.exists()
    # --cases holding exactly the run's cases makes a --limit run exportable
    first5 = tmp_path / "fixture_first5.jsonl"
    first5.write_text("".join(cases.read_text("utf-8").splitlines(True)[:5]), "utf-8")
    assert main(["export", str(partial), *fmt, "--cases", str(first5)]) == 0
    assert len(json.loads((out / "verdicts_judge.json").read_text("utf-8"))) == 5


def test_export_names_a_moved_cases_file(tmp_path: Path, capsys) -> None:
    cases = cc_cases(tmp_path)
    run = run_verdicts(tmp_path, cases, "run")
    moved = cases.rename(tmp_path / "fixture_moved.jsonl")
    fmt = ["--format", "clinconsensus-judgements", "-o", str(tmp_path / "out")]
    assert main(["export", str(run), *fmt]) == 2
    assert "pass --cases FILE" in capsys.readouterr().err
    assert main(["export", str(run), *fmt, "--cases", str(moved)]) == 0
