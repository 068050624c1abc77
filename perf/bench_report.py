"""Benchmark: HTML report generation (and opening) for full-size synthetic runs; compare speed.

    .venv/bin/python -m perf.bench_report [--repeats 3] [--no-browser]

Builds synthetic run directories (named synthetic-*, flagged fixture) of the full benchmark
sizes in a temporary directory:
* synthetic-tcm-sd-full: 5,486 TCM-SD test samples over 148 labels;
* synthetic-clinconsensus-full: 900 cases x 30 criteria = 27,000 judge verdicts, Chinese text
  (query 240 chars, answer 800 chars, criterion 24 chars, explanation 60 chars per verdict);
* synthetic-ner-full: 500 documents (BC5CDR test size), two entity types.
For each it times `clineval report DIR -o FILE` as a fresh process (Python start-up and imports
included: what a user waits for), reports the file size, and, when headless chromium is
installed, the time until the page's tables are ready (navigation start -> data-report-ready).
Then `clineval compare` of two full TCM-SD runs (paired bootstrap, 1,000 resamples, in-process).
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests import report_synthetic as synthetic

LIMIT_S = 5.0
LIMIT_MB = 10.0


def _report_seconds(run_dir: Path, out: Path) -> tuple[float, float]:
    """(wall, CPU) seconds of `clineval report` as a fresh process."""
    cli = Path(sys.executable).with_name("clineval")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(
        [str(cli), "report", str(run_dir), "-o", str(out)], check=True, capture_output=True
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _open_ms(paths: list[Path]) -> dict[Path, float]:
    """ms from navigation start until the report's script says its tables are ready."""
    chromium, driver_bin = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chromium and driver_bin):
        return {}
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.support.ui import WebDriverWait

    # The same headless flags as the browser tests (tests/report_browser.py).
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from report_browser import FLAGS

    options = webdriver.ChromeOptions()
    for flag in FLAGS:
        options.add_argument(flag)
    profile = tempfile.mkdtemp(prefix="bench-report-chromium-")
    options.add_argument(f"--user-data-dir={profile}")
    options.binary_location = chromium
    browser = webdriver.Chrome(options=options, service=Service(driver_bin))
    out: dict[Path, float] = {}
    try:
        for path in paths:
            times = []
            for _ in range(3):
                browser.get(path.as_uri())
                ready = WebDriverWait(browser, 30).until(
                    lambda d: d.execute_script(
                        "return document.body.getAttribute('data-report-ready')"
                    )
                )
                times.append(float(ready))  # ms from navigation start, set by the page
            out[path] = statistics.median(times)
    finally:
        browser.quit()
        shutil.rmtree(profile, ignore_errors=True)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-browser", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-report-") as tmp:
        base = Path(tmp)
        t0 = time.perf_counter()
        runs = {
            "TCM-SD, 5,486 samples": synthetic.tcm_run(base / "synthetic-tcm-sd-full", n=5486),
            "ClinConsensus, 900 cases x 30 = 27,000 verdicts": synthetic.cc_run(
                base / "synthetic-clinconsensus-full",
                n_cases=900,
                answer_chars=800,
                explanation_chars=60,
            ),
            "NER, 500 documents": synthetic.ner_run(base / "synthetic-ner-full", n_docs=500),
        }
        print(f"built synthetic runs in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        results = []
        for name, run_dir in runs.items():
            out = run_dir / "report.html"
            timed = [_report_seconds(run_dir, out) for _ in range(args.repeats)]
            walls = [w for w, _ in timed]
            cpu = statistics.median(c for _, c in timed)
            samples_mb = (run_dir / "samples.jsonl").stat().st_size / 1e6
            size = out.stat().st_size / 1e6
            results.append((name, out, statistics.median(walls), max(walls), cpu, size, samples_mb))
        opened = {} if args.no_browser else _open_ms([r[1] for r in results])
        print(
            f"| run | samples.jsonl | wall (median / max of {args.repeats}) | CPU (median) "
            "| report size | open in chromium (median of 3) |"
        )
        print("|---|---:|---:|---:|---:|---:|")
        ok = True
        for name, out, med, worst, cpu, size, samples_mb in results:
            shown = f"{opened[out]:.0f} ms" if out in opened else "n/a"
            print(
                f"| {name} | {samples_mb:.1f} MB | {med:.2f} s / {worst:.2f} s | {cpu:.2f} s "
                f"| {size:.2f} MB | {shown} |"
            )
            ok = ok and worst < LIMIT_S and size < LIMIT_MB
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        print(f"\npeak RSS of the largest `clineval report` process: {peak:.0f} MB")
        from rich.console import Console

        from clineval.report.compare.command import compare_runs

        other = synthetic.tcm_run(base / "synthetic-tcm-sd-full-b", n=5486, skill=0.5)
        start = time.perf_counter()
        compare_runs(
            [runs["TCM-SD, 5,486 samples"], other],
            fmt="csv",
            output=base / "c.csv",
            console=Console(file=sys.stderr),
        )
        print(
            f"\ncompare, two 5,486-sample TCM-SD runs (macro-F1 + accuracy paired bootstrap, "
            f"1,000 resamples, in-process): {time.perf_counter() - start:.2f} s"
        )
        print(f"\nwithin limits (< {LIMIT_S:.0f} s, < {LIMIT_MB:.0f} MB): {ok}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
