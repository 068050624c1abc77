"""Keep API keys out of logs, stores, reports and error messages."""

from __future__ import annotations

import os
import re

_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD)", re.IGNORECASE)
# Bearer tokens and sk-style keys that may sit in a message even without an env var.
_SECRET_PATTERNS = [
    re.compile(r"(Bearer\s+)[A-Za-z0-9._\-]{8,}"),
    re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}"),
    # user:password in a URL (http://user:KEY@host/v1): the whole userinfo goes.
    re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.\-]*://)[^/?#@\s]+@"),
    # a key in a query string (Azure-style ?api-key=..., ?token=...).
    re.compile(r"([?&][^=&#\s]*(?:key|token|secret|password|sig)[^=&#\s]*=)[^&#\s]+", re.I),
]


def secret_values() -> list[str]:
    """Values of environment variables whose names look secret (at least 6 chars long)."""
    return [v for k, v in os.environ.items() if _SECRET_NAME.search(k) and len(v) >= 6]


def _masked(match: re.Match[str]) -> str:
    """The match with its secret part replaced: group 1 (a prefix) is kept, "@" too."""
    prefix = match.group(1) if match.groups() else ""
    return prefix + "***" + ("@" if match.group(0).endswith("@") else "")


def redact(text: str) -> str:
    for value in secret_values():
        text = text.replace(value, "***")
    for pattern in _SECRET_PATTERNS:
        text = pattern.sub(_masked, text)
    return text
