"""A plugin cannot break clineval: outside packages, installed as real distributions (dist-info
with entry points on the path), that clash, raise (SystemExit and KeyboardInterrupt too),
print or hang at import, fail in `make_task` or inside their task. Every command is run as a
real subprocess: each such plugin costs one warning line naming its package, and everything
else keeps working.
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

BUILT_IN = ["ner:ncbi", "ner:bc5cdr", "ner:biored", "ner:chia", "tcm-sd", "clinconsensus"]

# A small working plugin task (predictions files only), parameterised by its name; `fail`
# names the step that raises, if any.
TASK_MODULE = """
from pathlib import Path
from clineval.benchmarks import (
    PREDICTION, Benchmark, DataFileStatus, MetricSchema, MetricSpec, Task, TaskResult,
    read_predictions,
)

IDS = ["s1", "s2", "s3", "s4"]
GOLD = {"s1": "A", "s2": "B", "s3": "A", "s4": "B"}


class Toy(Task):
    name = family = NAME
    description = "FIXTURE toy task"

    def data_status(self, data_root):
        return [DataFileStatus("none", "ok")]

    def load(self, ctx):
        if FAIL == "load":
            raise RuntimeError("the load step broke")
        return read_predictions(Path(ctx.model.name), set(IDS), "answer")

    def predict(self, ctx, data):
        if FAIL == "predict":
            raise RuntimeError("the predict step broke")
        ctx.store.put_records(NAME, PREDICTION, [(i, {"pred": v}) for i, v in data.items()])

    def evaluate(self, ctx, data):
        print("noise from evaluate")  # a plugin's print while a command runs: kept off stdout
        stored = ctx.store.records(NAME, PREDICTION)
        rows = [{"id": i, "correct": stored.get(i, {}).get("pred") == GOLD[i]} for i in IDS]
        return TaskResult({"accuracy": sum(r["correct"] for r in rows) / 4, "fixture": True}, rows)


def make(name):
    if FAIL == "make_task":
        raise ValueError("cannot make it")
    return Toy()


BENCHMARK = Benchmark(NAME, NAME, (NAME,), make, MetricSchema((MetricSpec("accuracy"),)),
                      capabilities=frozenset({"predictions"}))
"""


# A plugin whose report section raises: `clineval report` says so in one line.
BROKEN_SECTION = """
import dataclasses

def _section(run, task):
    raise ZeroDivisionError("no section today")

BENCHMARK = dataclasses.replace(BENCHMARK, report_section=_section)
"""


def _plugin(site: Path, dist: str, module: str, body: str) -> None:
    """A distribution `dist` whose entry point is `module:BENCHMARK`, as pip installs one."""
    (site / f"{module}.py").write_text(body)
    info = site / f"{dist.replace('-', '_')}-0.1.dist-info"  # as pip names it
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        f"[clineval.benchmarks]\n{module} = {module}:BENCHMARK\n"
    )


def _toy(name: str, fail: str = "", before: str = "") -> str:
    return f"{before}\nNAME = {name!r}\nFAIL = {fail!r}\n{TASK_MODULE}"


def _cli(
    site: Path, *args: str, cwd: Path, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
        "CLINEVAL_PLUGIN_IMPORT_TIMEOUT": "3",
    }
    return subprocess.run(
        [sys.executable, "-m", "clineval", "--quiet", *args],
        capture_output=True, text=True, cwd=cwd, env=env, timeout=timeout,
    )  # fmt: skip


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    site = tmp_path_factory.mktemp("site")
    _plugin(site, "good-toy", "good_toy", _toy("good-toy", before="print('hello from good-toy')\n"
            "import sys; print('noise on stderr', file=sys.stderr)"))  # fmt: skip
    # below Python: what sys.stdout's redirection cannot catch
    raw = "import os\nos.write(1, b'raw bytes on fd 1\\n'); os.write(2, b'raw bytes on fd 2\\n')"
    _plugin(site, "writes-fd", "writes_fd", _toy("fd-toy", before=raw))
    _plugin(site, "twin-one", "twin_one", _toy("twin"))
    _plugin(site, "twin-two", "twin_two", _toy("twin"))
    _plugin(site, "takes-tcm", "takes_tcm", _toy("tcm-sd"))
    _plugin(site, "exits-early", "exits_early", "import sys\nsys.exit(3)\n")
    _plugin(site, "interrupts", "interrupts", "raise KeyboardInterrupt\n")
    _plugin(site, "ends-process", "ends_process", "import os\nos._exit(7)\n")
    _plugin(site, "hangs-forever", "hangs_forever", "import time\ntime.sleep(3600)\n")
    _plugin(site, "no-task", "no_task", _toy("no-task", fail="make_task"))
    _plugin(site, "breaks-in-predict", "breaks_in_predict", _toy("breaks", fail="predict"))
    _plugin(site, "bad-section", "bad_section", _toy("bad-section") + BROKEN_SECTION)
    return site


@pytest.fixture(scope="module")
def calm_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The plugins that print or whose task or section breaks, without the ones that hang or
    end the import child: the runs a test reads are made here, where each costs one probing
    child and no bounded wait. The commands under test still meet every plugin (`site`)."""
    calm = tmp_path_factory.mktemp("calm")
    _plugin(calm, "good-toy", "good_toy", _toy("good-toy", before="print('hello from good-toy')\n"
            "import sys; print('noise on stderr', file=sys.stderr)"))  # fmt: skip
    raw = "import os\nos.write(1, b'raw bytes on fd 1\\n'); os.write(2, b'raw bytes on fd 2\\n')"
    _plugin(calm, "writes-fd", "writes_fd", _toy("fd-toy", before=raw))
    _plugin(calm, "bad-section", "bad_section", _toy("bad-section") + BROKEN_SECTION)
    return calm


def test_tasks_lists_every_benchmark_that_works(site: Path, tmp_path: Path) -> None:
    started = time.monotonic()
    done = _cli(site, "tasks", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    # the one hung import cost its bounded wait, not the command
    assert time.monotonic() - started < 60
    listed = [line.split()[1] for line in done.stdout.splitlines() if line.startswith("│ ")
              and len(line.split()) > 1]  # fmt: skip
    for task in [*BUILT_IN, "good-toy", "breaks", "fd-toy"]:
        assert task in done.stdout, task
    assert "twin" not in listed and "no-task" not in listed
    assert "hello from good-toy" not in done.stdout + done.stderr
    assert "noise on stderr" not in done.stdout + done.stderr
    assert "raw bytes" not in done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert all(line.startswith("warning: ") and line.endswith("; skipped") for line in lines)
    text = "\n".join(lines)
    by_dist = {
        dist: [line for line in lines if f"'{dist}'" in line]
        for dist in ("twin-one", "twin-two", "takes-tcm", "exits-early", "interrupts",
                     "hangs-forever", "no-task", "ends-process")
    }  # fmt: skip
    # the two plugins that share a name: one line naming both, neither used
    assert by_dist["twin-one"] == by_dist["twin-two"] and len(by_dist["twin-one"]) == 1
    assert "'twin'" in by_dist["twin-one"][0]
    assert len(by_dist["takes-tcm"]) == 1 and "built-in" in by_dist["takes-tcm"][0]
    assert "SystemExit: 3" in by_dist["exits-early"][0]
    assert "KeyboardInterrupt" in by_dist["interrupts"][0]
    assert "did not finish importing in 3 s" in by_dist["hangs-forever"][0]
    assert "failed in make_task: ValueError: cannot make it" in by_dist["no-task"][0]
    # os._exit in a plugin's module ends the child that tried it, not the command
    assert "ended the process with status 7 while importing" in by_dist["ends-process"][0]
    assert len(lines) == 7, text


def test_tasks_json_is_one_document_whatever_plugins_write(site: Path, tmp_path: Path) -> None:
    done = _cli(site, "tasks", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)  # nothing else on stdout, even bytes written to fd 1
    assert "raw bytes" not in done.stdout + done.stderr
    assert "fd-toy" in json.dumps(listed) and "good-toy" in json.dumps(listed)


def test_a_built_in_task_imports_no_plugin(site: Path, tmp_path: Path) -> None:
    """`run` of a built-in task, and its flags, needs no plugin: none is imported, so none
    that hangs or ends the process is met (their warnings would say so)."""
    missing = tmp_path / "nowhere.jsonl"
    for args in (
        ["run", "ner:ncbi", "--model", f"predictions:{missing}", "-o", str(tmp_path / "r")],
        ["run", "clinconsensus", "--verdicts", str(missing), "-o", str(tmp_path / "c")],
    ):
        done = _cli(site, *args, cwd=tmp_path)
        assert done.returncode == 2
        assert done.stderr.startswith("error: ") and "nowhere.jsonl" in done.stderr, done.stderr
        assert "warning" not in done.stderr, done.stderr
        assert not (tmp_path / "r").exists() and not (tmp_path / "c").exists()


def _predictions(path: Path, answers: dict[str, str]) -> Path:
    path.write_text("".join(json.dumps({"id": k, "answer": v}) + "\n" for k, v in answers.items()))
    return path


def test_runs_and_compare_csv_stay_clean(site: Path, calm_site: Path, tmp_path: Path) -> None:
    a = _predictions(tmp_path / "a.jsonl", {"s1": "A", "s2": "B", "s3": "A", "s4": "A"})
    b = _predictions(tmp_path / "b.jsonl", {"s1": "B", "s2": "B", "s3": "A", "s4": "A"})
    for name, file in (("a", a), ("b", b)):
        done = _cli(calm_site, "run", "good-toy", "--model", f"predictions:{file}",
                    "--output-dir", str(tmp_path / name), cwd=tmp_path)  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert "noise from evaluate" not in done.stdout and "noise from evaluate" in done.stderr
        assert "raw bytes" not in done.stdout + done.stderr
    compared = _cli(site, "compare", str(tmp_path / "a"), str(tmp_path / "b"), "--format", "csv",
                    cwd=tmp_path)  # fmt: skip
    assert compared.returncode == 0, compared.stderr
    rows = list(csv.reader(io.StringIO(compared.stdout)))
    assert rows and all(len(row) == len(rows[0]) for row in rows), compared.stdout
    assert "hello" not in compared.stdout and "accuracy" in compared.stdout
    assert "raw bytes" not in compared.stdout


def test_an_exception_in_a_plugins_task_names_task_and_package(site: Path, tmp_path: Path) -> None:
    file = _predictions(tmp_path / "p.jsonl", {"s1": "A"})
    out = tmp_path / "run"
    done = _cli(site, "run", "breaks", "--model", f"predictions:{file}", "--output-dir", str(out),
                cwd=tmp_path)  # fmt: skip
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if not line.startswith("warning: ")]
    assert errors == [
        "error: task 'breaks' (package 'breaks-in-predict') failed in predict: "
        "RuntimeError: the predict step broke"
    ]
    made = _cli(site, "run", "no-task", "--model", f"predictions:{file}", "--output-dir",
                str(tmp_path / "other"), cwd=tmp_path)  # fmt: skip
    assert made.returncode == 2
    assert made.stderr.strip().splitlines()[-1] == (
        "error: task 'no-task' (package 'no-task') failed in make_task: ValueError: cannot make it"
    )


def test_a_plugins_report_section_that_raises_is_one_line(
    site: Path, calm_site: Path, tmp_path: Path
) -> None:
    file = _predictions(tmp_path / "p.jsonl", {"s1": "A", "s2": "B", "s3": "A", "s4": "B"})
    out = tmp_path / "run"
    done = _cli(calm_site, "run", "bad-section", "--model", f"predictions:{file}", "--output-dir",
                str(out), cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    made = _cli(site, "report", str(out), "-o", str(tmp_path / "r.html"), cwd=tmp_path)
    assert made.returncode == 2
    assert made.stderr.strip().splitlines()[-1] == (
        "error: task 'bad-section' (package 'bad-section') failed in report_section: "
        "ZeroDivisionError: no section today"
    )
