"""Bash completion of names with a colon: bash splits `ner:b` at the colon (':' is in its
COMP_WORDBREAKS) and replaces only the part after it, so the completer joins the pieces and
answers with what follows the last colon (clineval.cli.completion)."""

from __future__ import annotations

import pytest
from cli_inprocess import bash_completion

from clineval.cli.completion import glue_colons


@pytest.mark.parametrize(
    ("words", "current", "expected"),
    [
        (["clineval", "run", "ner", ":", "b"], 4, (["run"], "ner:b", "ner:")),
        (["clineval", "run", "ner", ":"], 3, (["run"], "ner:", "ner:")),
        (["clineval", "run", "ner:b"], 2, (["run"], "ner:b", "")),  # no ':' in WORDBREAKS
        (["clineval", "run", "ner", ":", "ncbi", "tc"], 5, (["run", "ner:ncbi"], "tc", "")),
        (["clineval", "run", "ner", ":", "ncbi"], 5, (["run", "ner:ncbi"], "", "")),
        (
            ["clineval", "run", "-m", "openai", ":", "gpt"],
            5,
            (["run", "-m"], "openai:gpt", "openai:"),
        ),
    ],
)
def test_glue_colons(words: list[str], current: int, expected: tuple[list[str], str, str]) -> None:
    assert glue_colons(words, current) == expected


@pytest.mark.parametrize(
    ("words", "offered"),
    [
        ("clineval run ner : b", ["bc5cdr", "biored"]),  # ner:b<Tab>
        ("clineval run ner :", ["ncbi", "bc5cdr", "biored", "chia"]),  # ner:<Tab>
        ("clineval run tcm-sd ner : nc", ["ncbi"]),
        ("clineval run ner", ["ner:ncbi", "ner:bc5cdr", "ner:biored", "ner:chia"]),
        ("clineval run healthbench : h", ["hard"]),
        ("clineval tasks ner : c", ["chia"]),
        ("clineval data fetch bi", ["biored"]),
        ("clineval data synth tcm", ["tcm-sd"]),
    ],
)
def test_bash_completion_answers_the_part_after_the_colon(words: str, offered: list[str]) -> None:
    assert bash_completion(words) == offered
