"""examples/plugin-benchmark, installed the way a user installs it (pip, its own pyproject.toml,
the `clineval.benchmarks` entry point), then used through every surface with no change to
clineval: tasks, run, resume, score, report, compare (ranked by the declared direction, with
the paired test), export, the Python API, a chat model, and bad input.

Expected figures are counted by hand from the example's files: predictions-a.jsonl answers 9
of the 12 questions right, one wrong (fixture-04), one unreadable ("不确定", fixture-09) and
leaves one out (fixture-12); predictions-b.jsonl answers all 12, 7 right.
"""

from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path

import pytest
from cli_inprocess import Done
from llm_stub_server import StubServer
from plugin_fixtures import example_cli, example_process

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "plugin-benchmark"


def cli(site: Path, *args: str) -> Done:
    """`clineval --quiet ARGS` in this process, in the example's folder (the `site` fixture
    has put the installed plugin on the import path)."""
    return example_cli(EXAMPLE, *args)


def results(run: Path) -> dict[str, object]:
    return dict(json.loads((run / "results.json").read_text())["example-mcq"])


def test_the_template_stays_small() -> None:
    """The template is what every new benchmark copies: it was 206 Python lines when its
    declaration still held a function only to import its task lazily."""
    package = EXAMPLE / "clineval_example_mcq"
    lines = sum(len(p.read_text().splitlines()) for p in package.glob("*.py"))
    assert lines <= 196


def test_the_plugin_through_every_surface(site: Path, tmp_path: Path) -> None:
    # a new interpreter finds the installed plugin on its path, as a user's shell does
    listed = example_process(EXAMPLE, site, "tasks")
    assert listed.returncode == 0 and "example-mcq" in listed.stdout, listed.stderr

    run_a, run_b = tmp_path / "a", tmp_path / "b"
    first = cli(site, "run", "example-mcq", "--model", "predictions:predictions-a.jsonl",
                "--output-dir", str(run_a))  # fmt: skip
    # one question has no answer: results written, exit 1 with one line saying so
    assert first.returncode == 1, first.stderr
    assert "error: example-mcq: 1 of 12 samples have no prediction" in first.stderr
    a = results(run_a)
    assert a["accuracy"] == pytest.approx(9 / 12)
    assert a["invalid_rate"] == pytest.approx(2 / 12) and a["n"] == 12
    assert a["missing_predictions"] == 1  # counted by the kit: the template has no code for it
    ci = a["accuracy_ci"]
    assert isinstance(ci, list)
    low, high = ci
    assert 0 <= low <= 9 / 12 <= high <= 1 and a["fixture"] is True
    manifest = json.loads((run_a / "manifest.json").read_text())
    notes = manifest["tasks"]["example-mcq"]
    assert (notes["family"], notes["primary_metric"], notes["higher_is_better"]) == (
        "example-mcq", "accuracy", True,
    )  # fmt: skip

    assert cli(site, "run", "example-mcq", "--model", "predictions:predictions-b.jsonl",
               "--output-dir", str(run_b)).returncode == 0  # fmt: skip
    assert results(run_b)["accuracy"] == pytest.approx(7 / 12)

    # resume: the same command again computes nothing new and gives the same results
    before = (run_a / "results.json").read_text()
    again = cli(site, "run", "example-mcq", "--model", "predictions:predictions-a.jsonl",
                "--output-dir", str(run_a))  # fmt: skip
    assert again.returncode == 1 and (run_a / "results.json").read_text() == before
    scored = cli(site, "score", str(run_b))
    assert scored.returncode == 0, scored.stderr
    assert results(run_b)["accuracy"] == pytest.approx(7 / 12)

    report = tmp_path / "report.html"
    made = cli(site, "report", str(run_a), "-o", str(report))
    assert made.returncode == 0, made.stderr
    html = report.read_text()
    assert "example-mcq" in html and "0.7500" in html

    table = tmp_path / "compare.csv"
    compared = cli(site, "compare", str(run_a), str(run_b), "--format", "csv", "-o", str(table))
    assert compared.returncode == 0, compared.stderr
    rows = list(csv.reader(table.open()))
    text = "\n".join(",".join(r) for r in rows)
    assert "accuracy" in text and "invalid_rate" in text and "missing_predictions" not in text

    exported = cli(site, "export", str(run_b), "--format", "samples-csv", "-o", str(tmp_path / "x"))
    assert exported.returncode == 0, exported.stderr
    assert len(list(csv.reader((tmp_path / "x" / "example-mcq.samples.csv").open()))) == 13


def test_compare_ranks_by_the_declared_direction(site: Path, tmp_path: Path) -> None:
    from clineval.report.compare.build import build_comparison

    for name in ("a", "b"):
        cli(site, "run", "example-mcq", "--model", f"predictions:predictions-{name}.jsonl",
            "--output-dir", str(tmp_path / name))  # fmt: skip
    comparison = build_comparison([tmp_path / "a", tmp_path / "b"])
    assert comparison.leader("example-mcq", "accuracy") == 0  # higher is better: run a
    assert comparison.leader("example-mcq", "invalid_rate") == 1  # lower is better: run b
    pair = [p for p in comparison.pairs if p.metric == "accuracy"]
    assert len(pair) == 1 and pair[0].difference is not None
    assert pair[0].difference == pytest.approx(9 / 12 - 7 / 12)
    assert pair[0].n_shared == 12


def test_the_python_api(site: Path, tmp_path: Path) -> None:
    import clineval

    result = clineval.run(
        "example-mcq", model=f"predictions:{EXAMPLE / 'predictions-b.jsonl'}",
        output_dir=tmp_path / "api",
    )  # fmt: skip
    metrics = result["example-mcq"]
    assert metrics.family == "example-mcq" and metrics.primary_metric == "accuracy"
    assert metrics.primary == pytest.approx(7 / 12) and metrics.accuracy == pytest.approx(7 / 12)
    assert metrics.invalid_rate == 0 and metrics.fixture


def test_bad_input_is_one_line_and_writes_nothing(site: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "fixture-01", "answer": "A"}\n{"id": "nope", "answer": "B"}\n')
    out = tmp_path / "run"
    done = cli(
        site, "run", "example-mcq", "--model", f"predictions:{bad}", "--output-dir", str(out)
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [f"error: {bad}:2: unknown id 'nope' (not a sample)"]
    # nothing of a run: no manifest, store or results (at most the lock file of the attempt)
    assert not out.exists() or {p.name for p in out.iterdir()} <= {".lock"}


def test_a_chat_model_and_its_dry_run(site: Path, tmp_path: Path) -> None:
    out = tmp_path / "chat"
    with StubServer() as stub:
        stub.script([], default={"do": "ok", "content": "答案：B"})
        spec = f"openai:stub@{stub.base_url}"
        plan = cli(
            site, "run", "example-mcq", "--model", spec, "--output-dir", str(out), "--dry-run"
        )
        assert plan.returncode == 0 and "12" in plan.stdout, plan.stderr
        assert not out.exists()
        done = cli(site, "run", "example-mcq", "--model", spec, "--output-dir", str(out))
        assert done.returncode == 0, done.stderr
    # B is the answer of fixture-01, -03, -08 and -11
    assert results(out)["accuracy"] == pytest.approx(4 / 12)


def test_a_full_predictions_file_serves_limit_and_shards(site: Path, tmp_path: Path) -> None:
    """predictions-b.jsonl answers all 12 questions: --limit and --shard take their part of it
    (ids outside the part are questions of the dataset, not errors), and the shards merge
    into the unsharded result."""
    spec = "predictions:predictions-b.jsonl"
    limited = cli(site, "run", "example-mcq", "--model", spec, "--limit", "5",
                  "--output-dir", str(tmp_path / "limit"))  # fmt: skip
    assert limited.returncode == 0, limited.stderr
    # the first five questions: fixture-01..05, of which b gets 01, 03 and 04 right
    assert results(tmp_path / "limit")["n"] == 5
    assert results(tmp_path / "limit")["accuracy"] == pytest.approx(3 / 5)
    shards = [tmp_path / f"shard{i}" for i in (1, 2)]
    sizes = []
    for i, out in enumerate(shards, start=1):
        done = cli(site, "run", "example-mcq", "--model", spec, "--shard", f"{i}/2",
                   "--output-dir", str(out))  # fmt: skip
        assert done.returncode == 0, done.stderr
        sizes.append(results(out)["n"])
    assert sum(sizes) == 12 and all(sizes)  # type: ignore[arg-type]
    merged = cli(site, "merge", *map(str, shards), "-o", str(tmp_path / "merged"))
    assert merged.returncode == 0, merged.stderr
    assert results(tmp_path / "merged")["accuracy"] == pytest.approx(7 / 12)
    assert results(tmp_path / "merged")["n"] == 12


def test_one_predictions_file_per_task_and_its_sha256(site: Path, tmp_path: Path) -> None:
    out = tmp_path / "per-task"
    done = cli(site, "run", "example-mcq", "--model", "predictions:example-mcq=predictions-b.jsonl",
               "--output-dir", str(out))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert results(out)["accuracy"] == pytest.approx(7 / 12)
    notes = json.loads((out / "manifest.json").read_text())["tasks"]["example-mcq"]
    expected = hashlib.sha256((EXAMPLE / "predictions-b.jsonl").read_bytes()).hexdigest()
    assert notes["predictions_file"]["sha256"] == expected
    assert notes["predictions_file"]["path"].endswith("predictions-b.jsonl")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"question": "q", "options": {}, "answer": "A"}', 'expected string "id" and "question"'),
        ('{"id": "x", "options": {}, "answer": "A"}', 'expected string "id" and "question"'),
        ('{"id": "x", "question": "q", "options": {"A": "a"}, "answer": "A"}', "expected options"),
    ],
)
def test_the_templates_reader_names_file_and_line(
    site: Path, tmp_path: Path, line: str, message: str
) -> None:
    """What every copy of the template inherits: a bad questions file is one line naming
    file and line, never a KeyError from inside the reader."""
    from clineval_example_mcq.task import read_questions  # installed by the `site` fixture

    from clineval.benchmarks import InputError

    options = {letter: letter.lower() for letter in "ABCD"}
    good = json.dumps({"id": "q1", "question": "q", "options": options, "answer": "A"})
    questions = tmp_path / "questions.jsonl"
    questions.write_text(f"{good}\n{line}\n")
    with pytest.raises(InputError, match=message) as refused:
        read_questions(questions)
    assert refused.value.path == str(questions) and refused.value.line == 2
