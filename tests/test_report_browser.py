"""The report in a real browser (headless Debian chromium + chromedriver, file:// URLs).

Checks that the key sections render with the numbers of results.json, that injected script
strings stay text and run nothing, that search and filters work, and saves screenshots to
test-artifacts/. Skips with a reason when chromium or chromedriver is absent (CI installs them).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import report_synthetic as synthetic
from report_browser import (
    assert_nothing_ran,
    browser_session,
    card,
    open_report,
    page_info,
    results_of,
    samples_of,
    search,
    shot,
)

from clineval.report.html import write_report
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


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("synthetic-browser")
    runs = {
        "tcm": synthetic.tcm_run(base / "synthetic-tcm", n=600, hostile=True),
        "ner": synthetic.ner_run(base / "synthetic-ner", n_docs=40, hostile=True),
        "cc": synthetic.cc_run(base / "synthetic-cc", n_cases=60, hostile=True),
    }
    # The ClinConsensus report stores its data gzip + base64 (as a full-size run would).
    return {
        k: write_report(d, d / "report.html", compress_over=0 if k == "cc" else 10**9)
        for k, d in runs.items()
    }


def test_tcm_report(driver: Any, reports: dict[str, Path]) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    report = reports["tcm"]
    open_report(driver, report)
    assert_nothing_ran(driver)
    metrics = results_of(report)["tcm-sd"]
    anchor = "task-tcm-sd"
    for key in ("macro_f1", "accuracy", "invalid_rate"):
        assert card(driver, anchor, key) == format_value(key, metrics[key], _digits(anchor, key))
    assert driver.find_element(By.ID, "fixture-banner").is_displayed()
    assert driver.find_elements(By.CSS_SELECTOR, f"#{anchor} svg.plot")
    # The hostile label is shown as text in the confusion table (it is a gold label there).
    assert synthetic.HOSTILE[0] in driver.find_element(By.ID, anchor).text
    samples = samples_of(report)
    n = len(samples)
    assert page_info(driver, anchor).startswith(f"{n} of {n} samples")
    # Filter: correct = no.
    select = Select(driver.find_element(By.CSS_SELECTOR, f'#{anchor} select[data-key="correct"]'))
    select.select_by_value("no")
    wrong = sum(not r["correct"] for r in samples)
    WebDriverWait(driver, 10).until(
        lambda d: page_info(d, anchor).startswith(f"{wrong} of {n} samples")
    )
    select.select_by_value("")
    # Search by id: exactly one row.
    target = samples[123]["id"]
    search(driver, anchor, target, 1, n)
    rows = driver.find_elements(By.CSS_SELECTOR, f"#{anchor} table.samples tbody tr")
    assert len(rows) == 1 and target in rows[0].text
    # Search for a hostile raw output: it matches as text; the detail shows it as text.
    hits = sum("onerror" in r["raw_output"] for r in samples)
    assert hits > 0
    search(driver, anchor, "onerror", hits, n)
    driver.find_element(By.CSS_SELECTOR, f"#{anchor} table.samples tbody tr").click()
    detail = driver.find_element(By.CSS_SELECTOR, f"#{anchor} .detail").text
    assert "onerror" in detail
    assert not driver.find_elements(By.CSS_SELECTOR, "main img")
    assert_nothing_ran(driver)
    shot(driver, "report-synthetic-tcm.png")


def test_ner_report(driver: Any, reports: dict[str, Path]) -> None:
    from selenium.webdriver.common.by import By

    report = reports["ner"]
    open_report(driver, report)
    assert_nothing_ran(driver)
    metrics = results_of(report)["ner:ncbi"]
    anchor = "task-ner-ncbi"
    for key in ("token_macro_f1", "span_partial_f1", "span_exact_f1"):
        assert card(driver, anchor, key) == format_value(key, metrics[key], _digits(anchor, key))
    groups = driver.find_elements(By.CSS_SELECTOR, f"#{anchor} .error-group")
    assert [g.get_attribute("data-kind") for g in groups] == [
        "incorrect",
        "partial",
        "missed",
        "spurious",
    ]
    assert driver.find_elements(By.CSS_SELECTOR, f"#{anchor} .example mark")
    # The first document holds a <script> payload in its text: visible as text in the detail.
    samples = samples_of(report)
    search(driver, anchor, samples[0]["id"], 1, len(samples))
    driver.find_element(By.CSS_SELECTOR, f"#{anchor} table.samples tbody tr").click()
    detail = driver.find_element(By.CSS_SELECTOR, f"#{anchor} .detail")
    assert synthetic.HOSTILE[0] in detail.text
    gold_marks = detail.find_elements(By.CSS_SELECTOR, ".ent.gold")
    assert len(gold_marks) == len(samples[0]["gold"])  # synthetic gold spans do not touch
    assert_nothing_ran(driver)
    shot(driver, "report-synthetic-ner.png")


def test_clinconsensus_case_browser(driver: Any, reports: dict[str, Path]) -> None:
    from selenium.webdriver.common.by import By

    report = reports["cc"]
    open_report(driver, report)
    assert_nothing_ran(driver)
    metrics = results_of(report)["clinconsensus"]
    anchor = "task-clinconsensus"
    data = driver.find_element(By.ID, f"{anchor}-samples")
    assert data.get_attribute("data-encoding") == "gzip-base64"  # decompressed by the page
    for key in ("cacs@7", "cacs@10", "rubric_accuracy"):
        assert card(driver, anchor, key) == format_value(key, metrics[key], _digits(anchor, key))
    ci = metrics["cacs@7_ci95"]
    ci_text = driver.find_element(By.CSS_SELECTOR, f'#{anchor} .card[data-metric="cacs@7"] .ci')
    assert ci_text.text == f"95% CI [{ci[0]:.2f}, {ci[1]:.2f}]"
    # The case browser opens on the first case, whose answer and explanations are hostile.
    samples = samples_of(report)
    detail = driver.find_element(By.CSS_SELECTOR, f"#{anchor} .detail")
    assert detail.find_element(By.CSS_SELECTOR, ".answer").text.startswith(synthetic.HOSTILE[0])
    verdict_rows = detail.find_elements(By.CSS_SELECTOR, "table.verdicts tbody tr")
    assert len(verdict_rows) == len(samples[0]["verdicts"]) == 30
    met = sum(v["met"] is True for v in samples[0]["verdicts"])
    assert len(detail.find_elements(By.CSS_SELECTOR, ".verdict-met")) == met
    assert synthetic.HOSTILE[2] in verdict_rows[2].text  # `</script>...` shown as text
    # Filter by difficulty.
    from selenium.webdriver.support.ui import Select, WebDriverWait

    select = Select(
        driver.find_element(By.CSS_SELECTOR, f'#{anchor} select[data-key="difficulty"]')
    )
    select.select_by_value("high")
    high = sum(r["difficulty"] == "high" for r in samples)
    WebDriverWait(driver, 10).until(
        lambda d: page_info(d, anchor).startswith(f"{high} of {len(samples)} samples")
    )
    assert_nothing_ran(driver)
    shot(driver, "report-synthetic-clinconsensus.png")


def test_compare_html_escapes_run_names(driver: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    from clineval.report.compare import compare_runs

    a = synthetic.tcm_run(tmp_path / "synthetic-a", n=300, seed=1)
    b = synthetic.tcm_run(
        tmp_path / '<img src=x onerror="window.__pwned=9">', n=300, seed=1, skill=0.3
    )
    out = tmp_path / "compare.html"
    compare_runs([a, b], fmt="html", output=out, seed=0)
    driver.get(out.as_uri())
    assert driver.execute_script("return window.__pwned === undefined")
    table = driver.find_element(By.ID, "leaderboard").text
    assert 'onerror="window.__pwned=9"' in table
    assert driver.find_element(By.ID, "pairs").text.count("tcm-sd") == 2
    shot(driver, "compare-synthetic.png")
