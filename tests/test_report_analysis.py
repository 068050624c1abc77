"""The report's analysis views, checked by what a reader sees in a real browser.

Hand-made runs with counts worked out by hand: the NER error-kind table and the gold x
predicted type matrix, "show more" on the examples, sorting, the CSV download of the errors;
TCM-SD's sortable per-class table and confusion matrix; ClinConsensus's cases-scored notes,
slice intervals and criterion hit rates; a plugin's declared table in the generic section.
All runs here are SYNTHETIC fixtures.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import report_synthetic as synthetic
from report_browser import assert_nothing_ran, browser_session, open_report, shot

from clineval.benchmarks.declaration import Benchmark
from clineval.benchmarks.ner.report import classify, confusion
from clineval.metrics.schema import MetricSchema, MetricSpec
from clineval.report.html import write_report
from clineval.reportkit.sections_common import short_model_label
from clineval.rundir import MANIFEST, RESULTS, SAMPLES, write_json, write_jsonl

REFERENCES = Path(__file__).parent.parent / "examples" / "references" / "ncer-gliner-large.json"

# One document, every kind of outcome once (offsets end-exclusive):
#   gold (0,7 condition) = pred exact: correct; gold (12,19 drug) vs pred (12,17 drug):
#   partial; gold (24,31 condition) vs pred (24,31 drug): incorrect (booked under the gold
#   type, condition, as nervaluate does); pred (36,40 condition): spurious; gold (44,50 drug):
#   missed.
TEXT = "diabetes and insulin or asthma or word and aspirin"
GOLD = [[0, 7, "condition"], [12, 19, "drug"], [24, 31, "condition"], [44, 50, "drug"]]
PRED = [[0, 7, "condition"], [12, 17, "drug"], [24, 31, "drug"], [36, 40, "condition"]]


def _run(out: Path, task: str, metrics: dict[str, Any], rows: list[dict[str, Any]]) -> Path:
    out.mkdir(parents=True)
    manifest = {
        "clineval_version": "synthetic",
        "config": {"tasks": [task], "model": "llamacpp:/models/x/SmolLM2-135M.gguf", "seed": 0},
        "seed": 0,
        "status": "finished",
        "tasks": {task: {"synthetic": True}},
    }
    write_json(out / MANIFEST, manifest)
    write_json(out / RESULTS, {task: {"fixture": True, **metrics}})
    write_jsonl(out / SAMPLES, ({"task": task, **r} for r in rows))
    return out


def test_error_kinds_and_type_pairs_by_hand() -> None:
    gold = [tuple(s) for s in GOLD]
    pred = [tuple(s) for s in PRED]
    types = ["condition", "drug"]
    kinds = sorted((k, s[2]) for k, s, _ in classify(gold, pred, types))  # type: ignore[arg-type]
    assert kinds == [
        ("incorrect", "drug"),
        ("missed", "drug"),
        ("partial", "drug"),
        ("spurious", "condition"),
    ]
    assert confusion(gold, pred, types) == {  # type: ignore[arg-type]
        ("condition", "condition"): 1,
        ("drug", "drug"): 1,  # the boundary pair: same type
        ("condition", "drug"): 1,
        ("(none)", "condition"): 1,
        ("drug", "(none)"): 1,
    }


def test_short_model_labels() -> None:
    assert short_model_label("llamacpp:/models/x/SmolLM2-135M.gguf") == "llamacpp:SmolLM2-135M"
    assert short_model_label("hf:/ckpt/qwen2.5-7b/") == "hf:qwen2.5-7b"
    assert short_model_label("openai:gpt-4o@http://127.0.0.1:8000/v1") == (
        "openai:gpt-4o@http://127.0.0.1:8000/v1"
    )
    assert short_model_label("predictions:/tmp/a/preds.jsonl") == "predictions:preds"
    assert short_model_label("baseline:crf") == "baseline:crf"
    # one file per task: each task's file, not the last item's
    per_task = "predictions:ner:ncbi=/p/ncbi_out.jsonl, ner:chia = /q/chia_predictions.jsonl"
    assert short_model_label(per_task) == (
        "predictions:ner:ncbi=ncbi_out, ner:chia=chia_predictions"
    )
    # a path holding "=" or a URL with a query is one file / one server, as before
    assert short_model_label("predictions:/data/a=b,c.jsonl") == "predictions:a=b,c"
    assert short_model_label("openai:m@http://127.0.0.1:8000/v1?api-version=2") == (
        "openai:m@http://127.0.0.1:8000/v1?api-version=2"
    )


def test_the_report_header_names_each_tasks_file(tmp_path: Path) -> None:
    run = _run(tmp_path / "run", "x:a", {"accuracy": 0.5}, [{"id": "1", "correct": True}])
    manifest = json.loads((run / MANIFEST).read_text())
    manifest["config"]["model"] = "predictions:x:a=/in/a_preds.jsonl,x:b=/in/b_preds.jsonl"
    write_json(run / MANIFEST, manifest)
    page = write_report(run, tmp_path / "report.html").read_text(encoding="utf-8")
    header = page.split("</header>", 1)[0]
    assert "predictions:x:a=a_preds, x:b=b_preds" in header


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    yield from browser_session()


def _table(driver: Any, anchor: str, title: str) -> list[list[str]]:
    """The visible cells of a section's table, found by its title."""
    from selenium.webdriver.common.by import By

    block = driver.find_element(By.CSS_SELECTOR, f'#{anchor} .block[data-block="{title}"]')
    return [
        [c.text for c in tr.find_elements(By.CSS_SELECTOR, "th, td")]
        for tr in block.find_elements(By.CSS_SELECTOR, "tr")
    ]


@pytest.mark.browser
def test_ner_error_tables_examples_sorting_download(driver: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    rows = [{"id": "doc-1", "text": TEXT, "gold": GOLD, "pred": PRED}]
    # 9 more documents, each with one false positive, so there are 10 in all: 3 open, 7 more
    for i in range(2, 11):
        rows.append({"id": f"doc-{i}", "text": TEXT, "gold": [], "pred": [[0, 7, "condition"]]})
    metrics = {
        "token_macro_f1": 0.5,
        "span_partial_f1": 0.625,
        "per_type": {"condition": {"f1": 0.5}, "drug": {"f1": 0.5}},
    }
    run = _run(tmp_path / "ner", "ner:bc5cdr", metrics, rows)
    report = write_report(run, run / "report.html", reference_files=[REFERENCES])
    open_report(driver, report)
    assert_nothing_ran(driver)
    anchor = "task-ner-bc5cdr"
    counts = _table(driver, anchor, "Span outcomes by kind and entity type")
    assert counts[0] == [
        "type",
        "correct",
        "incorrect",
        "partial",
        "missed",
        "spurious",
        "all errors",
    ]
    assert counts[1:] == [
        ["condition", "1", "1", "0", "0", "10", "11"],
        ["drug", "0", "0", "1", "1", "0", "2"],
        ["all types", "1", "1", "1", "1", "10", "13"],
    ]
    matrix = _table(driver, anchor, "Gold x predicted type")
    assert matrix[0] == ["", "predicted condition", "predicted drug", "predicted (none)"]
    assert matrix[1:] == [
        ["gold condition", "1", "1", "0"],
        ["gold drug", "0", "1", "1"],
        ["gold (none)", "10", "0", "0"],
    ]
    # the error-kind table comes before the per-type figures and the examples
    text = driver.find_element(By.ID, anchor).text
    assert (
        text.index("Span outcomes by kind")
        < text.index("Per-type precision")
        < text.index("Error examples in context")
    )
    fp = driver.find_element(By.CSS_SELECTOR, f'#{anchor} .error-group[data-kind="spurious"]')
    visible = [e for e in fp.find_elements(By.CSS_SELECTOR, ".example") if e.is_displayed()]
    assert len(visible) == 3
    fp.find_element(By.CSS_SELECTOR, "details.more summary").click()
    visible = [e for e in fp.find_elements(By.CSS_SELECTOR, ".example") if e.is_displayed()]
    assert len(visible) == 10
    # sort the documents by their error count: doc-1 (4 errors) first when descending
    header = driver.find_elements(By.CSS_SELECTOR, f"#{anchor} table.samples thead th")
    errors_th = next(h for h in header if h.text.startswith("errors"))
    errors_th.click()
    first = driver.find_element(By.CSS_SELECTOR, f"#{anchor} table.samples tbody tr")
    assert first.text.startswith("doc-1 ")
    assert errors_th.get_attribute("aria-sort") == "descending"
    errors_th.click()
    first = driver.find_element(By.CSS_SELECTOR, f"#{anchor} table.samples tbody tr")
    assert not first.text.startswith("doc-1 ")
    # the errors as a file, downloaded for real: every error once, with its document and kind
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    driver.execute_cdp_cmd(
        "Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)}
    )
    link = driver.find_element(By.CSS_SELECTOR, f"#{anchor} .download a")
    assert link.get_attribute("download") == "ner-bc5cdr-errors.csv"
    assert link.get_attribute("href").startswith("blob:")  # made in the page, no request
    link.click()
    target = downloads / "ner-bc5cdr-errors.csv"
    WebDriverWait(driver, 20).until(lambda d: target.exists())
    table = list(csv.DictReader(io.StringIO(target.read_text(encoding="utf-8"))))
    assert len(table) == 13
    assert sorted((r["doc"], r["kind"]) for r in table if r["doc"] == "doc-1") == [
        ("doc-1", "incorrect"),
        ("doc-1", "missed"),
        ("doc-1", "partial"),
        ("doc-1", "spurious"),
    ]
    miss = next(r for r in table if r["kind"] == "missed")
    assert (miss["type"], miss["start"], miss["end"], miss["text"]) == (
        "drug",
        "44",
        "50",
        "spirin",
    )
    # the published figure from the reference file stands under the run's own, labelled
    partial = driver.find_element(
        By.CSS_SELECTOR, f'#{anchor} .card[data-metric="span_partial_f1"]'
    )
    assert "GLiNER large v2.5 (NCER leaderboard): 0.8023 (NCER benchmark" in partial.text
    overview = driver.find_element(By.CSS_SELECTOR, "#overview tr.reference")
    assert overview.text.startswith("ner:bc5cdr · GLiNER large v2.5") and "0.8023" in overview.text
    # the header names the model by its file, not its whole path
    assert driver.find_element(By.ID, "run-model").text == "llamacpp:SmolLM2-135M"
    assert_nothing_ran(driver)
    shot(driver, "report-analysis-ner.png")


@pytest.mark.browser
def test_tcm_per_class_sorting_and_confusions(driver: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    run = synthetic.tcm_run(tmp_path / "synthetic-tcm", n=600)
    report = write_report(run, run / "report.html")
    open_report(driver, report)
    anchor = "task-tcm-sd"
    block = driver.find_element(By.CSS_SELECTOR, f'#{anchor} .block[data-block^="Per-class"]')
    f1_header = next(h for h in block.find_elements(By.CSS_SELECTOR, "th") if h.text == "F1")
    f1_header.click()  # first click: highest first
    values = [
        float(tr.find_elements(By.CSS_SELECTOR, "td")[-1].text)
        for tr in block.find_elements(By.CSS_SELECTOR, "tbody tr")
    ]
    assert values == sorted(values, reverse=True) and values[0] > values[-1]
    titles = [t.text for t in driver.find_elements(By.CSS_SELECTOR, f"#{anchor} .plot-box h3")]
    assert "Per-class F1" in titles and "Confusions" in titles
    # the per-class bars are horizontal: one row per class with test samples, none rotated
    bars = driver.find_element(By.XPATH, f'//*[@id="{anchor}"]//h3[text()="Per-class F1"]/..')
    assert "rotate" not in bars.get_attribute("innerHTML")
    assert_nothing_ran(driver)


@pytest.mark.browser
def test_clinconsensus_cases_scored_intervals_hits(driver: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    run = synthetic.cc_run(tmp_path / "synthetic-cc", n_cases=60)
    # 15 of the 60 cases with a judge error: CACS stands on the other 45, and says so
    results = json.loads((run / RESULTS).read_text(encoding="utf-8"))
    results["clinconsensus"]["n_cases_scored"] = 45
    write_json(run / RESULTS, results)
    report = write_report(run, run / "report.html")
    open_report(driver, report)
    anchor = "task-clinconsensus"
    for key in ("cacs@7", "pass@7"):
        card = driver.find_element(By.CSS_SELECTOR, f'#{anchor} .card[data-metric="{key}"]')
        assert "on 45 of 60 cases (the rest have a judge error)" in card.text
    slice_svgs = driver.find_elements(By.CSS_SELECTOR, f"#{anchor} svg line.interval")
    assert slice_svgs, "slice bars carry interval whiskers"
    hits = driver.find_element(By.CSS_SELECTOR, f'#{anchor} .block[data-block^="Most unmet"]')
    assert hits.is_displayed() and "hit rate" in hits.text
    assert_nothing_ran(driver)


@pytest.mark.browser
def test_plugin_declared_table_and_every_field(driver: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    from clineval.benchmarks import registry

    bench = Benchmark(
        family="synthetic-codes",
        title="synthetic multi-label coding",
        tasks=("synthetic-codes",),
        make_task=lambda name: None,  # type: ignore[arg-type,return-value]
        metrics=MetricSchema(
            (MetricSpec("hamming_loss", higher_is_better=False), MetricSpec("n", count=True)),
            tables=("per_code",),
        ),
    )
    registry.register(bench)
    try:
        codes = [{"code": "I10", "gold": True, "predicted": True}, {"code": "E11", "gold": True}]
        rows = [
            {"id": f"s{i}", "gold": ["I10", "E11"], "pred": ["I10"], "loss": 0.5 / (i + 1),
             "note": "ok", "codes": codes}
            for i in range(3)
        ]  # fmt: skip
        metrics = {
            "hamming_loss": 0.25,
            "n": 3,
            "per_code": {"I10": {"f1": 1.0, "support": 3}, "E11": {"f1": 0.0, "support": 3}},
        }
        run = _run(tmp_path / "plugin", "synthetic-codes", metrics, rows)
        report = write_report(run, run / "report.html")
    finally:
        registry.unregister("synthetic-codes")
    open_report(driver, report)
    anchor = "task-synthetic-codes"
    loss = driver.find_element(By.CSS_SELECTOR, f'#{anchor} .card[data-metric="hamming_loss"]')
    assert loss.text.startswith("hamming_loss (lower is better)\n0.2500")
    table = _table(driver, anchor, "per_code")
    assert table == [
        ["per_code", "f1", "support"],
        ["I10", "1.0000", "3"],
        ["E11", "0.0000", "3"],
    ]
    header = [h.text for h in driver.find_elements(By.CSS_SELECTOR, f"#{anchor} table.samples th")]
    # scalars and lists of scalars as columns; lists of objects go to the detail
    assert header == ["id", "gold", "pred", "loss", "note"]
    cells = driver.find_elements(By.CSS_SELECTOR, f"#{anchor} table.samples tbody tr td")
    assert [c.text for c in cells[:5]] == ["s0", "I10, E11", "I10", "0.5000", "ok"]
    # a fraction with the metric's default 4 decimals (the page still sorts by the value)
    assert [c.text for c in cells[3::5]] == ["0.5000", "0.2500", "0.1667"]
    driver.find_element(By.CSS_SELECTOR, f"#{anchor} table.samples tbody tr").click()
    detail = driver.find_element(By.CSS_SELECTOR, f"#{anchor} .detail")
    assert '["I10","E11"]' in detail.text and "gold" in detail.text
    # a list of objects is a table of its own: a column per key, a row per object
    table = detail.find_element(By.CSS_SELECTOR, "table.detail-rows")
    assert [
        [c.text for c in tr.find_elements(By.CSS_SELECTOR, "th, td")]
        for tr in table.find_elements(By.CSS_SELECTOR, "tr")
    ] == [["code", "gold", "predicted"], ["I10", "true", "true"], ["E11", "true", ""]]
    assert "codes" not in [dt.text for dt in detail.find_elements(By.CSS_SELECTOR, "dt")]
    assert_nothing_ran(driver)


@pytest.mark.browser
def test_compare_page_plots_differences_and_cost(driver: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    from clineval.report.compare.build import build_comparison
    from clineval.report.compare.command import compare_runs

    runs = []
    for skill, cost in ((0.5, 0.25), (0.7, 1.5)):  # same seed: the same gold labels
        run = synthetic.tcm_run(tmp_path / f"synthetic-{skill}", n=300, seed=1, skill=skill)
        manifest = json.loads((run / MANIFEST).read_text(encoding="utf-8"))
        manifest["llm_usage"] = {"estimated_cost": cost}
        write_json(run / MANIFEST, manifest)
        runs.append(run)
    page = tmp_path / "compare.html"
    compare_runs(runs, fmt="html", output=page)
    driver.get(page.resolve().as_uri())
    differences = driver.find_element(By.ID, "differences")
    # one dot and one whisker per tested pair (2 runs: one pair per metric with a test)
    tested = [p for p in build_comparison(runs).pairs if p.difference is not None]
    assert len(tested) >= 2
    assert len(differences.find_elements(By.CSS_SELECTOR, "circle")) == len(tested)
    assert len(differences.find_elements(By.CSS_SELECTOR, "line.interval")) == len(tested)
    cost = driver.find_element(By.ID, "cost")
    assert "$0.2500" in cost.text and "$1.5000" in cost.text
    assert len(cost.find_elements(By.CSS_SELECTOR, "circle")) == 2
    assert "Holm" in driver.find_element(By.ID, "best-note").text
    shot(driver, "compare-analysis.png")


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("[]", 'expected {"references"'),
        ('{"references": [{"label": "", "results": {}}]}', "references[0].label"),
        ('{"references": [{"label": "x", "results": {"t": {"m": "0.5"}}}]}', "finite number"),
        ('{"references": [{"label": "x", "results": {"t": {"m": NaN}}}]}', "references"),
        ("{", "reference"),
        # a misspelt metric of a known task would never be shown: the key meant is named
        (
            '{"references": [{"label": "x", "results": {"ner:ncbi": {"span_partial_f": 0.5}}}]}',
            "ner:ncbi has no metric 'span_partial_f' (did you mean 'span_partial_f1'?)",
        ),
    ],
)
def test_a_bad_reference_file_is_one_line(tmp_path: Path, content: str, expected: str) -> None:
    import subprocess
    import sys

    rows = [{"id": "doc-1", "text": TEXT, "gold": GOLD, "pred": PRED}]
    run = _run(tmp_path / "ner", "ner:ncbi", {"token_macro_f1": 0.5}, rows)
    bad = tmp_path / "refs.json"
    bad.write_text(content, encoding="utf-8")
    out = tmp_path / "report.html"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "clineval",
            "report",
            str(run),
            "-o",
            str(out),
            "--reference",
            str(bad),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {bad}") and expected in lines[0]
    assert not out.exists()  # nothing written
