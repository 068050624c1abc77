"""A judge flag (or another setting one benchmark owns: `Benchmark.run_settings`) given to a
run whose tasks never read it is refused as an unknown option is: one `error:` line naming
the flag and the tasks, exit 2, nothing created, with `--dry-run` too. A run with a judged
task still takes it. The commands run in process (`clineval.cli.main`), with a real stub server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_inprocess import Done, clineval_inprocess
from llm_stub_server import StubServer

from clineval.benchmarks.registry import benchmarks

NER = ["ner:ncbi", "--model", "baseline:crf"]
TCM = ["tcm-sd", "--option", "tcm.data=synthetic", "--model", "baseline:tfidf"]
OPENAI_NER = ["ner:ncbi", "-m", "openai:m@http://127.0.0.1:1/v1"]
JUDGE_URL = ["--judge-base-url", "http://127.0.0.1:2/v1"]


def _clineval(*args: str, cwd: Path) -> Done:
    return clineval_inprocess(*args, cwd=cwd)


@pytest.mark.parametrize("dry_run", [False, True])
@pytest.mark.parametrize(
    ("argv", "flag", "tasks"),
    [
        ([*NER, "--judge", "openai:x@http://127.0.0.1:1/v1"], "--judge", "ner:ncbi"),
        ([*TCM, "--judge", "llamacpp:/nowhere/judge.gguf"], "--judge", "tcm-sd"),
        ([*OPENAI_NER, *JUDGE_URL], "--judge-base-url", "ner:ncbi"),
        ([*NER, "--judge-prompt", "prompt.txt"], "--judge-prompt", "ner:ncbi"),
    ],
)
def test_a_flag_no_task_reads_is_refused_and_nothing_is_made(
    argv: list[str], flag: str, tasks: str, dry_run: bool, tmp_path: Path
) -> None:
    (tmp_path / "prompt.txt").write_text("fixture prompt {question}\n", encoding="utf-8")
    before = sorted(p.name for p in tmp_path.iterdir())
    done = _clineval("run", *argv, "-o", "run", *(["--dry-run"] if dry_run else []), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        f"error: {flag} applies to none of this run's tasks ({tasks}): it would be ignored\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == before


@pytest.mark.parametrize(
    ("argv", "named", "owner"),
    [
        (
            [*NER, "--cases", "cases.jsonl"],
            "--cases (--option clinconsensus.cases)",
            "clinconsensus",
        ),
        ([*NER, "--dedupe"], "--dedupe (--option tcm.dedupe)", "tcm-sd"),
        (
            [*TCM, "--verdicts", "verdicts.jsonl"],
            "--verdicts (--option clinconsensus.verdicts)",
            "clinconsensus",
        ),
    ],
)
def test_a_benchmark_flag_no_task_reads_is_refused_as_its_option(
    argv: list[str], named: str, owner: str, tmp_path: Path
) -> None:
    """--cases, --dedupe and --verdicts are their benchmark's options: refused as an option of
    a task the run does not have is, naming both spellings."""
    before = sorted(p.name for p in tmp_path.iterdir())
    done = _clineval("run", *argv, "-o", "run", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        f"error: {named} applies to the {owner} task, which this run does not use\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_the_judged_benchmarks_declare_the_judge_flags() -> None:
    """ClinConsensus (built in) owns the judge panel and wording; any other benchmark that
    declares them reads them through the judged kit."""
    owners = {b.family: b.run_settings for b in benchmarks() if "judges" in b.run_settings}
    assert "clinconsensus" in owners
    for settings in owners.values():
        assert {"judges", "judge_base_urls", "judge_prompt"} <= set(settings)


@pytest.fixture(scope="module")
def stub() -> Iterator[StubServer]:
    with StubServer(latency=0.0) as server:
        yield server


def test_a_judged_run_still_takes_the_judge(tmp_path: Path, stub: StubServer) -> None:
    judged = [
        *("clinconsensus", "--option", "clinconsensus.cases=fixture", "--limit", "1"),
        *("--option", "clinconsensus.max_criteria=1"),
        *("--model", f"openai:cand@{stub.base_url}", "--judge", f"openai:judge@{stub.base_url}"),
    ]
    planned = _clineval("run", *judged, "-o", "plan", "--dry-run", cwd=tmp_path)
    assert planned.returncode == 0, planned.stderr
    assert "openai:judge" in planned.stdout
    done = _clineval("run", *judged, "-o", "run", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text("utf-8"))
    assert "openai:judge" in json.dumps(manifest)
    # with a task that does not judge beside it, the judged task still reads --judge
    mixed = _clineval("run", "ner:ncbi", *judged, "-o", "mixed", "--dry-run", cwd=tmp_path)
    assert mixed.returncode == 0, mixed.stderr


def test_a_benchmark_cannot_own_a_setting_every_run_reads() -> None:
    """A declaration owning `model` would make every run without it refuse --model."""
    from clineval.benchmarks import Benchmark

    clinconsensus = next(b for b in benchmarks() if b.family == "clinconsensus")
    with pytest.raises(ValueError, match=r"run_settings \['model'\]"):
        Benchmark(
            family="fixture-owner",
            title="fixture",
            tasks=("fixture-owner",),
            make_task=clinconsensus.make_task,
            metrics=clinconsensus.metrics,
            run_settings=("judges", "model"),
        )
