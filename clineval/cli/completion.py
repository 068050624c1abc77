"""Bash completion of names that hold a colon (`ner:ncbi`, `openai:`).

Bash splits the word being completed at every character of $COMP_WORDBREAKS, which holds ':'
by default: `clineval run ner:b<Tab>` reaches the completer as the words `ner`, `:`, `b`, and
whatever it answers replaces only the `b`. typer's bash completer takes `b` for the word, finds
no task starting with it, and bash falls back to file names (`ner:build/`). This one joins the
pieces back (`ner:b`), completes that, and answers with the part after the last colon, which
is what bash replaces. A shell whose $COMP_WORDBREAKS has no ':' sends `ner:b` whole and gets
whole names back. It works with the script typer prints and installs, unchanged.

Internal: not part of clineval's public API.
"""

from __future__ import annotations

from typing import Any


def glue_colons(words: list[str], current: int) -> tuple[list[str], str, str]:
    """The command line's words as typed (`ner`, `:`, `b` -> `ner:b`), from bash's words and
    the index of the word under the cursor: (the words before it, the word, and the part of
    the word that bash will not replace: "" unless bash split the word at a colon)."""
    glued: list[str] = []
    split_at = 0  # how many pieces the last glued word was made of
    after_colon = False
    for word in words[: current + 1]:
        colon = bool(word) and set(word) == {":"}
        if glued and (colon or after_colon):
            glued[-1] += word
            split_at += 1
        else:
            glued.append(word)
            split_at = 1
        after_colon = colon
    if current >= len(words):  # the cursor starts a new word, after a space
        return glued[1:], "", ""
    incomplete = glued[-1] if glued else ""
    kept = incomplete[: incomplete.rindex(":") + 1] if split_at > 1 else ""
    return glued[1:-1], incomplete, kept


def register_bash_completion() -> None:
    """Make `ColonBashComplete` bash's completer (after typer's registration of its own)."""
    # typer's completion module holds the click it completes with (its vendored copy since
    # 0.29, the click package before), so these names come from it
    import typer._completion_classes as classes
    from typer._completion_classes import BashComplete

    add_completion_class = getattr(classes, "add_completion_class")  # noqa: B009
    click_split_arg_string = getattr(classes, "click_split_arg_string")  # noqa: B009

    class ColonBashComplete(BashComplete):
        _kept = ""

        def get_completion_args(self) -> tuple[list[str], str]:
            import os

            words = click_split_arg_string(os.environ["COMP_WORDS"])
            args, incomplete, self._kept = glue_colons(words, int(os.environ["COMP_CWORD"]))
            return args, incomplete

        def format_completion(self, item: Any) -> str:
            value = str(item.value)
            return value[len(self._kept) :] if value.startswith(self._kept) else value

    add_completion_class(ColonBashComplete, "bash")
