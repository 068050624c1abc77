"""`--shard auto` from a job array's environment, and the README's Slurm script and Kubernetes
Indexed Job run for real: every array task as a `clineval` subprocess with the environment the
scheduler gives it (servers pointed at stub servers, the fixture cases), then the merge, which
must equal the unsharded run."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from cli_inprocess import clineval_inprocess
from llm_stub_server import StubServer

from clineval.benchmarks.clinconsensus.cases import fixture_path
from clineval.cli import main
from clineval.config import RunConfig
from clineval.errors import InputError
from clineval.rundir import MANIFEST, RESULTS, read_json
from clineval.shard import resolve_auto

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
BIN = Path(sys.executable).parent  # the `clineval` executable of this environment


def slurm(task: int, count: int, first: int = 0, step: int | None = None) -> dict[str, str]:
    env = {
        "SLURM_ARRAY_TASK_ID": str(task),
        "SLURM_ARRAY_TASK_COUNT": str(count),
        "SLURM_ARRAY_TASK_MIN": str(first),
        "SLURM_ARRAY_JOB_ID": "4242",
    }
    if step is not None:
        env["SLURM_ARRAY_TASK_STEP"] = str(step)
    return env


@pytest.mark.parametrize(
    ("spec", "environ", "shard"),
    [
        ("auto", slurm(0, 4), "1/4"),
        ("auto", slurm(3, 4), "4/4"),
        ("AUTO", slurm(7, 4, first=5), "3/4"),  # --array=5-8
        ("auto", slurm(6, 3, first=2, step=2), "3/3"),  # --array=2-6:2
        ("auto/4", slurm(1, 4), "2/4"),
        ("auto/8", {"JOB_COMPLETION_INDEX": "0"}, "1/8"),
        ("auto/8", {"JOB_COMPLETION_INDEX": "7"}, "8/8"),
    ],
)
def test_auto_reads_the_job_array(spec: str, environ: dict[str, str], shard: str) -> None:
    assert resolve_auto(spec, environ) == shard


@pytest.mark.parametrize(
    ("spec", "environ", "message"),
    [
        ("auto", {}, "no job array in the environment"),
        ("auto", {"SLURM_JOB_ID": "1"}, "no job array in the environment"),  # not an array
        ("auto", {"SLURM_ARRAY_TASK_ID": "2"}, "SLURM_ARRAY_TASK_COUNT is not set"),
        ("auto", slurm(4, 4), "array task 4 is not one of 4 tasks from 0 by 1"),
        ("auto", slurm(4, 3, first=1, step=2), "array task 4 is not one of 3 tasks from 1 by 2"),
        ("auto", {**slurm(0, 4), "SLURM_ARRAY_TASK_COUNT": "four"}, "is not a whole number"),
        ("auto/3", slurm(0, 4), "the Slurm array has 4 tasks"),
        ("auto", {"JOB_COMPLETION_INDEX": "2"}, "write --shard auto/N"),
        ("auto/2", {"JOB_COMPLETION_INDEX": "2"}, "is not below 2"),
        ("auto/0", {"JOB_COMPLETION_INDEX": "0"}, "auto/N with N >= 1"),
        ("auto/x", slurm(0, 4), "auto/N with N >= 1"),
        ("auto", {**slurm(0, 4), "JOB_COMPLETION_INDEX": "0"}, "both"),
        # what int() would have taken: a negative index, 0 as a step, "1_0" as 10, a digit of
        # another script as a number
        ("auto/4", {"JOB_COMPLETION_INDEX": "-1"}, "JOB_COMPLETION_INDEX='-1' is not a whole"),
        ("auto", slurm(0, 4, step=0), "SLURM_ARRAY_TASK_STEP=0 must be at least 1"),
        ("auto", slurm(0, 0), "SLURM_ARRAY_TASK_COUNT=0 must be at least 1"),
        ("auto", {**slurm(0, 20), "SLURM_ARRAY_TASK_ID": "1_0"}, "'1_0' is not a whole number"),
        ("auto", {**slurm(0, 4), "SLURM_ARRAY_TASK_ID": "\u0661"}, "is not a whole number"),
        ("auto/4", {"JOB_COMPLETION_INDEX": "+1"}, "'+1' is not a whole number"),
        ("auto/1_0", {"JOB_COMPLETION_INDEX": "1"}, "auto/N with N >= 1"),
        # too many digits: too large, not malformed (leading zeros do not count)
        ("auto/" + "9" * 20, {"JOB_COMPLETION_INDEX": "1"}, "20 digits is too large"),
        ("auto/" + "0" * 30 + "4", {"JOB_COMPLETION_INDEX": "4"}, "is not below 4"),
    ],
)
def test_auto_without_a_usable_array_is_refused(
    spec: str, environ: dict[str, str], message: str
) -> None:
    with pytest.raises(InputError, match=re.escape(message)) as info:
        resolve_auto(spec, environ)
    assert info.value.message.startswith("--shard ")


def test_the_config_keeps_the_resolved_shard(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in slurm(2, 3).items():
        monkeypatch.setenv(name, value)
    config = RunConfig.checked(tasks=["clinconsensus"], model="openai:m", shard="auto")
    assert config.shard == "3/3"
    # a manifest holds I/N, so reading it back does not depend on the environment
    monkeypatch.delenv("SLURM_ARRAY_TASK_ID")
    assert RunConfig.from_manifest(config.model_dump(), "manifest.json").shard == "3/3"


def _clineval(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "JOB_COMP"))}
    base["PATH"] = f"{BIN}{os.pathsep}{base.get('PATH', '')}"
    return subprocess.run(
        args, cwd=cwd, env={**base, **env}, capture_output=True, text=True, timeout=300
    )


def _outside_any_job(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(("SLURM_", "JOB_COMP")):
            monkeypatch.delenv(name)


def test_auto_outside_a_job_array_is_one_line_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _outside_any_job(monkeypatch)
    args = ["run", "clinconsensus", "--model", "openai:m@http://127.0.0.1:9/v1"]
    args += ["--option", "clinconsensus.cases=fixture", "--shard", "auto", "-o", "out"]
    done = clineval_inprocess(*args, cwd=tmp_path, quiet=False)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "error: --shard auto: no job array in the environment (SLURM_ARRAY_TASK_ID of a Slurm "
        "array job, or JOB_COMPLETION_INDEX of a Kubernetes Indexed Job); give --shard I/N"
    ]
    assert not (tmp_path / "out").exists()  # refused before anything was written


# ---- the README's job scripts, run ------------------------------------------------------------
def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


@pytest.fixture(scope="module")
def fleet() -> Iterator[dict[str, str]]:
    """The README's server addresses -> stub servers on 127.0.0.1; its cases -> the fixture."""
    with StubServer() as a, StubServer() as b:
        yield {
            "http://cand-a:8000/v1": a.base_url,
            "http://cand-b:8000/v1": b.base_url,
            "http://judge-a:8000/v1": a.base_url,
            "http://judge-b:8000/v1": b.base_url,
            "/runs/clinconsensus_low.jsonl": str(fixture_path()),
            "clinconsensus_low.jsonl": str(fixture_path()),
        }


def _pointed(text: str, fleet: dict[str, str], runs: Path | None = None) -> str:
    for readme_value, local in fleet.items():
        text = text.replace(readme_value, local)
    return text if runs is None else text.replace("/runs/", f"{runs}/")


def _unsharded(tmp_path: Path, fleet: dict[str, str]) -> dict[str, object]:
    out = tmp_path / "unsharded"
    argv = ["--quiet", "run", "clinconsensus", "--cases", str(fixture_path())]
    argv += ["--model", f"openai:cand@{fleet['http://cand-a:8000/v1']}"]
    argv += ["--judge", f"openai:judge@{fleet['http://judge-a:8000/v1']}", "-o", str(out)]
    assert main(argv) == 0
    return read_json(out / RESULTS)  # type: ignore[no-any-return]


def test_readme_slurm_array_runs_its_shards_then_merges(
    tmp_path: Path, fleet: dict[str, str]
) -> None:
    (script,) = [b for b in _blocks("bash") if b.startswith("#!/bin/bash\n#SBATCH")]
    (submit,) = [b for b in _blocks("bash") if "sbatch --parsable" in b]
    array = re.search(r"^#SBATCH --array=(\d+)-(\d+)$", script, re.M)
    assert array is not None and "--shard auto " in script
    first, last = int(array[1]), int(array[2])
    assert "cc-shards.sbatch" in submit and "afterok" in submit
    (tmp_path / "cc-shards.sbatch").write_text(_pointed(script, fleet))
    for task in range(first, last + 1):  # what Slurm starts: the script, once per array task
        env = {**slurm(task, last - first + 1, first), "SLURM_ARRAY_TASK_MAX": str(last)}
        done = _clineval(["bash", "cc-shards.sbatch"], tmp_path, env)
        assert done.returncode == 0, done.stderr
        shard = read_json(tmp_path / f"runs/cc/shard-{task}" / MANIFEST)["config"]["shard"]
        assert shard == f"{task - first + 1}/{last - first + 1}"
    wrapped = re.search(r'--wrap="([^"]+)"', submit)
    assert wrapped is not None  # the job the dependency starts once every shard succeeded
    done = _clineval(["bash", "-c", wrapped[1]], tmp_path, {})
    assert done.returncode == 0, done.stderr
    merged = read_json(tmp_path / "runs/cc/all" / RESULTS)
    assert merged == _unsharded(tmp_path, fleet)
    manifest = read_json(tmp_path / "runs/cc/all" / MANIFEST)
    assert manifest["missing_shards"] == [] and len(manifest["merged_from"]) == 4


def test_readme_kubernetes_indexed_job_runs_its_shards_then_merges(
    tmp_path: Path, fleet: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _outside_any_job(monkeypatch)
    documents = [yaml.safe_load(b) for b in _blocks("yaml")]
    shards, merge = (
        next(d for d in documents if d["metadata"]["name"] == name)
        for name in ("cc-shards", "cc-merge")
    )
    spec = shards["spec"]
    assert (shards["kind"], spec["completionMode"]) == ("Job", "Indexed")
    (container,) = spec["template"]["spec"]["containers"]
    args = container["args"]
    assert args[args.index("--shard") + 1] == f"auto/{spec['completions']}"
    runs = tmp_path / "runs"
    runs.mkdir()
    for index in range(spec["completions"]):  # what the Job starts: one pod per index
        # Kubernetes expands $(VAR) in args from the container's environment
        argv = [
            _pointed(a, fleet, runs).replace("$(JOB_COMPLETION_INDEX)", str(index))
            for a in container["command"] + args
        ]
        # in process (the pods' command is clineval itself; the Slurm test above and the
        # merge below run the README's shell lines as a shell does)
        assert argv[0] == "clineval"
        env = {"JOB_COMPLETION_INDEX": str(index)}
        done = clineval_inprocess(*argv[1:], cwd=tmp_path, env=env, quiet=False)
        assert done.returncode == 0, done.stderr
        manifest = read_json(runs / f"cc/shard-{index}" / MANIFEST)
        assert manifest["config"]["shard"] == f"{index + 1}/{spec['completions']}"
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    (merger,) = merge["spec"]["template"]["spec"]["containers"]
    assert mounts == {m["mountPath"] for m in merger["volumeMounts"]} == {"/runs"}
    command = [_pointed(a, fleet, runs) for a in merger["command"]]
    assert command[:2] == ["sh", "-c"] and "clineval merge" in command[2]
    merged = _clineval(command, tmp_path, {})
    assert merged.returncode == 0, merged.stderr
    assert read_json(runs / "cc/all" / RESULTS) == _unsharded(tmp_path, fleet)
    parsed = shlex.split(command[2])
    assert parsed[:2] == ["clineval", "merge"]
    assert json.loads(json.dumps(merge))["kind"] == "Job"


def test_a_shard_number_of_too_many_digits_is_too_large() -> None:
    from clineval.shard import parse_shard

    with pytest.raises(InputError, match="a number of 20 digits is too large"):
        parse_shard("1/" + "9" * 20)
    with pytest.raises(InputError, match="a number of 12 digits is too large"):
        parse_shard("1" * 12 + "/4")
    assert parse_shard("1/0004") == (1, 4)
