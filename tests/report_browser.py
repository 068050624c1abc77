"""Helpers of the report's browser tests: a headless chromium session and page queries."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

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


def browser_session() -> Iterator[Any]:
    """A headless chromium driven by chromedriver, with a fresh profile; skips if absent."""
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
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    browser = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    try:
        yield browser
    finally:
        browser.quit()
        shutil.rmtree(profile, ignore_errors=True)


def open_report(driver: Any, path: Path) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(path.resolve().as_uri())
    WebDriverWait(driver, 20).until(
        lambda d: d.execute_script("return document.body.getAttribute('data-report-ready')")
    )


def assert_no_page_errors(driver: Any) -> None:
    """No JavaScript exception and no Content-Security-Policy violation was logged (a CSP
    report would mean some data had become markup that tried to run or load something)."""
    severe = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
    assert severe == []


def assert_nothing_ran(driver: Any) -> None:
    assert driver.execute_script("return window.__pwned === undefined")
    assert driver.title.startswith("clineval report")
    assert "pwned" not in driver.title
    assert_no_page_errors(driver)


def shot(driver: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    assert driver.save_screenshot(str(ARTIFACTS / name))


def card(driver: Any, anchor: str, key: str) -> str:
    from selenium.webdriver.common.by import By

    css = f'#{anchor} .card[data-metric="{key}"] .v'
    return driver.find_element(By.CSS_SELECTOR, css).text


def results_of(report: Path) -> dict[str, Any]:
    return json.loads((report.parent / "results.json").read_text(encoding="utf-8"))


def samples_of(report: Path) -> list[dict[str, Any]]:
    lines = (report.parent / "samples.jsonl").read_text(encoding="utf-8").split("\n")
    return [json.loads(line) for line in lines if line]


def page_info(driver: Any, anchor: str) -> str:
    from selenium.webdriver.common.by import By

    return driver.find_element(By.CSS_SELECTOR, f"#{anchor} .page-info").text


def search(driver: Any, anchor: str, text: str, expected: int, total: int) -> None:
    """Type into the search box and wait until the (debounced) table shows `expected` rows."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    box = driver.find_element(By.CSS_SELECTOR, f"#{anchor} input.search")
    box.clear()
    box.send_keys(text)
    WebDriverWait(driver, 10).until(
        lambda d: page_info(d, anchor).startswith(f"{expected} of {total} samples")
    )
