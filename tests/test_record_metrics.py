"""The run record names every declared metric (direction, headline and count flags, the
per-sample field), and compare, the report and the Python API rank by it when the benchmark
that wrote the run is not installed: a plugin's lower-is-better Hamming loss stays
lower-is-better, its counts are shown but not ranked, and the paired test is made.

The plugin is a real distribution (dist-info + entry point on the import path) used by CLI
runs (in this process); then it is taken off the path and the runs are compared without it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from cli_inprocess import clineval_inprocess
from plugin_fixtures import on_path

import clineval
from clineval.benchmarks import registry

PLUGIN = """
from pathlib import Path
from clineval.benchmarks import (
    PREDICTION, Benchmark, DataFileStatus, MetricSchema, MetricSpec, Task, TaskResult,
    read_predictions,
)

TASK = "fixture-codes"
# FIXTURE: four synthetic records, each with a set of three possible codes
GOLD = {"r1": "AB", "r2": "A", "r3": "C", "r4": "BC"}


class Codes(Task):
    name = family = TASK
    description = "FIXTURE multi-label codes"

    def data_status(self, data_root):
        return [DataFileStatus("none", "ok")]

    def load(self, ctx):
        return read_predictions(Path(ctx.model.name), set(GOLD), "codes")

    def predict(self, ctx, data):
        ctx.store.put_records(TASK, PREDICTION, [(i, {"codes": v}) for i, v in data.items()])

    def evaluate(self, ctx, data):
        stored = ctx.store.records(TASK, PREDICTION)
        rows = []
        for i, gold in GOLD.items():
            pred = stored[i]["codes"]
            wrong = sum((c in gold) != (c in pred) for c in "ABC")
            rows.append({"id": i, "loss": wrong / 3})
        loss = sum(r["loss"] for r in rows) / len(rows)
        return TaskResult({"hamming_loss": loss, "n": len(rows), "fixture": True}, rows)


BENCHMARK = Benchmark(
    TASK, "FIXTURE codes", (TASK,), lambda name: Codes(),
    MetricSchema((
        MetricSpec("hamming_loss", "share of wrong code decisions", higher_is_better=False,
                   per_sample="loss"),
        MetricSpec("n", "records", count=True),
    )),
    capabilities=frozenset({"predictions"}),
)
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two runs of the plugin: `good` (hamming loss 1/12) and `poor` (6/12)."""
    root = tmp_path_factory.mktemp("record")
    site = root / "site"
    site.mkdir()
    (site / "fixture_codes.py").write_text(PLUGIN)
    info = site / "fixture_codes-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fixture-codes\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[clineval.benchmarks]\nfixture-codes = fixture_codes:BENCHMARK\n"
    )
    answers = {
        "good": {"r1": "AB", "r2": "A", "r3": "C", "r4": "B"},  # one wrong decision of 12
        "poor": {"r1": "A", "r2": "AB", "r3": "AC", "r4": "A"},  # six wrong: 1 + 1 + 1 + 3
    }
    with on_path(site):
        for name, codes in answers.items():
            file = root / f"{name}.jsonl"
            lines = [json.dumps({"id": k, "codes": v}) + "\n" for k, v in codes.items()]
            file.write_text("".join(lines))
            done = clineval_inprocess("run", "fixture-codes", "--model", f"predictions:{file}",
                                      "--output-dir", str(root / name))  # fmt: skip
            assert done.returncode == 0, done.stderr
    sys.modules.pop("fixture_codes", None)
    # off the path, the plugin is not found again (its runs are read without it)
    assert registry.benchmark_of("fixture-codes") is None
    return root / "good", root / "poor"


def test_the_record_names_every_metric(runs: tuple[Path, Path]) -> None:
    notes = json.loads((runs[0] / "manifest.json").read_text())["tasks"]["fixture-codes"]
    assert notes["primary_metric"] == "hamming_loss" and notes["higher_is_better"] is False
    assert [
        (m["key"], m["higher_is_better"], m["headline"], m["count"]) for m in notes["metrics"]
    ] == [
        ("hamming_loss", False, True, False),
        ("n", True, True, True),
    ]
    assert notes["metrics"][0]["per_sample"] == "loss"


def test_compare_without_the_plugin_ranks_by_the_record(runs: tuple[Path, Path]) -> None:
    good, poor = runs
    # as the command prints it, without the plugin: the loss is marked lower is better, and
    # the lower loss is bold (every paired resample favours it)
    done = clineval_inprocess("compare", str(poor), str(good), "--format", "markdown")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "| task | metric | poor (fixture) | good (fixture) |"
    row = next(line for line in lines if line.startswith("| fixture-codes |"))  # leaderboard
    assert row.startswith("| fixture-codes | hamming_loss (lower is better) | 0.5000")
    assert row.split(" | ")[3].startswith("**0.0833") and "**" not in row.split(" | ")[2]
    assert "| fixture-codes | n " not in done.stdout  # a count is not a leaderboard row

    comparison = clineval.compare([poor, good])
    cells = {(c.run, c.metric): c for c in comparison.leaderboard}
    assert set(cells) == {("poor", "hamming_loss"), ("good", "hamming_loss")}
    assert cells[("good", "hamming_loss")].leader and not cells[("poor", "hamming_loss")].leader
    assert cells[("good", "hamming_loss")].best and not cells[("poor", "hamming_loss")].best
    assert cells[("good", "hamming_loss")].higher_is_better is False
    # the paired test, from the recorded per-sample field: poor - good = 6/12 - 1/12
    (pair,) = comparison.pairs
    assert pair.metric == "hamming_loss" and pair.n_shared == 4
    assert pair.difference == pytest.approx(6 / 12 - 1 / 12)


def test_the_api_exposes_each_metrics_spec(runs: tuple[Path, Path]) -> None:
    metrics = clineval.RunResult.load(runs[0])["fixture-codes"]
    assert metrics.primary_metric == "hamming_loss" and metrics.higher_is_better is False
    assert metrics.primary == pytest.approx(1 / 12) and metrics.n == 4
    loss, n = metrics.specs
    assert (loss.key, loss.higher_is_better, loss.per_sample) == ("hamming_loss", False, "loss")
    assert n.count and metrics.spec("n") == n and metrics.spec("nope") is None


def test_an_older_record_without_the_metrics_still_ranks_its_primary(
    runs: tuple[Path, Path], tmp_path: Path
) -> None:
    import shutil

    old = []
    for run in runs:
        copy = tmp_path / run.name
        shutil.copytree(run, copy)
        manifest = json.loads((copy / "manifest.json").read_text())
        for key in ("metrics", "tables"):
            del manifest["tasks"]["fixture-codes"][key]
        (copy / "manifest.json").write_text(json.dumps(manifest))
        old.append(copy)
    comparison = clineval.compare(old)
    leader = {c.metric: c.run for c in comparison.leaderboard if c.leader}
    assert leader["hamming_loss"] == "good"  # the primary's recorded direction still holds
    assert clineval.RunResult.load(old[0])["fixture-codes"].specs == ()


def test_the_report_without_the_plugin_reads_the_record(runs: tuple[Path, Path]) -> None:
    from clineval.report.html import build_sections
    from clineval.reportkit.rundata import load_run

    (section,) = build_sections(load_run(runs[1]))
    cards = {card.key: card for card in section["cards"]}
    assert set(cards) == {"hamming_loss", "n"}  # the recorded headline figures
    # the interval the task did not store, bootstrapped from the recorded per-sample field
    assert cards["hamming_loss"].ci is not None and cards["hamming_loss"].raw == 0.5
