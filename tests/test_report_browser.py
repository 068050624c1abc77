"""The report in a real browser (headless Debian chromium + chromedriver, file:// URLs).

Checks that the key sections render with the numbers of results.json, that injected script
strings stay text and run nothing, that search and filters work, and saves screenshots to
test-artifacts/. Skips with a reason when chromium or chromedriver is absent (CI installs them).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clineval.report import synthetic
from clineval.report.html import write_report
from clineval.report.sections_common import format_value

pytestmark = pytest.mark.browser

ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1400,1800",
)


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        pytest.skip("chromium/chromedriver not installed (CI installs Debian's chromium)")
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for flag in FLAGS:
        options.add_argument(flag)
    profile = tempfile.mkdtemp(prefix="clineval-chromium-")
    options.add_argument(f"--user-data-dir={profile}")
    options.binary_location = CHROMIUM
    browser = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    try:
        yield browser
    finally:
        browser.quit()
        shutil.rmtree(profile, ignore_errors=True)


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


def _open(driver: Any, path: Path) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(path.resolve().as_uri())
    WebDriverWait(driver, 20).until(
        lambda d: d.execute_script("return document.body.getAttribute('data-report-ready')")
    )


def _assert_nothing_ran(driver: Any) -> None:
    assert driver.execute_script("return window.__pwned === undefined")
    assert driver.title.startswith("clineval report")
    assert "pwned" not in driver.title


def _shot(driver: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    assert driver.save_screenshot(str(ARTIFACTS / name))


def _card(driver: Any, anchor: str, key: str) -> str:
    from selenium.webdriver.common.by import By

    css = f'#{anchor} .card[data-metric="{key}"] .v'
    return driver.find_element(By.CSS_SELECTOR, css).text


def _results(report: Path) -> dict[str, Any]:
    return json.loads((report.parent / "results.json").read_text(encoding="utf-8"))


def _samples(report: Path) -> list[dict[str, Any]]:
    lines = (report.parent / "samples.jsonl").read_text(encoding="utf-8").split("\n")
    return [json.loads(line) for line in lines if line]


def _page_info(driver: Any, anchor: str) -> str:
    from selenium.webdriver.common.by import By

    return driver.find_element(By.CSS_SELECTOR, f"#{anchor} .page-info").text


def _search(driver: Any, anchor: str, text: str, expected: int, total: int) -> None:
    """Type into the search box and wait until the (debounced) table shows `expected` rows."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    box = driver.find_element(By.CSS_SELECTOR, f"#{anchor} input.search")
    box.clear()
    box.send_keys(text)
    WebDriverWait(driver, 10).until(
        lambda d: _page_info(d, anchor).startswith(f"{expected} of {total} samples")
    )


def test_tcm_report(driver: Any, reports: dict[str, Path]) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    report = reports["tcm"]
    _open(driver, report)
    _assert_nothing_ran(driver)
    metrics = _results(report)["tcm-sd"]
    anchor = "task-tcm-sd"
    for key in ("macro_f1", "accuracy", "invalid_rate"):
        assert _card(driver, anchor, key) == format_value(key, metrics[key])
    assert driver.find_element(By.ID, "fixture-banner").is_displayed()
    assert driver.find_elements(By.CSS_SELECTOR, f"#{anchor} svg.plot")
    # The hostile label is shown as text in the confusion table (it is a gold label there).
    assert synthetic.HOSTILE[0] in driver.find_element(By.ID, anchor).text
    samples = _samples(report)
    n = len(samples)
    assert _page_info(driver, anchor).startswith(f"{n} of {n} samples")
    # Filter: correct = no.
    select = Select(driver.find_element(By.CSS_SELECTOR, f'#{anchor} select[data-key="correct"]'))
    select.select_by_value("no")
    wrong = sum(not r["correct"] for r in samples)
    WebDriverWait(driver, 10).until(
        lambda d: _page_info(d, anchor).startswith(f"{wrong} of {n} samples")
    )
    select.select_by_value("")
    # Search by id: exactly one row.
    target = samples[123]["id"]
    _search(driver, anchor, target, 1, n)
    rows = driver.find_elements(By.CSS_SELECTOR, f"#{anchor} table.samples tbody tr")
    assert len(rows) == 1 and target in rows[0].text
    # Search for a hostile raw output: it matches as text; the detail shows it as text.
    hits = sum("onerror" in r["raw_output"] for r in samples)
    assert hits > 0
    _search(driver, anchor, "onerror", hits, n)
    driver.find_element(By.CSS_SELECTOR, f"#{anchor} table.samples tbody tr").click()
    detail = driver.find_element(By.CSS_SELECTOR, f"#{anchor} .detail").text
    assert "onerror" in detail
    assert not driver.find_elements(By.CSS_SELECTOR, "main img")
    _assert_nothing_ran(driver)
    _shot(driver, "report-synthetic-tcm.png")


def test_ner_report(driver: Any, reports: dict[str, Path]) -> None:
    from selenium.webdriver.common.by import By

    report = reports["ner"]
    _open(driver, report)
    _assert_nothing_ran(driver)
    metrics = _results(report)["ner:synthetic"]
    anchor = "task-ner-synthetic"
    for key in ("token_macro_f1", "span_partial_f1", "span_exact_f1"):
        assert _card(driver, anchor, key) == format_value(key, metrics[key])
    groups = driver.find_elements(By.CSS_SELECTOR, f"#{anchor} .error-group")
    assert [g.get_attribute("data-kind") for g in groups] == ["fp", "miss", "boundary", "type"]
    assert driver.find_elements(By.CSS_SELECTOR, f"#{anchor} .example mark")
    # The first document holds a <script> payload in its text: visible as text in the detail.
    samples = _samples(report)
    _search(driver, anchor, samples[0]["id"], 1, len(samples))
    driver.find_element(By.CSS_SELECTOR, f"#{anchor} table.samples tbody tr").click()
    detail = driver.find_element(By.CSS_SELECTOR, f"#{anchor} .detail")
    assert synthetic.HOSTILE[0] in detail.text
    gold_marks = detail.find_elements(By.CSS_SELECTOR, ".ent.gold")
    assert len(gold_marks) == len(samples[0]["gold"])  # synthetic gold spans do not touch
    _assert_nothing_ran(driver)
    _shot(driver, "report-synthetic-ner.png")


def test_clinconsensus_case_browser(driver: Any, reports: dict[str, Path]) -> None:
    from selenium.webdriver.common.by import By

    report = reports["cc"]
    _open(driver, report)
    _assert_nothing_ran(driver)
    metrics = _results(report)["clinconsensus"]
    anchor = "task-clinconsensus"
    data = driver.find_element(By.ID, f"{anchor}-samples")
    assert data.get_attribute("data-encoding") == "gzip-base64"  # decompressed by the page
    for key in ("cacs@7", "cacs@10", "rubric_accuracy"):
        assert _card(driver, anchor, key) == format_value(key, metrics[key])
    ci = metrics["cacs@7_ci95"]
    card = driver.find_element(By.CSS_SELECTOR, f'#{anchor} .card[data-metric="cacs@7"] .ci')
    assert card.text == f"95% CI [{ci[0]:.2f}, {ci[1]:.2f}]"
    # The case browser opens on the first case, whose answer and explanations are hostile.
    samples = _samples(report)
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
        lambda d: _page_info(d, anchor).startswith(f"{high} of {len(samples)} samples")
    )
    _assert_nothing_ran(driver)
    _shot(driver, "report-synthetic-clinconsensus.png")


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
    _shot(driver, "compare-synthetic.png")
