"""Plots as inline SVG strings (matplotlib, Agg-free SVG backend, no pyplot state).

Text stays text in the SVG (`svg.fonttype: none`): the browser draws it with its own fonts, so
Chinese labels render without a CJK font on the machine making the report, and the file stays
small. matplotlib escapes the text it writes (`<`, `>`, `&`, quotes), so data-derived labels
cannot inject markup; the report tests check that too.
"""

from __future__ import annotations

import io
import re
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import matplotlib

matplotlib.use("Agg")

from matplotlib.figure import Figure

_RC: dict[str, Any] = {
    "svg.fonttype": "none",
    "svg.hashsalt": "clineval-report",  # stable ids: the same run gives the same file
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "font.family": "DejaVu Sans",
}
GROUP_COLORS = {"head": "#2b6cb0", "middle": "#6b8e23", "tail": "#c05621", "": "#4a5568"}
SERIES_COLORS = ("#2b6cb0", "#38a169", "#d69e2e", "#805ad5", "#c05621")
_SVG_HEAD = re.compile(r"^.*?(?=<svg)", re.S)
_SIZE_ATTRS = re.compile(r'<svg([^>]*?) width="[^"]*" height="[^"]*"')


def _rc() -> Any:
    """matplotlib's typed rc keys are Literals; our dict of known-good keys is checked at run."""
    return matplotlib.rc_context(_RC)  # type: ignore[arg-type]


@contextmanager
def _figure(width: float, height: float) -> Iterator[Figure]:
    with _rc(), warnings.catch_warnings():
        # Glyph-missing warnings: the browser, not matplotlib, draws the text (see above).
        warnings.filterwarnings("ignore", message=r".*missing from font.*")
        yield Figure(figsize=(width, height), layout="constrained")


def _to_svg(fig: Figure) -> str:
    buf = io.StringIO()
    with _rc(), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*missing from font.*")
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    svg = _SVG_HEAD.sub("", buf.getvalue(), count=1)
    # Let the page size it: drop fixed pt sizes, keep the viewBox (so it scales to the column).
    return _SIZE_ATTRS.sub(r'<svg\1 class="plot"', svg, count=1)


def _short(label: str, limit: int = 14) -> str:
    """Tick labels stay short so one odd label cannot squash the plot; tables show it whole."""
    return label if len(label) <= limit else label[: limit - 1] + "…"


def per_class_f1(
    labels: Sequence[str],
    f1: Sequence[float],
    support: Sequence[float],
    groups: Sequence[str],
    title: str,
) -> str:
    """F1 bars per class in the given order (callers sort by support), colored by group."""
    n = len(labels)
    with _figure(max(6.0, min(0.11 * n + 2, 20.0)), 3.6) as fig:
        ax = fig.add_subplot()
        xs = range(n)
        colors = [GROUP_COLORS.get(g, GROUP_COLORS[""]) for g in groups]
        ax.bar(xs, f1, color=colors, width=0.8)
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("F1")
        ax.set_xlim(-0.7, n - 0.3)
        ax.set_xticks(list(xs))
        ax.set_xticklabels([_short(x) for x in labels], rotation=90, fontsize=5 if n > 60 else 7)
        ax.set_title(title)
        twin = ax.twinx()
        twin.plot(xs, support, color="#1a202c", linewidth=1, marker=".", markersize=2)
        twin.set_ylabel("support (gold samples)")
        twin.grid(False)
        seen = [g for g in ("head", "middle", "tail") if g in set(groups)]
        if seen:
            from matplotlib.patches import Patch

            handles = [Patch(color=GROUP_COLORS[g], label=g) for g in seen]
            ax.legend(handles=handles, loc="upper right", fontsize=7, title="train frequency")
        return _to_svg(fig)


def grouped_bars(
    categories: Sequence[str],
    series: Mapping[str, Sequence[float]],
    title: str,
    ylabel: str = "",
    ylim: tuple[float, float] | None = (0.0, 1.05),
) -> str:
    """Vertical bars: one group per category, one bar per series (e.g. P/R/F1 per type)."""
    n, k = len(categories), max(len(series), 1)
    with _figure(max(4.5, 1.1 * n * k / 3 + 2), 2.8) as fig:
        ax = fig.add_subplot()
        width = 0.8 / k
        for j, (name, values) in enumerate(series.items()):
            offsets = [i - 0.4 + width * (j + 0.5) for i in range(n)]
            bars = ax.bar(offsets, values, width=width, label=name, color=SERIES_COLORS[j % 5])
            ax.bar_label(bars, fmt="%.2f", fontsize=6, padding=1)
        ax.set_xticks(list(range(n)))
        ax.set_xticklabels(categories)
        if ylim is not None:
            ax.set_ylim(*ylim)
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        if len(series) > 1:
            ax.legend(fontsize=7, ncols=len(series), loc="lower right")
        return _to_svg(fig)


def reverse_ecdf(shares: Sequence[float], ks: Sequence[int], title: str) -> str:
    """share(s >= L) for L = 0..N as a step curve, with the CACS thresholds k marked."""
    n = len(shares) - 1
    with _figure(5.5, 3.2) as fig:
        ax = fig.add_subplot()
        ax.step(range(n + 1), shares, where="post", color=SERIES_COLORS[0], linewidth=1.6)
        ax.fill_between(range(n + 1), shares, step="post", alpha=0.12, color=SERIES_COLORS[0])
        for j, k in enumerate(ks):
            if 0 <= k <= n:
                color = SERIES_COLORS[(j + 2) % 5]
                ax.axvline(k, color=color, linestyle="--", linewidth=1.2)
                ax.annotate(
                    f"k={k}: {shares[k]:.2f} of cases reach k",
                    xy=(k, 0.04 + 0.09 * j),
                    xytext=(4, 0),
                    textcoords="offset points",
                    fontsize=7,
                    color=color,
                )
        ax.set_xlim(0, n)
        ax.set_ylim(0, 1.05)
        ax.set_xlabel("L = criteria met")
        ax.set_ylabel("share of cases with s ≥ L")
        ax.set_title(title)
        return _to_svg(fig)


def horizontal_bars(
    categories: Sequence[str],
    values: Sequence[float],
    counts: Sequence[int],
    title: str,
    xlabel: str,
    xlim: tuple[float, float] | None = None,
    fmt: str = "{:.1f}",
) -> str:
    """One bar per slice with its sample count beside it (per-slice CACS, per-group F1)."""
    n = len(categories)
    with _figure(5.5, max(1.4, 0.28 * n + 0.9)) as fig:
        ax = fig.add_subplot()
        ys = list(range(n))[::-1]
        bars = ax.barh(ys, values, color=SERIES_COLORS[0], height=0.7)
        ax.bar_label(
            bars,
            labels=[f"{fmt.format(v)} (n={c})" for v, c in zip(values, counts, strict=True)],
            fontsize=7,
            padding=2,
        )
        ax.set_yticks(ys)
        ax.set_yticklabels([_short(c, 24) for c in categories], fontsize=8)
        if xlim is not None:
            ax.set_xlim(*xlim)
        ax.set_xlabel(xlabel)
        ax.set_title(title)
        return _to_svg(fig)
