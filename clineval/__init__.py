"""clineval: evaluation harness for clinical and Chinese-medical NLP perf.

The Python API (clineval.api) is loaded on first use of one of its names (PEP 562): a plain
`import clineval` imports nothing heavy, which the `clineval` executable relies on to handle a
Ctrl-C during start-up (clineval/entry.py).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from clineval.version import __version__

__all__ = [
    "Comparison",
    "InputError",
    "LeaderboardCell",
    "PairedTest",
    "RunFailed",
    "RunResult",
    "RunSettings",
    "TaskMetrics",
    "__version__",
    "compare",
    "dry_run",
    "run",
    "score",
    "write_report",
]

if TYPE_CHECKING:
    from clineval.api import (
        Comparison,
        LeaderboardCell,
        PairedTest,
        RunFailed,
        RunResult,
        RunSettings,
        TaskMetrics,
        compare,
        dry_run,
        run,
        score,
        write_report,
    )
    from clineval.errors import InputError

_HOME = {name: "clineval.api" for name in __all__ if name not in ("InputError", "__version__")}
_HOME["InputError"] = "clineval.errors"


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'clineval' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
