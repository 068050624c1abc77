"""Plots: round tick values (a 0 tick on differences), no text outside its SVG, no interval
drawn for a slice under 5 cases.

Oracles: the definition of a round step (1, 2, 2.5 or 5 times a power of ten); the issue's
own tick row (`-9.22 -6.38 -3.54 -0.699 2.14`, which must not come back); and, in a real
browser, each text's drawn box against its SVG's box (the report's own CSS fonts), for every
chart kind with long titles and labels. All data here is synthetic.
"""

from __future__ import annotations

import itertools
import math
import random
import re
from collections.abc import Iterator
from html import unescape
from pathlib import Path
from typing import Any

import pytest
from report_browser import browser_session

from clineval.report import plots
from clineval.report.html import asset

LONG_TITLE = "CACS@7 by subject label (95% bootstrap interval over the slice's cases) — synthetic"


def _tick_texts(svg: str) -> list[str]:
    return re.findall(r'class="tick"[^>]*>([^<]*)</text>', svg)


def test_nice_ticks_are_round_steps_that_cover_the_range() -> None:
    rng = random.Random(3)
    for _ in range(500):
        a, b = (rng.uniform(-1, 1) * 10 ** rng.randint(-3, 3) for _ in range(2))
        lo, hi = min(a, b), max(a, b)
        ticks = plots.nice_ticks(lo, hi)
        assert ticks[0] <= lo + 1e-12 and ticks[-1] >= hi - 1e-12
        steps = {round(y - x, 12) for x, y in itertools.pairwise(ticks)}
        assert len(steps) == 1
        step = steps.pop()
        mantissa = step / 10 ** math.floor(math.log10(step))
        assert any(abs(mantissa - m) < 1e-6 for m in (1, 2, 2.5, 5)), step
        assert 3 <= len(ticks) <= 7
        if lo <= 0 <= hi:
            assert 0.0 in ticks


def test_difference_plot_ticks_are_round_with_a_zero() -> None:
    # the plot: differences from about -9.2 to 2.1
    svg = plots.interval_dots(
        ["run-a - run-b (n=100)", "run-a - run-c (n=100)"],
        [-6.0, 0.5],
        [(-9.22, -2.8), (-1.0, 2.14)],
        "synthetic: paired differences",
        "A - B",
    )
    ticks = _tick_texts(svg)
    assert ticks == ["-10", "-5", "0", "5"]
    assert not {"-9.22", "-6.38", "-3.54", "-0.699", "2.14"} & set(ticks)
    # a zero tick whatever side the differences are on
    svg = plots.interval_dots(["x"], [0.31], [(0.27, 0.36)], "synthetic", "A - B")
    assert "0" in _tick_texts(svg)


def test_no_interval_is_drawn_for_a_slice_under_five_cases() -> None:
    svg = plots.horizontal_bars(
        ["slice of one", "slice of twelve"],
        [58.3, 40.0],
        [1, 12],
        "synthetic slices",
        "CACS@7 (%)",
        (0, 100),
        intervals=[(58.3, 58.3), (30.0, 50.0)],
    )
    assert svg.count('class="interval"') == 1  # the twelve-case slice only
    assert "[58.3, 58.3]" not in svg
    assert "58.3 (n=1: no interval under n=5)" in svg
    assert "40.0 [30.0, 50.0] (n=12)" in svg
    assert _tick_texts(svg)[:5] == ["0", "25", "50", "75", "100"]


def _charts() -> dict[str, str]:
    """One SVG of every chart kind, with long titles and labels (synthetic)."""
    long_names = [f"fixture-run-with-a-long-name-{k}" for k in range(3)]
    return {
        "grouped": plots.grouped_bars(
            ["condition", "gene variant"],
            {"token F1": [0.7, 0.5], "span partial F1": [0.8, 0.4], "span exact F1": [1.0, 0.3]},
            LONG_TITLE,
            "F1",
        ),
        "hbars": plots.horizontal_bars(
            ["心血管内科与急诊医学", "a slice label that is long", "x"],
            [99.9, 58.3, 1.0],
            [120, 1, 7],
            LONG_TITLE,
            "CACS@7 (%)",
            (0, 100),
            intervals=[(95.0, 100.0), (58.3, 58.3), (0.0, 3.0)],
        ),
        "heatmap": plots.heatmap(
            ["condition", "a long gold type name"],
            ["condition", "a long predicted type name"],
            [[10, 2], [3, 40]],
            LONG_TITLE,
        ),
        "dots": plots.interval_dots(
            [f"{a} - {b} (n=100)" for a, b in itertools.pairwise(long_names)],
            [-0.2, 0.05],
            [(-0.3, -0.1), (-0.01, 0.12)],
            "ner:ncbi token_macro_f1: paired differences A - B, 95% interval",
            "A - B",
        ),
        "scatter": plots.scatter(
            long_names,
            [0.0, 0.16437, 12.5],
            [0.61, 0.83, 0.99],
            "ner:ncbi: token_macro_f1 against estimated cost",
            "estimated cost (USD)",
            "token_macro_f1",
        ),
    }


def test_estimated_text_extents_stay_inside_the_svg() -> None:
    for name, svg in _charts().items():
        width = float(re.search(r'width="([\d.]+)"', svg)[1])  # type: ignore[index]
        shift_m = re.search(r"translate\(([\d.]+),0\)", svg)
        shift = float(shift_m[1]) if shift_m else 0.0
        title = unescape(re.search(r'class="plot-title"[^>]*>([^<]*)<', svg)[1])  # type: ignore[index]
        assert len(title) * 7.8 <= width, name
        for left, right, text in plots.text_extents(svg):
            inner = text != title
            lo, hi = (left + shift, right + shift) if inner else (left, right)
            assert lo >= 0 and hi <= width, (name, text, lo, hi, width)


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    yield from browser_session()


@pytest.mark.browser
def test_no_text_is_clipped_in_a_browser(driver: Any, tmp_path: Path) -> None:
    page = tmp_path / "plots.html"
    boxes = "".join(f'<div class="plot-box" id="{k}">{svg}</div>' for k, svg in _charts().items())
    page.write_text(
        f"<!doctype html><html><head><meta charset='utf-8'><style>{asset('report.css')}</style>"
        f"</head><body>{boxes}</body></html>",
        encoding="utf-8",
    )
    driver.get(page.resolve().as_uri())
    outside = driver.execute_script(
        """
        const out = [];
        for (const svg of document.querySelectorAll('svg.plot')) {
          const box = svg.getBoundingClientRect();
          for (const t of svg.querySelectorAll('text')) {
            const r = t.getBoundingClientRect();
            if (r.left < box.left - 0.5 || r.right > box.right + 0.5 ||
                r.top < box.top - 0.5 || r.bottom > box.bottom + 0.5) {
              out.push([svg.parentElement.id, t.textContent, r.left - box.left,
                        box.right - r.right, r.top - box.top, box.bottom - r.bottom]);
            }
          }
        }
        return out;
        """
    )
    assert outside == []


def _verdicts(*items: tuple[str, bool | None]) -> dict[str, Any]:
    return {
        "verdicts": [
            {"criterion_id": f"r{k:02d}", "criterion": text, "met": met}
            for k, (text, met) in enumerate(items, start=1)
        ]
    }


def test_most_unmet_criteria_rank_by_wording_not_position() -> None:
    from clineval.benchmarks.clinconsensus.report_figures import unmet_criteria

    # three synthetic cases; position 1 holds a different criterion in each, so a ranking by
    # position would pool "advises ECG" with "names aspirin"; by text, the ECG criterion
    # (unmet in 3 cases, at positions 2, 1 and 3) comes first
    samples = [
        _verdicts(("names aspirin", True), ("advises ECG", False), ("says  urgent", False)),
        _verdicts(("advises ECG", False), ("names aspirin", True), ("says urgent", True)),
        _verdicts(("names aspirin", False), ("asks age", None), ("advises ECG", False)),
    ]
    by, rows = unmet_criteria(samples)
    assert by == "criterion"
    assert rows == [
        ("advises ECG", 3, 0, 3, 0),
        # one unmet each: the larger unmet share first (1 of 2, then 1 of 3); the same
        # wording, spaces apart, is one criterion
        ("says urgent", 2, 1, 1, 0),
        ("names aspirin", 3, 2, 1, 0),
    ]
    # a benchmark that tags its criteria (a category) groups by the first tag
    tagged = [
        {"verdicts": [{"criterion_id": "a", "criterion": "x", "met": False, "tags": ["axis:a"]}]},
        {"verdicts": [{"criterion_id": "b", "criterion": "y", "met": False, "tags": ["axis:a"]}]},
    ]
    assert unmet_criteria(tagged) == ("category", [("axis:a", 2, 0, 2, 0)])
