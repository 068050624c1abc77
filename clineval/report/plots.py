"""Plots as inline SVG strings, drawn directly (no plotting library at report time).

Why not matplotlib: importing it and laying out 148 rotated tick labels cost more CPU than the
rest of a full-size report together (about 2 s of the 5 s budget on this machine), and its SVG
is large. These chart kinds are simple enough to write as SVG: the browser draws the text
with its own fonts (Chinese labels need no CJK font where the report is made), every bar has a
tooltip (<title>) with its full label and numbers, and the output is a few kB.

Every piece of text goes through `_esc` (XML escaping, quotes included), so a label taken from
data cannot add markup or attributes; the report tests check that with hostile labels.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Mapping, Sequence
from html import escape, unescape

SERIES_COLORS = ("#2b6cb0", "#38a169", "#d69e2e", "#805ad5", "#c05621")
GRID = "#e2e8f0"
AXIS = "#4a5568"


def _esc(text: object) -> str:
    return escape(str(text), quote=True)


def _short(label: str, limit: int = 14) -> str:
    """Axis labels stay short so one odd label cannot squash a plot; tooltips show it whole."""
    return label if len(label) <= limit else label[: limit - 1] + "…"


def _width(label: str) -> int:
    """A label's width in Latin characters: East Asian wide characters count two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in label)


def _num(x: float) -> str:
    return f"{x:.1f}".rstrip("0").rstrip(".") if math.isfinite(x) else "0"


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Tick values at a round step (1, 2, 2.5 or 5 times a power of ten) covering [lo, hi]:
    the first at or below lo, the last at or above hi. Every tick is a multiple of the step,
    so 0 is one whenever lo <= 0 <= hi."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        lo, hi = 0.0, 1.0
    if hi < lo:
        lo, hi = hi, lo
    if hi == lo:
        lo, hi = (lo - 1.0, hi + 1.0) if lo == 0 else (lo - abs(lo) / 2, hi + abs(hi) / 2)
    raw = (hi - lo) / max(count - 1, 1)
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1.0, 2.0, 2.5, 5.0, 10.0) if m * power >= raw * 0.999)
    first, last = math.floor(lo / step + 1e-9), math.ceil(hi / step - 1e-9)
    return [k * step + 0.0 for k in range(first, last + 1)]


def tick_label(value: float, ticks: Sequence[float]) -> str:
    """A tick value with as many decimals as the step between ticks needs (no 2.14, -0.699)."""
    step = abs(ticks[1] - ticks[0]) if len(ticks) > 1 else 1.0
    decimals = max(0, -math.floor(math.log10(step) + 1e-9)) if step > 0 else 0
    if step > 0 and round(step * 10**decimals) % 10 != 0 and (step * 10**decimals) % 1:
        decimals += 1  # 2.5 x 10^k needs one decimal more than its power
    text = f"{value:.{decimals}f}"
    return "0" if float(text) == 0 else text


# Text extents: an estimate from the font sizes report.css gives each class, in pixels per
# Latin character (East Asian wide characters count two); a little generous, so an estimate
# that is off errs towards room, never towards a clipped label.
_CHAR_PX = {"plot-title": 7.8, "tick": 6.2, "axis-label": 6.8, "": 6.8}
_TEXT = re.compile(
    r'<text x="(?P<x>[-\d.]+)" y="(?P<y>[-\d.]+)" text-anchor="(?P<anchor>\w+)"'
    r'(?: class="(?P<cls>[\w-]+)")?(?P<rest>[^>]*)>(?P<body>[^<]*)</text>'
)


_ROTATE = re.compile(r"rotate\((-?[\d.]+)")


def text_extents(svg: str) -> list[tuple[float, float, str]]:
    """(left, right, text) of every text of an SVG this module drew (a rotated one by the
    horizontal span of its turned box)."""
    out = []
    for m in _TEXT.finditer(svg):
        body = unescape(m["body"])
        w = _width(body) * _CHAR_PX.get(m["cls"] or "", _CHAR_PX[""])
        turned = _ROTATE.search(m["rest"])
        if turned:  # a turned label spans its length times the cosine horizontally
            w *= abs(math.cos(math.radians(float(turned[1]))))
        x = float(m["x"])
        left = {"start": x, "middle": x - w / 2, "end": x - w}[m["anchor"]]
        out.append((left, left + w, body))
    return out


_MARGIN = 4.0


def _svg(width: float, height: float, title: str, body: list[str]) -> str:
    """The plot, widened (and shifted right) so that its title and every label fit."""
    inner = "".join(body)
    extents = text_extents(inner)
    shift = max([0.0, *(_MARGIN - left for left, _, _ in extents)])
    right = max([width, *(r + shift + _MARGIN for _, r, _ in extents)])
    title_w = _width(title) * _CHAR_PX["plot-title"] + 2 * _MARGIN
    width = max(right, title_w)
    if shift:
        inner = f'<g transform="translate({_num(shift)},0)">{inner}</g>'
    return (
        f'<svg class="plot" width="{_num(width)}" height="{_num(height)}" '
        f'viewBox="0 0 {_num(width)} {_num(height)}" '
        f'xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{_esc(title)}">'
        f'<text class="plot-title" x="{_num(width / 2)}" y="14" text-anchor="middle">'
        f"{_esc(title)}</text>" + inner + "</svg>"
    )


def _text(
    x: float, y: float, text: str, anchor: str = "middle", cls: str = "", extra: str = ""
) -> str:
    klass = f' class="{cls}"' if cls else ""
    attrs = f'x="{_num(x)}" y="{_num(y)}" text-anchor="{anchor}"{klass}{extra}'
    return f"<text {attrs}>{_esc(text)}</text>"


def _rect(x: float, y: float, w: float, h: float, color: str, tip: str) -> str:
    return (
        f'<rect x="{_num(x)}" y="{_num(y)}" width="{_num(max(w, 0))}" height="{_num(max(h, 0))}" '
        f'fill="{color}"><title>{_esc(tip)}</title></rect>'
    )


def _y_axis(
    left: float, top: float, height: float, width: float, ymax: float, label: str
) -> list[str]:
    """Horizontal grid lines at round tick values 0 .. ymax (ymax itself should be a tick:
    `nice_ticks(0, v)[-1]`), and the axis label."""
    out = []
    ticks = [t for t in nice_ticks(0.0, ymax) if t <= ymax * (1 + 1e-9)] or [0.0, ymax]
    for v in ticks:
        y = top + height - height * v / (ymax or 1.0)
        out.append(
            f'<line x1="{_num(left)}" x2="{_num(left + width)}" y1="{_num(y)}" y2="{_num(y)}" '
            f'stroke="{GRID}"/>'
        )
        out.append(_text(left - 4, y + 3, tick_label(v, ticks), "end", "tick"))
    out.append(
        f'<line x1="{_num(left)}" x2="{_num(left)}" y1="{_num(top)}" y2="{_num(top + height)}" '
        f'stroke="{AXIS}"/>'
    )
    if label:
        cx, cy = left - 30, top + height / 2
        out.append(
            _text(
                cx,
                cy,
                label,
                "middle",
                "axis-label",
                f' transform="rotate(-90 {_num(cx)} {_num(cy)})"',
            )
        )
    return out


def _legend(x: float, y: float, items: Sequence[tuple[str, str]]) -> list[str]:
    out = []
    for name, color in items:
        out.append(f'<rect x="{_num(x)}" y="{_num(y - 8)}" width="10" height="10" fill="{color}"/>')
        out.append(_text(x + 14, y + 1, name, "start", "tick"))
        x += 24 + 7 * len(name)
    return out


def grouped_bars(
    categories: Sequence[str],
    series: Mapping[str, Sequence[float]],
    title: str,
    ylabel: str = "",
    ylim: tuple[float, float] | None = (0.0, 1.05),
) -> str:
    """Vertical bars: one group per category, one bar per series (e.g. P/R/F1 per type)."""
    n, k = max(len(categories), 1), max(len(series), 1)
    group_w = max(60.0, 26.0 * k + 20)
    left, top, height = 50.0, 44.0, 170.0
    width = group_w * n
    ymax = ylim[1] if ylim is not None else max([1.0] + [v for s in series.values() for v in s])
    if ylim is None:
        ymax = nice_ticks(0.0, ymax)[-1]  # the top grid line at a round value
    body = _y_axis(left, top, height, width, round(ymax, 2) if ymax != 1.05 else 1.0, ylabel)
    scale_max = 1.0 if ymax == 1.05 else ymax
    bar_w = (group_w - 20) / k
    for j, (name, values) in enumerate(series.items()):
        color = SERIES_COLORS[j % len(SERIES_COLORS)]
        for i, value in enumerate(values):
            v = min(max(value, 0.0), scale_max) if math.isfinite(value) else 0.0
            x = left + i * group_w + 10 + j * bar_w
            h = height * v / scale_max
            body.append(
                _rect(
                    x,
                    top + height - h,
                    bar_w - 2,
                    h,
                    color,
                    f"{categories[i]} · {name} {value:.4f}",
                )
            )
            body.append(
                _text(x + bar_w / 2 - 1, top + height - h - 3, f"{value:.2f}", "middle", "tick")
            )
    for i, cat in enumerate(categories):
        body.append(_text(left + (i + 0.5) * group_w, top + height + 14, _short(cat, 18)))
    legend_w = sum(24 + 7 * len(name) for name in series) if len(series) > 1 else 0
    if legend_w:
        body += _legend(
            left + 4, top - 14, [(name, SERIES_COLORS[j % 5]) for j, name in enumerate(series)]
        )
    total_w = max(left + width + 20, left + legend_w + 10, 260.0)
    return _svg(total_w, top + height + 26, title, body)


# Fewer cases than this get no bootstrap interval: resampling 1 case gives [x, x].
MIN_INTERVAL_N = 5


def horizontal_bars(
    categories: Sequence[str],
    values: Sequence[float],
    counts: Sequence[int],
    title: str,
    xlabel: str,
    xlim: tuple[float, float] | None = None,
    fmt: str = "{:.1f}",
    intervals: Sequence[tuple[float, float] | None] | None = None,
) -> str:
    """One bar per slice with its sample count beside it (per-slice CACS, per-group F1), and
    a whisker for each interval given (so noise between slices does not read as a finding)."""
    n = max(len(categories), 1)
    label_w = 12 + 7 * max((_width(_short(c, 24)) for c in categories), default=4)
    left, top, row, width = max(60.0, label_w), 26.0, 20.0, 300.0
    top_value = (
        xlim[1] if xlim is not None else max([1.0] + [v for v in values if math.isfinite(v)])
    )
    ticks = nice_ticks(0.0, top_value)
    xmax = ticks[-1]
    body = []
    for tick in ticks:
        x = left + width * tick / xmax
        body.append(
            f'<line x1="{_num(x)}" x2="{_num(x)}" y1="{_num(top)}" '
            f'y2="{_num(top + row * n)}" stroke="{GRID}"/>'
        )
        body.append(_text(x, top + row * n + 13, tick_label(tick, ticks), "middle", "tick"))
    for i, (cat, value, count) in enumerate(zip(categories, values, counts, strict=True)):
        y = top + i * row
        v = min(max(value, 0.0), xmax) if math.isfinite(value) else 0.0
        w = width * v / xmax
        body.append(
            _rect(
                left,
                y + 3,
                w,
                row - 6,
                SERIES_COLORS[0],
                f"{cat} · {fmt.format(value)} · n={count}",
            )
        )
        body.append(_text(left - 6, y + row / 2 + 4, _short(cat, 24), "end"))
        label_x = left + w + 4
        interval = intervals[i] if intervals is not None and i < len(intervals) else None
        if count < MIN_INTERVAL_N:  # a percentile interval of so few is no interval at all
            interval = None
        if interval is not None:
            lo, hi = (min(max(b, 0.0), xmax) for b in interval)
            x1, x2, ym = left + width * lo / xmax, left + width * hi / xmax, y + row / 2
            body.append(
                f'<line class="interval" x1="{_num(x1)}" x2="{_num(x2)}" y1="{_num(ym)}" '
                f'y2="{_num(ym)}" stroke="{AXIS}" stroke-width="1.5">'
                f"<title>{_esc(cat)} · 95% interval {fmt.format(interval[0])} to "
                f"{fmt.format(interval[1])}</title></line>"
            )
            for xe in (x1, x2):
                body.append(
                    f'<line x1="{_num(xe)}" x2="{_num(xe)}" y1="{_num(ym - 4)}" '
                    f'y2="{_num(ym + 4)}" stroke="{AXIS}" stroke-width="1.5"/>'
                )
            label_x = max(label_x, x2 + 4)
        text = f"{fmt.format(value)} (n={count})"
        if intervals is not None and count < MIN_INTERVAL_N:
            text = f"{fmt.format(value)} (n={count}: no interval under n={MIN_INTERVAL_N})"
        if interval is not None:
            low, high = fmt.format(interval[0]), fmt.format(interval[1])
            text = f"{fmt.format(value)} [{low}, {high}] (n={count})"
        body.append(_text(label_x, y + row / 2 + 4, text, "start", "tick"))
    body.append(_text(left + width / 2, top + row * n + 28, xlabel, "middle", "axis-label"))
    return _svg(left + width + 20, top + row * n + 36, title, body)


def heatmap(
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    counts: Sequence[Sequence[int]],
    title: str,
    xlabel: str = "predicted",
    ylabel: str = "gold",
) -> str:
    """A count matrix as shaded cells with the count written in each (a confusion view)."""
    label_w = 12 + 7 * max((_width(_short(c, 20)) for c in row_labels), default=4)
    left, top, cell = max(70.0, label_w), 96.0, 34.0
    peak = max([1, *(n for row in counts for n in row)])
    body = [_text(left + cell * len(col_labels) / 2, 30, xlabel, "middle", "axis-label")]
    for j, col in enumerate(col_labels):
        x = left + j * cell + cell / 2
        body.append(
            _text(
                x,
                top - 6,
                _short(col, 12),
                "start",
                "tick",
                f' transform="rotate(-45 {_num(x)} {_num(top - 6)})"',
            )
        )
    for i, (row_label, row) in enumerate(zip(row_labels, counts, strict=True)):
        y = top + i * cell
        body.append(_text(left - 6, y + cell / 2 + 4, _short(row_label, 20), "end"))
        for j, (col, n) in enumerate(zip(col_labels, row, strict=True)):
            shade = 0.08 + 0.92 * n / peak if n else 0.0
            color = f"rgba(43,108,176,{shade:.2f})" if n else "#f7fafc"
            body.append(
                _rect(
                    left + j * cell,
                    y,
                    cell - 2,
                    cell - 2,
                    color,
                    f"{ylabel} {row_label} · {xlabel} {col} · {n}",
                )
            )
            if n:
                ink = "#fff" if shade > 0.55 else "#1a202c"
                body.append(
                    _text(
                        left + j * cell + cell / 2 - 1,
                        y + cell / 2 + 3,
                        str(n),
                        "middle",
                        "tick",
                        f' style="fill:{ink}"',
                    )
                )
    body.append(_text(12, top + cell * len(row_labels) / 2, ylabel, "middle", "axis-label"))
    return _svg(left + cell * len(col_labels) + 20, top + cell * len(row_labels) + 12, title, body)


# Drawing primitives for a benchmark's own plot (its report section draws it; generic code
# draws only the chart kinds above). Every text goes through escaping, as here.
document = _svg
label = _text
bar = _rect
y_axis = _y_axis
number = _num


def interval_dots(
    labels: Sequence[str],
    values: Sequence[float],
    intervals: Sequence[tuple[float, float]],
    title: str,
    xlabel: str,
) -> str:
    """A dot per row with its interval as a whisker, and a line at zero (paired differences:
    a whisker that crosses the line is a difference the test cannot tell from none)."""
    finite = [b for lo_hi in intervals for b in lo_hi if math.isfinite(b)]
    finite += [v for v in values if math.isfinite(v)] + [0.0]
    ticks = nice_ticks(min(finite), max(finite))  # round steps, and 0 among them
    lo, hi = ticks[0], ticks[-1]
    label_w = 12 + 7 * max((_width(_short(c, 40)) for c in labels), default=4)
    left, top, row, width = max(80.0, label_w), 28.0, 22.0, 320.0

    def px(x: float) -> float:
        return left + width * (x - lo) / (hi - lo)

    body = [
        f'<line class="zero" x1="{_num(px(0))}" x2="{_num(px(0))}" y1="{_num(top)}" '
        f'y2="{_num(top + row * len(labels))}" stroke="{AXIS}" stroke-dasharray="4,3"/>'
    ]
    for i, (name, value, (low, high)) in enumerate(zip(labels, values, intervals, strict=True)):
        y = top + i * row + row / 2
        tip = f"{name}: {value:.4g} [{low:.4g}, {high:.4g}]"
        body.append(
            f'<line class="interval" x1="{_num(px(low))}" x2="{_num(px(high))}" y1="{_num(y)}" '
            f'y2="{_num(y)}" stroke="{SERIES_COLORS[0]}" stroke-width="2"><title>{_esc(tip)}'
            "</title></line>"
        )
        body.append(
            f'<circle cx="{_num(px(value))}" cy="{_num(y)}" r="4" fill="{SERIES_COLORS[0]}">'
            f"<title>{_esc(tip)}</title></circle>"
        )
        body.append(_text(left - 6, y + 4, _short(name, 40), "end"))
    bottom = top + row * len(labels)
    for x in ticks:
        body.append(_text(px(x), bottom + 13, tick_label(x, ticks), "middle", "tick"))
    body.append(_text(left + width / 2, bottom + 28, xlabel, "middle", "axis-label"))
    return _svg(left + width + 20, bottom + 36, title, body)


def scatter(
    labels: Sequence[str],
    xs: Sequence[float],
    ys: Sequence[float],
    title: str,
    xlabel: str,
    ylabel: str,
) -> str:
    """Labelled points (a run's score against its cost)."""
    left, top, height, width = 60.0, 28.0, 200.0, 360.0
    xticks = nice_ticks(0.0, max([*xs, 0.0]) or 1.0)
    xmax = xticks[-1]
    ymin, ymax = min([*ys, 0.0]), nice_ticks(0.0, max([*ys, 1e-9]))[-1]
    body = _y_axis(left, top, height, width, ymax, ylabel)

    def px(x: float) -> float:
        return left + width * x / xmax

    def py(y: float) -> float:
        return top + height - height * (y - ymin) / ((ymax - ymin) or 1.0)

    for name, x, y in zip(labels, xs, ys, strict=True):
        tip = f"{name}: {ylabel} {y:.4g}, {xlabel} {x:.4g}"
        body.append(
            f'<circle cx="{_num(px(x))}" cy="{_num(py(y))}" r="5" fill="{SERIES_COLORS[0]}">'
            f"<title>{_esc(tip)}</title></circle>"
        )
        body.append(_text(px(x) + 7, py(y) + 4, _short(name, 24), "start", "tick"))
    for x in xticks:
        body.append(_text(px(x), top + height + 13, tick_label(x, xticks), "middle", "tick"))
    body.append(_text(left + width / 2, top + height + 28, xlabel, "middle", "axis-label"))
    return _svg(left + width + 20, top + height + 36, title, body)
