"""The one CSV writer: every CSV file clineval writes (compare's, the samples export, a
benchmark's exporter) is made here, so that none can carry a spreadsheet formula.

A cell whose text begins with `=`, `+`, `-`, `@`, a tab or a carriage return is read by a
spreadsheet (Excel, LibreOffice, Google Sheets) as a formula: a model's answer
`=HYPERLINK("http://...")` would become a live link, or worse, in the reader's sheet. Such a
cell is written with a leading apostrophe (`'=HYPERLINK(...)`), which spreadsheets show as
text and pandas reads as one more character. A number (`-0.25`, `+3`, `-1e-05`) is left as it
is: it cannot be a formula, and a signed figure must stay a figure. The report's in-page CSV
downloads follow the same rule (report.js, `csvField`).
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Sequence
from typing import Any

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def safe_cell(value: Any) -> str:
    """The cell's text (None: empty), with a leading apostrophe where a spreadsheet would read
    it as a formula."""
    text = "" if value is None else str(value)
    if text.startswith(_FORMULA_START) and not _NUMBER.fullmatch(text):
        return "'" + text
    return text


def csv_text(header: Sequence[Any], rows: Iterable[Sequence[Any]]) -> str:
    """A CSV file's text: `header`, then `rows`, every cell through `safe_cell`, quoted only
    where needed. Lines end in CRLF, as RFC 4180 has them: the csv module quotes a field that
    holds a character of the line end, so a carriage return inside a model's answer is quoted
    too (with "\\n" line ends it was written bare, and a reader split the row there)."""
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow([safe_cell(cell) for cell in header])
    writer.writerows([safe_cell(cell) for cell in row] for row in rows)
    return buffer.getvalue()
