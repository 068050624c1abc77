"""Data embedded in HTML as JSON inside <script type="application/json">.

Inside a script element the HTML parser ends the element at the first `</script`, whatever the
JSON means, and `<!--` changes how it scans. Escaping `<`, `>` and `&` as JSON unicode escapes
removes every such sequence; U+2028/U+2029 are escaped too because older JavaScript engines
treat them as line ends. JSON.parse turns the escapes back into the original characters.
"""

from __future__ import annotations

import base64
import gzip
import json
import math
from typing import Any

# Above this many bytes of JSON a data block is stored gzip + base64 (DecompressionStream in
# the page): Chinese text compresses about 3x, which keeps a full ClinConsensus run (27,000
# verdicts with explanations) well under 10 MB. Smaller blocks stay plain, readable JSON.
COMPRESS_OVER = 1_000_000

_ESCAPES = (
    ("<", "\\u003c"),
    (">", "\\u003e"),
    ("&", "\\u0026"),
    ("\u2028", "\\u2028"),
    ("\u2029", "\\u2029"),
)


def _dumps(obj: Any) -> str:
    try:  # fast path: the C encoder; only data with NaN/inf needs the Python clean-up walk
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except ValueError:
        return json.dumps(
            without_nan(obj), ensure_ascii=False, separators=(",", ":"), allow_nan=False
        )


def script_json(obj: Any) -> str:
    """Compact JSON (UTF-8 kept, it is smaller than \\u escapes) safe inside a script element."""
    text = _dumps(obj)
    for raw, escaped in _ESCAPES:  # str.replace per character: far faster than str.translate
        if raw in text:
            text = text.replace(raw, escaped)
    return text


def without_nan(obj: Any) -> Any:
    """NaN and infinities become null: JSON has no spelling for them."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: without_nan(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [without_nan(v) for v in obj]
    return obj


def script_payload(obj: Any, compress_over: int = COMPRESS_OVER) -> tuple[str, str]:
    """(encoding, text) for a data script element: ("json", safe JSON) or ("gzip-base64", b64).

    Base64's alphabet has no `<`, `>` or `&`, so the compressed form is just as inert.
    """
    text = script_json(obj)
    raw = text.encode("utf-8")
    if len(raw) <= compress_over:
        return "json", text
    packed = gzip.compress(raw, compresslevel=3, mtime=0)  # 3: most of 6's gain, 1/3 the time
    return "gzip-base64", base64.b64encode(packed).decode("ascii")
