"""The one way clineval makes a rich Console: with markup and emoji codes off.

Much of what clineval prints is the user's own text: run directories, model names, task and
file names, judge labels. rich reads `[...]` in a printed string as markup and `:name:` as an
emoji code, so an output directory `out[/i]run` ended a finished run in a MarkupError and a
model `openai:x[bold]y` was shown as `openai:xy`. Escaping each string where it is printed
misses one sooner or later; a Console that reads no markup misses none. Styling is given as
data instead: `style=` of a print or a column, or a `rich.text.Text`.
`tests/test_console_text.py` fails when a module makes a Console any other way.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console


def make_console(**settings: Any) -> Console:
    """A Console that prints every string as it is (rich's other `settings` as given)."""
    return Console(markup=False, emoji=False, **settings)
