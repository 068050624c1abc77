"""compare names what differs between runs, gives every figure its n, flags other samples.

A three-judge study (one candidate, three judges) read as three identical rows, and a
`--limit 5` run stood beside a full one with no n. Fixture runs built by hand; what each
format must show is worked out from how the runs were built.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from clineval.cli import main
from clineval.report.compare.build import build_comparison
from clineval.report.compare.command import render_json
from clineval.report.compare.html import render_html
from clineval.report.compare.render import render_csv, render_markdown, render_table
from clineval.rundir import write_json, write_jsonl

CAND = "openai:cand@http://127.0.0.1:8000/v1"


def _run(path: Path, n: int, config: dict[str, Any], start: int = 0) -> Path:
    """A fixture TCM-SD run of samples s{start}..s{start + n - 1}, every other one right."""
    path.mkdir(parents=True)
    ids = [f"s{k}" for k in range(start, start + n)]
    rows = [
        {"task": "tcm-sd", "id": i, "gold": "a", "pred": "a" if k % 2 else "b", "correct": k % 2}
        for k, i in enumerate(ids)
    ]
    acc = sum(r["correct"] for r in rows) / n
    write_json(path / "results.json", {"tcm-sd": {"accuracy": acc, "fixture": True}})
    write_json(
        path / "manifest.json",
        {"config": {"model": CAND, "seed": 0, "limit": None, "concurrency": 8, **config}},
    )
    write_jsonl(path / "samples.jsonl", rows)
    return path


def test_a_three_judge_study_names_each_runs_judge(tmp_path: Path, capsys: Any) -> None:
    runs = [
        _run(tmp_path / f"fixture-j{k}", 40, {"judges": [f"openai:judge{k}"], "concurrency": k})
        for k in range(3)
    ]
    comp = build_comparison(runs, n_resamples=200)
    # concurrency differs too, but it changes nothing scored: not named
    assert comp.differences.keys == ["judges"]
    assert [comp.settings(i) for i in range(3)] == [f"judges openai:judge{k}" for k in range(3)]
    md = render_markdown(comp)
    html = render_html(comp)
    rows = list(csv.DictReader(io.StringIO(render_csv(comp))))
    doc = json.loads(render_json(comp))
    assert doc["differing_settings"] == ["judges"]
    for k in range(3):
        assert f"judges openai:judge{k}" in md and f"judges openai:judge{k}" in html
        assert doc["runs"][k]["settings"] == {"judges": f"openai:judge{k}"}
        score = next(r for r in rows if r["kind"] == "score" and r["run"] == f"fixture-j{k}")
        assert score["settings"] == f"judges openai:judge{k}" and score["n"] == "40"
    assert main(["compare", *map(str, runs), "--resamples", "200"]) == 0
    out = capsys.readouterr().out
    assert all(f"openai:judge{k}" in out for k in range(3))


def test_a_limited_run_is_flagged_and_every_cell_has_its_n(tmp_path: Path) -> None:
    full = _run(tmp_path / "fixture-full", 100, {})
    short = _run(tmp_path / "fixture-limit5", 5, {"limit": 5})
    comp = build_comparison([full, short], n_resamples=200)
    assert comp.differences.keys == ["limit"]
    assert comp.settings(1) == "limit 5" and comp.settings(0) == "limit (none)"
    assert comp.cells[(0, "tcm-sd", "accuracy")].n == 100
    assert comp.cells[(1, "tcm-sd", "accuracy")].n == 5
    assert comp.samples_note(1) == "tcm-sd: 5 of the 100 samples the runs scored"
    md = render_markdown(comp)
    assert "(n=100)" in md and "(n=5)" in md
    assert "fixture-limit5 (fixture) [samples differ]" in md
    doc = json.loads(render_json(comp))
    cells = {c["run"]: c for c in doc["leaderboard"]}
    assert cells["fixture-limit5"]["n"] == 5 and cells["fixture-limit5"]["samples_differ"]
    assert doc["runs"][1]["samples_differ"] == {"tcm-sd": "5 of the 100 samples the runs scored"}
    html = render_html(comp)
    assert "5 of the 100 samples the runs scored" in html and "(n=5)" in html
    from rich.console import Console

    console = Console(record=True, width=200, file=io.StringIO())
    render_table(comp, console)
    text = console.export_text()
    assert "[samples differ]" in text and "(n=5)" in text and "limit 5" in text


def test_runs_with_the_same_samples_and_settings_name_no_difference(tmp_path: Path) -> None:
    a = _run(tmp_path / "fixture-a", 30, {})
    b = _run(tmp_path / "fixture-b", 30, {})
    comp = build_comparison([a, b], n_resamples=200)
    assert comp.differences.keys == [] and comp.sample_notes == {}
    assert "differ" not in render_markdown(comp).split("| run | model |")[1].split("\n")[2]


def test_options_seed_and_secrets(tmp_path: Path) -> None:
    a = _run(tmp_path / "fixture-k7", 30, {"options": {"clinconsensus.k": 7}, "seed": 1})
    b = _run(
        tmp_path / "fixture-k10",
        30,
        {
            "options": {"clinconsensus.k": 10},
            "model": "openai:c@https://u:sk-secretkey123456789@h/v1",
        },
    )
    comp = build_comparison([a, b], n_resamples=200)
    assert comp.differences.keys == ["candidate", "seed", "option clinconsensus.k"]
    assert comp.settings(0).endswith("option clinconsensus.k 7")
    assert "sk-secretkey123456789" not in render_markdown(comp)


def test_the_recorded_judge_prompt_names_a_difference(tmp_path: Path) -> None:
    # both runs give no --judge-prompt path; their verdicts record different prompts
    a = _run(tmp_path / "fixture-pa", 30, {"judge_prompt": None})
    b = _run(tmp_path / "fixture-pb", 30, {"judge_prompt": None})
    for path, prompt in ((a, "official-3f2a"), (b, "custom-9c1d")):
        results = json.loads((path / "results.json").read_text(encoding="utf-8"))
        results["tcm-sd"]["judge_prompt"] = [prompt]
        write_json(path / "results.json", results)
    comp = build_comparison([a, b], n_resamples=200)
    assert comp.differences.keys == ["judge prompt"]
    assert comp.settings(1) == "judge prompt custom-9c1d"


def test_only_the_runs_missing_samples_are_flagged(tmp_path: Path) -> None:
    full = _run(tmp_path / "fixture-full", 40, {})
    first = _run(tmp_path / "fixture-shard-0", 20, {"shard": "0/2"})
    second = _run(tmp_path / "fixture-shard-1", 20, {"shard": "1/2"}, start=20)
    comp = build_comparison([full, first, second], n_resamples=200)
    assert comp.samples_note(0) == ""
    assert (
        comp.samples_note(1)
        == comp.samples_note(2)
        == ("tcm-sd: 20 of the 40 samples the runs scored")
    )
    assert comp.differences.keys == ["shard"]
    # the two shards share no sample: their pair is not tested, and says why
    pair = next(
        p for p in comp.pairs if {p.run_a, p.run_b} == {"fixture-shard-0", "fixture-shard-1"}
    )
    assert pair.difference is None and pair.note == "no shared samples"
