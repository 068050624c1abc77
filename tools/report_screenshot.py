"""Regenerate docs/report-screenshot.png: the HTML report of the NER demo run, drawn by
headless Chromium (`make screenshot`).

Runs the demo's NER suite (`baseline:crf` on the four real corpora) into runs/demo-ner when
that directory holds no finished run, renders its report, opens it in Chromium and saves the
top of the page. Needs Debian's chromium + chromium-driver and the test extra (selenium).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The browser tests' own flags (tests/report_browser.py), so that the screenshot is drawn as
# the pages those tests judge are; their window size is replaced by the one asked for here.
sys.path.insert(0, str(ROOT / "tests"))
from report_browser import FLAGS as TEST_FLAGS  # noqa: E402

FLAGS = (*(f for f in TEST_FLAGS if not f.startswith("--window-size=")), "--hide-scrollbars")
NER_SUITE = ("ner:ncbi", "ner:bc5cdr", "ner:biored", "ner:chia")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", type=Path, default=ROOT / "runs" / "demo-ner")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "report-screenshot.png")
    parser.add_argument("--width", type=int, default=1400)
    parser.add_argument("--height", type=int, default=1500)
    args = parser.parse_args()
    if not (args.run / "results.json").exists():
        command = [sys.executable, "-m", "clineval", "run", *NER_SUITE]
        subprocess.run([*command, "--model", "baseline:crf", "-o", str(args.run)], check=True)
    report = args.run / "report.html"
    subprocess.run(
        [sys.executable, "-m", "clineval", "report", str(args.run), "-o", str(report)], check=True
    )

    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.support.ui import WebDriverWait

    options = webdriver.ChromeOptions()
    for flag in (*FLAGS, f"--window-size={args.width},{args.height}"):
        options.add_argument(flag)
    profile = tempfile.mkdtemp(prefix="clineval-screenshot-")
    options.add_argument(f"--user-data-dir={profile}")
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    chromedriver = shutil.which("chromedriver") or "/usr/bin/chromedriver"
    driver = webdriver.Chrome(options=options, service=Service(chromedriver))
    try:
        driver.get(report.resolve().as_uri())
        WebDriverWait(driver, 30).until(
            lambda d: d.execute_script("return document.body.getAttribute('data-report-ready')")
        )
        # open on a corpus with two entity types: its error-kind table and type matrix
        driver.execute_script(
            "(document.getElementById('task-ner-bc5cdr') ||"
            " document.querySelector('section.task')).scrollIntoView()"
        )
        driver.execute_script("window.scrollBy(0, -48)")
        args.out.parent.mkdir(parents=True, exist_ok=True)
        if not driver.save_screenshot(str(args.out)):
            print(f"error: {args.out}: the screenshot could not be saved", file=sys.stderr)
            return 1
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
