"""The HTML report without a browser: escaping, structure, robustness to missing pieces."""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
import report_synthetic as synthetic

from clineval.benchmarks.ner.report import classify
from clineval.cli import main
from clineval.errors import InputError
from clineval.report.html import render_report, write_report
from clineval.report.jsonembed import script_json, script_payload
from clineval.reportkit.rundata import interval_of, load_run
from clineval.rundir import write_json, write_jsonl


class _Scan(HTMLParser):
    """Collects every element with its attributes, and the text of script elements."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self._in_script: dict[str, str | None] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))
        if tag == "script":
            self._in_script = dict(attrs)
            self.scripts.append((dict(attrs), ""))

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = None

    def handle_data(self, data: str) -> None:
        if self._in_script is not None:
            attrs, text = self.scripts[-1]
            self.scripts[-1] = (attrs, text + data)


def _scan(html: str) -> _Scan:
    scan = _Scan()
    scan.feed(html)
    return scan


@pytest.fixture(scope="module")
def hostile_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("synthetic-runs")
    return {
        "tcm": synthetic.tcm_run(base / "synthetic-tcm", n=400, hostile=True),
        "ner": synthetic.ner_run(base / "synthetic-ner", n_docs=30, hostile=True),
        "cc": synthetic.cc_run(base / "synthetic-cc", n_cases=20, hostile=True),
    }


def test_script_json_cannot_close_its_element_and_round_trips() -> None:
    value = {"a": "</script><script>alert(1)</script>", "b": "<!-- x -->", "c": "a&b\u2028\u2029"}
    text = script_json(value)
    for bad in ("<", ">", "&", "\u2028", "\u2029"):
        assert bad not in text
    assert json.loads(text) == value
    assert script_json({"x": float("nan")}) == '{"x":null}'


def test_big_payloads_are_gzip_base64_and_round_trip() -> None:
    import base64
    import gzip

    value = {"rows": [{"answer": "</script>" + "中文" * 50}] * 20}
    assert script_payload(value)[0] == "json"
    encoding, text = script_payload(value, compress_over=0)
    assert encoding == "gzip-base64"
    assert re.fullmatch(r"[A-Za-z0-9+/=]+", text)
    assert json.loads(gzip.decompress(base64.b64decode(text))) == value


@pytest.fixture(scope="module")
def rendered(hostile_runs: dict[str, Path]) -> dict[str, str]:
    return {kind: render_report(load_run(path)) for kind, path in hostile_runs.items()}


@pytest.mark.parametrize("kind", ["tcm", "ner", "cc"])
def test_hostile_strings_never_become_markup(rendered: dict[str, str], kind: str) -> None:
    html = rendered[kind]
    scan = _scan(html)
    # Exactly one executable script (ours); every other script element is inert JSON data.
    executable = [a for a, _ in scan.scripts if a.get("type") != "application/json"]
    assert len(executable) == 1
    for attrs, text in scan.scripts:
        if attrs.get("type") == "application/json":
            if attrs.get("data-encoding") == "gzip-base64":  # compressed: base64 of gzip
                json.loads(gzip.decompress(base64.b64decode(text)))
            else:
                json.loads(text)  # the data block is intact JSON...
            assert "<" not in text  # ...that no HTML parser can end early
    # No element anywhere carries an event handler, and no injected element exists.
    for tag, attrs in scan.elements:
        assert not [k for k in attrs if k.lower().startswith("on")], (tag, attrs)
        assert tag != "img"
    assert (
        "window.__pwned"
        not in re.sub(r"<script type=\"application/json\".*?</script>", "", html, flags=re.S)
        or "&lt;script&gt;" in html
    )


def test_csp_allows_exactly_the_report_script(rendered: dict[str, str]) -> None:
    html = rendered["tcm"]
    scan = _scan(html)
    (script,) = [t for a, t in scan.scripts if a.get("type") != "application/json"]
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    csp = next(
        a["content"] for t, a in scan.elements if a.get("http-equiv") == "Content-Security-Policy"
    )
    assert f"script-src 'sha256-{digest}'" in csp
    assert "default-src 'none'" in csp  # no network: not even a favicon fetch


def test_sections_follow_the_data(rendered: dict[str, str]) -> None:
    html = rendered["tcm"]
    assert "Per-class F1" in html and "Most confused pairs" in html
    assert "Error examples in context" not in html and "Case browser" not in html
    ner = rendered["ner"]
    assert "Per-type precision / recall / F1" in ner and "Error examples in context" in ner
    cc = rendered["cc"]
    assert "Rubric hits per case" in cc and "Case browser" in cc and "By difficulty" in cc


def test_results_only_run_and_unknown_task(tmp_path: Path) -> None:
    write_json(
        tmp_path / "results.json",
        {"tcm-sd": {"macro_f1": 0.5, "accuracy": 0.25}, "mystery": {"score": 0.125}},
    )
    html = render_report(load_run(tmp_path))
    assert "0.5000" in html and "0.2500" in html and "0.1250" in html
    overview = html[html.index('id="overview"') : html.index('id="settings"')]
    assert 'href="#task-tcm-sd"' in overview and "<b>0.5000</b>" in overview
    assert 'href="#task-mystery"' in overview and "<b>0.1250</b>" in overview
    assert "FIXTURE" not in html  # nothing says fixture, so nothing is labelled so
    assert 'class="sample-table"' not in html  # no samples.jsonl: no table


def test_fixture_label_comes_from_flags_and_paths(tmp_path: Path) -> None:
    write_json(tmp_path / "results.json", {"clinconsensus": {"cacs@7": 50.0}})
    write_json(
        tmp_path / "manifest.json",
        {"config": {"model": "m", "cases": "/x/clinconsensus_fixture_cases.jsonl"}},
    )
    assert 'id="fixture-banner"' in render_report(load_run(tmp_path))


def test_ner_error_classes_by_hand() -> None:
    gold = [(0, 5, "drug"), (10, 20, "condition"), (30, 35, "drug"), (40, 45, "gene")]
    pred = [
        (0, 5, "drug"),  # correct
        (10, 18, "condition"),  # partial: right type, other offsets
        (30, 35, "condition"),  # incorrect: wrong type (same offsets)
        (50, 55, "drug"),  # spurious
    ]
    kinds = sorted((k, span) for k, span, _ in classify(gold, pred, ["drug", "condition", "gene"]))
    assert kinds == [
        ("incorrect", (30, 35, "condition")),
        ("missed", (40, 45, "gene")),
        ("partial", (10, 18, "condition")),
        ("spurious", (50, 55, "drug")),
    ]


def test_interval_spellings() -> None:
    m: dict[str, Any] = {
        "a_ci": [0.1, 0.2],
        "b_ci95": [0.3, 0.4],
        "ci": {"c": {"low": 0.5, "high": 0.6}},
        "d_ci": [None, 1.0],
    }
    assert interval_of(m, "a") == (0.1, 0.2)
    assert interval_of(m, "b") == (0.3, 0.4)
    assert interval_of(m, "c") == (0.5, 0.6)
    assert interval_of(m, "d") is None


def test_case_task_field_that_overwrote_the_run_task_is_recovered(tmp_path: Path) -> None:
    write_json(tmp_path / "results.json", {"clinconsensus": {"cacs@7": 10.0}})
    write_jsonl(tmp_path / "samples.jsonl", [{"task": "诊断", "id": "c1", "s": 9, "verdicts": []}])
    run = load_run(tmp_path)
    assert [r["case_task"] for r in run.samples["clinconsensus"]] == ["诊断"]


def test_bad_run_dirs_are_input_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not a run directory"):
        load_run(tmp_path / "nope")
    with pytest.raises(InputError, match=r"no results\.json"):
        load_run(tmp_path)
    (tmp_path / "results.json").write_text("{oops", encoding="utf-8")
    with pytest.raises(InputError, match="invalid JSON"):
        load_run(tmp_path)


def test_cli_report(hostile_runs: dict[str, Path], tmp_path: Path, capsys) -> None:
    out = tmp_path / "r.html"
    assert main(["report", str(hostile_runs["ner"]), "-o", str(out)]) == 0
    assert out.read_text(encoding="utf-8").startswith("<!doctype html>")
    assert main(["report", str(tmp_path / "missing")]) == 2
    assert "not a run directory" in capsys.readouterr().err


def test_report_is_deterministic_apart_from_the_timestamp(
    hostile_runs: dict[str, Path], tmp_path: Path
) -> None:
    a = write_report(hostile_runs["cc"], tmp_path / "a.html").read_text(encoding="utf-8")
    b = write_report(hostile_runs["cc"], tmp_path / "b.html").read_text(encoding="utf-8")
    strip = re.compile(r"generated \d{4}-\d\d-\d\d \d\d:\d\d")
    assert strip.sub("", a) == strip.sub("", b)


def test_plots_escape_labels_and_scale_bars_and_cells() -> None:
    from clineval.reportkit import plots

    labels = ["<script>alert(1)</script>", 'a" onmouseover="x', "脾虚证"]
    bars_svg = plots.horizontal_bars(
        labels,
        [0.5, 0.25, 1.0],
        [10, 5, 1],
        "t<b>",
        "F1",
        (0, 1),
        intervals=[(0.4, 0.6), None, None],
    )
    cells_svg = plots.heatmap(labels, labels, [[3, 1, 0], [0, 0, 0], [2, 0, 6]], "m<i>")
    for svg in (bars_svg, cells_svg):
        scan = _scan(svg)
        assert [t for t, _ in scan.elements if t == "script"] == []
        for _, attrs in scan.elements:
            assert not [k for k in attrs if k.startswith("on")]
        assert "&lt;script&gt;" in svg
    assert "t&lt;b&gt;" in bars_svg and "m&lt;i&gt;" in cells_svg
    scan = _scan(bars_svg)
    bars = [a for t, a in scan.elements if t == "rect" and a.get("fill") == plots.SERIES_COLORS[0]]
    # bar widths are proportional to the value (plot area 300 px wide)
    assert [float(a["width"]) for a in bars] == pytest.approx([150.0, 75.0, 300.0])
    whiskers = [a for t, a in scan.elements if t == "line" and a.get("class") == "interval"]
    assert len(whiskers) == 1  # one interval given, one drawn
    x1, x2 = float(whiskers[0]["x1"]), float(whiskers[0]["x2"])
    assert x2 - x1 == pytest.approx(300 * 0.2)
    assert "0.5 [0.4, 0.6] (n=10)" in bars_svg
    # one cell per count; the empty ones are drawn blank and carry no number
    cells = [a for t, a in _scan(cells_svg).elements if t == "rect"]
    assert len(cells) == 9
    assert sum(1 for a in cells if a.get("fill") == "#f7fafc") == 5
    from clineval.benchmarks.clinconsensus.report_figures import reverse_ecdf_plot

    curve = reverse_ecdf_plot([1.0, 0.5, 0.25, 0.0], [2], "c")
    assert "k=2: 0.25 of cases reach k" in curve


def test_judge_panel_tables(tmp_path: Path) -> None:
    metrics = {
        "cacs@7": 30.0,
        "aggregate": "majority",
        "per_judge": {"judge-a": {"cacs@7": 31.25, "rubric_accuracy": 0.5}, "<b>j": {}},
        "agreement": {
            "pairs": [
                {
                    "judges": ["judge-a", "<b>j"],
                    "n_items": 360,
                    "percent_agreement": 0.875,
                    "cohen_kappa": 0.625,
                }
            ],
            "mean_percent_agreement": 0.875,
            "mean_cohen_kappa": 0.625,
        },
    }
    write_json(tmp_path / "results.json", {"clinconsensus": metrics})
    html = render_report(load_run(tmp_path))
    assert "Each judge of the panel (aggregate: majority)" in html
    assert "<td>31.25</td>" in html and "<td>0.6250</td>" in html
    assert "&lt;b&gt;j" in html and "<b>j" not in html


def test_malformed_results_and_rows_still_give_a_report(tmp_path: Path) -> None:
    """Wrong types anywhere (an older or foreign writer): sections skip what they cannot read."""
    results = {
        "ner:x": {"token_macro_f1": 0.5, "per_type": {"a": "oops", "b": {"token": 3}}},
        "tcm-sd": {
            "macro_f1": float("nan"),
            "per_class": {"a": {"f1": None, "support": "x"}, "b": 5},
            "confusions": [1, [1, 2, "x"], {"gold": "a"}],
        },
        "clinconsensus": {"cacs@7": 10, "curve": "bad", "slices": {"difficulty": "x"}},
    }
    rows = [
        {"task": "ner:x", "id": 5, "gold": "oops", "pred": None, "text": 12},
        {
            "task": "ner:x",
            "gold": [[0, 99, "a"], ["x", 1, "b"]],
            "pred": [{"start": 1}],
            "text": "short",
        },
        {"task": "tcm-sd", "gold": None},
        {"task": "tcm-sd", "gold": "a", "pred": 3},
        {"task": "clinconsensus", "verdicts": "x", "s": "y"},
        {"task": "clinconsensus", "verdicts": [1, {"met": "yes"}], "s": 3},
        {"task": "zzz", "id": 1},
    ]
    write_json(tmp_path / "results.json", results)
    write_jsonl(tmp_path / "samples.jsonl", rows)
    html = render_report(load_run(tmp_path))
    assert html.count('class="task"') == 3
    from clineval.report.compare.build import build_comparison
    from clineval.report.compare.render import render_markdown

    text = render_markdown(build_comparison([tmp_path, tmp_path], n_resamples=20))
    assert "nan" not in text  # a NaN metric is left out, not ranked


def test_data_file_hashes_are_listed(tmp_path: Path) -> None:
    write_json(tmp_path / "results.json", {"ner:ncbi": {"token_macro_f1": 0.5}})
    notes = {
        "test_split": {"files": [{"path": "ner/x.txt", "sha256": "ab" * 32}]},
        "other": {"y.json": {"sha256": "cd" * 32}},
    }
    write_json(tmp_path / "manifest.json", {"config": {"model": "m"}, "tasks": {"ner:ncbi": notes}})
    html = render_report(load_run(tmp_path))
    table = html[
        html.index('id="data-hashes"') : html.index("</table>", html.index('id="data-hashes"'))
    ]
    assert "<td>ner/x.txt</td><td><code>" + "ab" * 32 in table
    assert "<td>other.y.json</td><td><code>" + "cd" * 32 in table
