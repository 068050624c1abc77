"""`clineval compare` tables fit the terminal: no cell cut to `ne… 0.…`, every figure in full.

Two (or five) NER runs over four tasks make a 14-column leaderboard: at 80 columns it is laid
out with the runs as columns (one row per task and metric); Markdown / CSV keep their layout.
"""

from __future__ import annotations

import io
import random
from pathlib import Path

import pytest
from rich.console import Console

from clineval.benchmarks.ner.records import NerDocument, Span
from clineval.benchmarks.ner.scoring import score_documents
from clineval.report.compare.command import compare_runs
from clineval.report.compare.model import Comparison
from clineval.report.compare.render import pair_figures, render_markdown
from clineval.reportkit.sections_common import format_value
from clineval.rundir import write_json, write_jsonl

TASKS = ("ner:ncbi", "ner:bc5cdr", "ner:biored", "ner:chia")
TEXT = "Aspirin causes renal failure in some patients with heparin use."  # fixture/synthetic


def _ner_run(path: Path, seed: int) -> Path:
    """A run directory of the four NER tasks scored on fixture documents."""
    rng = random.Random(seed)
    results, samples = {}, []
    for task in TASKS:
        gold = [Span(0, 7, "drug"), Span(15, 28, "condition"), Span(51, 58, "drug")]
        docs = [NerDocument(f"d{i}", TEXT, gold) for i in range(30)]
        preds = [[s for s in gold if rng.random() < 0.75] for _ in docs]
        metrics, rows = score_documents(docs, preds, ("drug", "condition"))
        results[task] = metrics
        samples += [{"task": task, **row} for row in rows]
    path.mkdir(parents=True)
    write_json(path / "results.json", results)
    write_json(path / "manifest.json", {"config": {"model": f"baseline:crf-{seed}"}})
    write_jsonl(path / "samples.jsonl", samples)
    return path


def _render(runs: list[Path], width: int) -> tuple[Comparison, str]:
    console = Console(width=width, record=True, file=io.StringIO())
    comp = compare_runs(runs, fmt="table", console=console)
    return comp, console.export_text()


def _figures(comp: Comparison) -> list[str]:
    """Every value and interval the leaderboard and the paired tests must show, as text."""
    out = []
    for (_, _, key), cell in comp.cells.items():
        out.append(format_value(key, cell.value))
        if cell.ci is not None:
            out.append(f"[{format_value(key, cell.ci[0])}, {format_value(key, cell.ci[1])}]")
    for pair in comp.pairs:
        r, key = pair_figures(pair), pair.metric
        assert r is not None
        out += [format_value(key, r.difference), f"{r.p_value:.4f}"]
        out.append(f"[{format_value(key, r.ci[0])}, {format_value(key, r.ci[1])}]")
    return out


@pytest.mark.parametrize("n_runs", [2, 5])
def test_an_80_column_terminal_gets_every_figure_in_full(tmp_path: Path, n_runs: int) -> None:
    runs = [_ner_run(tmp_path / f"run-{seed}", seed) for seed in range(n_runs)]
    comp, text = _render(runs, 80)
    assert len(comp.columns) == 12  # 14 columns with run and model, in the wide layout
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) <= 80
    lines = text.splitlines()
    for figure in _figures(comp):
        assert any(figure in line for line in lines), figure  # whole, on one line
    for task in TASKS:
        assert task in text
    for seed in range(n_runs):
        assert f"run run-{seed}: model baseline:crf-{seed}" in text  # which model each run is


def test_a_wide_terminal_keeps_one_row_per_run(tmp_path: Path) -> None:
    runs = [_ner_run(tmp_path / f"run-{seed}", seed) for seed in range(2)]
    # 12 figures a run, each with its interval and n: about 420 columns as one row per run
    comp, text = _render(runs, 480)
    rows = [line for line in text.splitlines() if line.startswith("│ run-")]
    assert [row.split()[1] for row in rows] == ["run-0", "run-1"]
    assert "…" not in text
    # Markdown keeps its layout whatever the terminal: one row per task and metric, a column
    # per run, so a 14-metric suite stays 4 columns wide
    table = render_markdown(comp).split("\n\n")[0].splitlines()
    assert table[0] == "| task | metric | run-0 | run-1 |"
    assert len(table) == 2 + len(comp.columns) and len(comp.columns) >= 8
