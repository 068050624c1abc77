"""Reports of runs made by the real task code (no model needed), checked in a real browser.

- ClinConsensus: the shipped fixture cases scored from a verdicts file (`--verdicts`).
- NER: NCBI Disease test set (real data, skipped without it) scored from a predictions file
  made from the gold with seeded damage.
- TCM-SD: the project's synthetic fixture at 1/20 size with baseline:tfidf (slow).
The numbers on the page must be those of results.json; the sample tables must hold every sample.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from report_browser import (
    assert_no_page_errors,
    browser_session,
    card,
    open_report,
    page_info,
    shot,
)

from clineval.benchmarks.clinconsensus.cases import fixture_path
from clineval.benchmarks.ner.report import classify, spans_of
from clineval.cli import main
from clineval.report.sections_common import format_value

pytestmark = pytest.mark.browser


def _digits(anchor: str, key: str) -> int | None:
    """The decimals the task's metric declares (CACS: 2)."""
    from clineval.benchmarks.registry import metric_schema

    task = {"task-tcm-sd": "tcm-sd", "task-clinconsensus": "clinconsensus"}.get(anchor, "ner:ncbi")
    schema = metric_schema(task)
    return None if schema is None else schema.digits().get(key)


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    yield from browser_session()


FIXTURE_CASES = fixture_path()


def _read(run: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    results = json.loads((run / "results.json").read_text(encoding="utf-8"))
    text = (run / "samples.jsonl").read_text(encoding="utf-8")
    return results, [json.loads(line) for line in text.split("\n") if line]


def test_clinconsensus_fixture_run_from_verdicts(driver: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    rng = random.Random(3)
    verdicts = tmp_path / "fixture-verdicts.jsonl"
    cases = [json.loads(line) for line in FIXTURE_CASES.read_text(encoding="utf-8").splitlines()]
    with open(verdicts, "w", encoding="utf-8") as out:
        for case in cases:
            p = rng.random()
            for rubric in case["rubrics"]:
                met = rng.random() < p
                row = {
                    "case_id": case["case_id"],
                    "criterion_id": rubric["criterion_id"],
                    "criteria_met": met,
                }
                out.write(json.dumps(row) + "\n")
    run = tmp_path / "fixture-clinconsensus-run"
    spec = f"predictions:{verdicts}"
    args = [
        "run",
        "clinconsensus",
        "--model",
        spec,
        "--verdicts",
        str(verdicts),
        "--cases",
        str(FIXTURE_CASES),
        "-o",
        str(run),
    ]
    assert main(args) == 0
    assert main(["report", str(run)]) == 0
    results, samples = _read(run)
    metrics = results["clinconsensus"]
    open_report(driver, run / "report.html")
    anchor = "task-clinconsensus"
    for key in ("cacs@7", "cacs@10", "rubric_accuracy", "pass@7"):
        assert card(driver, anchor, key) == format_value(key, metrics[key], _digits(anchor, key))
    assert driver.find_element(By.ID, "fixture-banner").is_displayed()
    assert page_info(driver, anchor).startswith(f"{len(cases)} of {len(cases)} samples")
    # Every case's task category is shown (samples.jsonl's `task` field holds it).
    rows = driver.find_elements(By.CSS_SELECTOR, f"#{anchor} table.samples tbody tr")
    task_cells = [r.find_elements(By.TAG_NAME, "td")[3].text for r in rows]
    assert task_cells == [c["task"] for c in cases]
    detail = driver.find_element(By.CSS_SELECTOR, f"#{anchor} .detail")
    assert len(detail.find_elements(By.CSS_SELECTOR, "table.verdicts tbody tr")) == 30
    first = samples[0]
    assert detail.find_element(By.CSS_SELECTOR, ".query").text.strip() == first["query"].strip()
    assert_no_page_errors(driver)
    shot(driver, "report-fixture-clinconsensus.png")


def test_ner_ncbi_run_from_predictions(driver: Any, tmp_path: Path, data_root: Path) -> None:
    from selenium.webdriver.common.by import By

    from clineval.benchmarks.ner.corpora import load_ner_split

    split = load_ner_split("ncbi", "test", data_root)
    rng = random.Random(5)
    preds = tmp_path / "damaged-gold-predictions.jsonl"
    with open(preds, "w", encoding="utf-8") as out:
        for doc in split.documents:
            entities = []
            for span in doc.entities:
                r = rng.random()
                if r < 0.15:
                    continue  # a miss
                start = span.start + (1 if r < 0.25 and span.end - span.start > 2 else 0)
                entities.append({"start": start, "end": span.end, "type": span.type})
            if rng.random() < 0.3:
                entities.append({"start": 0, "end": 3, "type": "condition"})  # likely spurious
            out.write(json.dumps({"id": doc.id, "entities": entities}) + "\n")
    run = tmp_path / "ncbi-damaged-gold"
    args = [
        "run",
        "ner:ncbi",
        "--model",
        f"predictions:{preds}",
        "-o",
        str(run),
        "--data-dir",
        str(data_root),
    ]
    assert main(args) == 0
    assert main(["report", str(run)]) == 0
    results, samples = _read(run)
    metrics = results["ner:ncbi"]
    open_report(driver, run / "report.html")
    anchor = "task-ner-ncbi"
    for key in ("token_macro_f1", "span_partial_f1", "span_exact_f1"):
        assert card(driver, anchor, key) == format_value(key, metrics[key], _digits(anchor, key))
        ci = driver.find_element(By.CSS_SELECTOR, f'#{anchor} .card[data-metric="{key}"] .ci')
        assert ci.text.startswith("95% CI [")  # computed by the report from per-doc counts
    counts: dict[str, int] = {}
    for row in samples:
        for kind, _, _ in classify(spans_of(row["gold"]), spans_of(row["pred"]), ["condition"]):
            counts[kind] = counts.get(kind, 0) + 1
    for group in driver.find_elements(By.CSS_SELECTOR, f"#{anchor} .error-group"):
        kind = group.get_attribute("data-kind")
        title = group.find_element(By.TAG_NAME, "h3").text
        assert f"({counts.get(kind, 0)}" in title
        assert counts.get(kind, 0) == metrics["span_errors"][kind]  # one classification
    assert page_info(driver, anchor).startswith(f"{len(samples)} of {len(samples)} samples")
    assert_no_page_errors(driver)
    shot(driver, "report-ncbi-damaged-gold.png")


@pytest.mark.slow
def test_tcm_synthetic_fixture_run(driver: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    run = tmp_path / "tcm-synthetic-fixture-run"
    args = [
        "run",
        "tcm-sd",
        "--model",
        "baseline:tfidf",
        "--option",
        "tcm.data=synthetic",
        "--option",
        "tcm.synth_scale=0.05",
        "-o",
        str(run),
    ]
    assert main(args) == 0
    assert main(["report", str(run)]) == 0
    results, samples = _read(run)
    metrics = results["tcm-sd"]
    open_report(driver, run / "report.html")
    anchor = "task-tcm-sd"
    for key in ("macro_f1", "accuracy"):
        assert card(driver, anchor, key) == format_value(key, metrics[key], _digits(anchor, key))
    plot = driver.find_element(By.CSS_SELECTOR, f"#{anchor} svg.plot")
    bars = plot.find_elements(By.CSS_SELECTOR, "rect > title")
    assert len(bars) == len(metrics["per_class"]) == 148
    assert driver.find_element(By.CSS_SELECTOR, f"#{anchor} .data-note").is_displayed()
    assert page_info(driver, anchor).startswith(f"{len(samples)} of {len(samples)} samples")
    assert_no_page_errors(driver)
    shot(driver, "report-tcm-synthetic-fixture.png")
