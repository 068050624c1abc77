"""A declaration names its code parts by "module:attribute" strings, resolved on first use.

Reading the declarations imports none of those modules (`clineval tasks` stays free of torch
and the tokenizers); every built-in and example reference resolves and fits the call generic
code makes; and a plugin whose reference is misspelt (module or attribute), names something
that is not callable or takes other arguments is one line naming the benchmark, the part, the
reference and the package, run as real commands against plugins installed as distributions.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_inprocess import Done, clineval_inprocess
from plugin_fixtures import on_path

from clineval.benchmarks import Benchmark, MetricSchema, MetricSpec, Task, registry
from clineval.benchmarks.declaration import DataSource, DeclarationError
from clineval.references import UnresolvedReference, resolve_reference

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = {
    "clineval_example_mcq": REPO / "examples" / "plugin-benchmark",
    "clineval_example_rubric": REPO / "examples" / "plugin-judged",
}
# What listing tasks must not import: the model stacks a task module may reach.
# this module, as pytest imported it (parts below name its functions)
HERE = __name__
HEAVY = ("torch", "transformers", "tokenizers", "gliner", "sklearn", "aiohttp", "openai")


def _bench(**parts: Any) -> Benchmark:
    return Benchmark(
        family="fixture-refs",
        title="fixture",
        tasks=("fixture-refs",),
        metrics=MetricSchema((MetricSpec("score"),)),
        **{"make_task": "clineval.benchmarks.tcm_sd.task:TcmSdTask", **parts},
    )


# ---- the resolver ----------------------------------------------------------------------------


def test_a_reference_resolves_to_its_object_dotted_attributes_too() -> None:
    from clineval.benchmarks.ner.task import NerTask

    assert resolve_reference("clineval.benchmarks.ner.task:NerTask") is NerTask
    assert resolve_reference("clineval.benchmarks.ner.task:NerTask.load") is NerTask.load


@pytest.mark.parametrize(
    ("reference", "message"),
    [
        ("clineval.benchmarks.ner.task", " is not of the form 'module:attribute'"),
        (":NerTask", " is not of the form 'module:attribute'"),
        ("clineval.benchmarks.ner.task:", " is not of the form 'module:attribute'"),
        (
            "clineval.benchmarks.ner.tsak:NerTask",
            ": no module named 'clineval.benchmarks.ner.tsak'",
        ),
        ("clineval.benchmarkz.ner:X", ": no module named 'clineval.benchmarkz'"),
        (
            "clineval.benchmarks.ner.task:NerTsak",
            ": 'clineval.benchmarks.ner.task' has no attribute 'NerTsak'",
        ),
        (
            "clineval.benchmarks.ner.task:NerTask.lod",
            ": 'clineval.benchmarks.ner.task' has no attribute 'NerTask.lod'",
        ),
    ],
)
def test_a_reference_that_does_not_resolve_says_why(reference: str, message: str) -> None:
    with pytest.raises(UnresolvedReference) as caught:
        resolve_reference(reference)
    assert caught.value.message == f"{reference!r}{message}"


def test_a_module_missing_a_dependency_is_not_called_misspelt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The module exists and fails to import something else: that error is raised as it is
    (an optional dependency not installed), not reported as a wrong reference."""
    (tmp_path / "fixture_needs_dependency.py").write_text("import fixture_absent_dependency\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError, match="fixture_absent_dependency"):
        resolve_reference("fixture_needs_dependency:anything")
    sys.modules.pop("fixture_needs_dependency", None)


# ---- the declaration's parts -----------------------------------------------------------------


def _not_a_task(name: str) -> object:
    return {"name": name}


def _three(a: object, b: object, c: object) -> None:
    return None


class _NotATask:
    pass


@pytest.mark.parametrize(
    ("make_task", "message"),
    [
        ("clineval.benchmarks.tcm_sd.tsak:TcmSdTask", "no module named"),
        ("clineval.benchmarks.tcm_sd.task:TcmTask", "has no attribute 'TcmTask'"),
        ("clineval.benchmarks.tcm_sd:FAMILY", "is not callable (it is a str)"),
        (_three, "cannot be called as make_task(name): missing a required argument: 'b'"),
        (_not_a_task, "returned a dict, not a Task"),
        (_NotATask, "cannot be called as make_task(name): too many positional arguments"),
    ],
)
def test_make_task_that_does_not_fit_is_one_line(make_task: Any, message: str) -> None:
    with pytest.raises(DeclarationError, match=r"^benchmark 'fixture-refs': make_task ") as caught:
        _bench(make_task=make_task).task("fixture-refs")
    assert message in caught.value.message


def test_make_task_takes_a_callable_or_a_task_class_with_or_without_the_name() -> None:
    from clineval.benchmarks.ner.task import NerTask
    from clineval.benchmarks.tcm_sd.task import TcmSdTask

    assert isinstance(_bench().task("fixture-refs"), TcmSdTask)  # built with no argument
    made = _bench(make_task="clineval.benchmarks.ner.task:NerTask").task("ner:chia")
    assert isinstance(made, NerTask) and made.name == "ner:chia"  # built with the name
    assert isinstance(_bench(make_task=lambda name: TcmSdTask()).task("x"), TcmSdTask)


@pytest.mark.parametrize(
    ("part", "call"),
    [
        ("statistics", "statistics(metrics, samples)"),
        ("report_section", "report_section(run, task)"),
        ("check_settings", "check_settings(config)"),
        ("long_rows", "long_rows(row)"),
    ],
)
def test_every_part_is_checked_against_its_call(part: str, call: str) -> None:
    bench = _bench(**{part: f"{HERE}:_three"})
    with pytest.raises(DeclarationError) as caught:
        getattr(bench, f"{part}_function")()
    assert caught.value.message.startswith(
        f"benchmark 'fixture-refs': {part} '{HERE}:_three' cannot be called as {call}: "
    )
    missing = _bench(**{part: f"{HERE}:_absent"})
    with pytest.raises(DeclarationError, match="has no attribute '_absent'"):
        getattr(missing, f"{part}_function")()
    assert getattr(_bench(), f"{part}_function")() is None  # not declared: none


def test_exporters_synthesizers_and_fetch_steps_are_checked_too() -> None:
    bench = _bench(
        exporters={"fixture": f"{HERE}:_three"},
        synthesizers={"fixture": f"{HERE}:_nothing_here"},
    )
    assert bench.exporter("fixture") is _three
    with pytest.raises(DeclarationError, match=r"synthesizers\['fixture'\] .* no attribute"):
        bench.synthesizer("fixture")
    source = DataSource("fixture-source", unpinned=f"{HERE}:_NotATask")
    with pytest.raises(DeclarationError) as caught:
        source.fetch_step()
    assert caught.value.message.startswith(
        f"data source 'fixture-source': unpinned '{HERE}:_NotATask' "
        "cannot be called as unpinned(cache_root, base_url, retry)"
    )
    assert DataSource("fixture-none").fetch_step() is None


# ---- every shipped declaration ---------------------------------------------------------------


@pytest.fixture
def with_examples() -> Iterator[list[Benchmark]]:
    import importlib

    for folder in EXAMPLES.values():
        sys.path.insert(0, str(folder))
    try:
        yield [importlib.import_module(name).BENCHMARK for name in EXAMPLES]
    finally:
        for folder in EXAMPLES.values():
            sys.path.remove(str(folder))


def test_every_shipped_reference_resolves_and_fits(with_examples: list[Benchmark]) -> None:
    for bench in (*registry._builtin(), *with_examples):
        for name in bench.tasks:
            task = bench.task(name)
            assert isinstance(task, Task) and task.name == name, name
        for part in ("statistics", "report_section", "check_settings", "long_rows"):
            if getattr(bench, part) is not None:
                assert callable(getattr(bench, f"{part}_function")()), (bench.family, part)
        for fmt in bench.exporters:
            assert callable(bench.exporter(fmt))
        for synth in bench.synthesizers:
            assert callable(bench.synthesizer(synth))
        for source in bench.data_sources:
            if source.unpinned is not None:
                assert callable(source.fetch_step()), source.name


def test_each_package_pins_only_its_own_data_files() -> None:
    """A benchmark package's data manifest lists files of its own tasks, under its data folder
    (the generic loader reads them all by the package layout). A benchmark without data of its
    own (head-to-head reads finished runs) ships none."""
    from clineval.data.checksums import MANIFEST_NAME, load_manifest

    pinned = 0
    for bench in registry._builtin():
        package = REPO / "clineval" / "benchmarks" / bench.family.replace("-", "_")
        if not (package / MANIFEST_NAME).is_file():
            # pins nothing in a package manifest: HealthBench's data has no published hash
            # (pinned by its first fetch), its grader template's pin is in its official.py;
            # head-to-head has no data of its own (it reads finished runs)
            assert bench.family.startswith("healthbench") or not bench.data_sources, bench.family
            continue
        manifest = json.loads((package / MANIFEST_NAME).read_text(encoding="utf-8"))["files"]
        assert {row["group"] for row in manifest} <= {bench.family, *bench.tasks}, bench.family
        assert {row["path"].split("/")[0] for row in manifest} == {bench.family}, bench.family
        pinned += len(manifest)
    assert pinned == len(load_manifest()) > 0


def test_no_shipped_declaration_keeps_a_forwarding_function() -> None:
    """The declarations hold data and references: no function that only imports lazily."""
    import ast

    files = [
        *(REPO / "clineval" / "benchmarks").glob("*/__init__.py"),
        *(folder / name / "__init__.py" for name, folder in EXAMPLES.items()),
    ]
    assert len(files) >= 5
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        functions = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
        assert functions == [], (path, functions)


def _probe(code: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


def test_reading_the_declarations_imports_none_of_their_parts() -> None:
    loaded = _probe(
        "import json, sys\n"
        "from clineval.benchmarks.registry import benchmarks\n"
        "benchmarks()\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('clineval.benchmarks.')"
        " and m.rsplit('.', 1)[-1] in ('task', 'report', 'statistics', 'export', 'synthetic',"
        " 'official_prompt'))))\n"
    )
    assert loaded == []


def test_listing_tasks_imports_no_model_stack() -> None:
    loaded = _probe(
        "import json, sys\n"
        "sys.argv = ['clineval', 'tasks']\n"
        "from clineval.entry import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "made = ['task'] if 'clineval.benchmarks.ner.task' in sys.modules else []\n"
        f"made += sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r})\n"
        "print(json.dumps(made))\n"
    )
    assert loaded == ["task"]  # the tasks were made (to list them), and nothing heavy came


# ---- a plugin's bad reference, through the command line --------------------------------------

# A working predictions-only task; `PARTS` are the declaration's parts under test.
PLUGIN = """
from pathlib import Path
from clineval.benchmarks import (
    PREDICTION, Benchmark, DataFileStatus, MetricSchema, MetricSpec, Task, TaskResult,
    read_predictions,
)

IDS = ["s1", "s2", "s3", "s4"]
NOT_A_FUNCTION = ["a", "list"]


class Toy(Task):
    name = family = NAME
    description = "FIXTURE toy task"

    def data_status(self, data_root):
        return [DataFileStatus("none", "ok")]

    def load(self, ctx):
        return read_predictions(Path(ctx.model.name), set(IDS), "answer")

    def predict(self, ctx, data):
        ctx.store.put_records(NAME, PREDICTION, [(i, {"pred": v}) for i, v in data.items()])

    def evaluate(self, ctx, data):
        stored = ctx.store.records(NAME, PREDICTION)
        rows = [{"id": i, "correct": stored.get(i, {}).get("pred") == "A"} for i in IDS]
        return TaskResult({"accuracy": sum(r["correct"] for r in rows) / 4, "fixture": True}, rows)


def section_of(run, task, schema):  # one argument too many for report_section(run, task)
    return {}


BENCHMARK = Benchmark(NAME, NAME, (NAME,), metrics=MetricSchema((MetricSpec("accuracy"),)),
                      capabilities=frozenset({"predictions"}), **PARTS)
"""


def _plugin(site: Path, dist: str, module: str, parts: dict[str, str]) -> None:
    """A distribution `dist` whose entry point is `module:BENCHMARK`, as pip installs one."""
    (site / f"{module}.py").write_text(f"NAME = {dist!r}\nPARTS = {parts!r}\n{PLUGIN}")
    info = site / f"{module}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    entry = f"[clineval.benchmarks]\n{module} = {module}:BENCHMARK\n"
    (info / "entry_points.txt").write_text(entry)


def _cli(site: Path, *args: str, cwd: Path) -> Done:
    """`clineval ARGS` in this process with the plugins on the import path, read afresh for
    the command as a new process reads them (and their modules forgotten after it)."""
    try:
        with on_path(site):
            return clineval_inprocess(*args, cwd=cwd)
    finally:
        for name, module in list(sys.modules.items()):
            if str(getattr(module, "__file__", None) or "").startswith(str(site)):
                del sys.modules[name]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    site = tmp_path_factory.mktemp("site")
    _plugin(site, "misspelt-module", "misspelt_module", {"make_task": "misspelt_modul:Toy"})
    _plugin(site, "missing-attribute", "missing_attribute", {"make_task": "missing_attribute:Tyo"})
    _plugin(
        site,
        "not-callable",
        "not_callable",
        {"make_task": "not_callable:Toy", "statistics": "not_callable:NOT_A_FUNCTION"},
    )
    _plugin(
        site,
        "wrong-arguments",
        "wrong_arguments",
        {"make_task": "wrong_arguments:Toy", "report_section": "wrong_arguments:section_of"},
    )
    return site


def _last_error(done: Done) -> str:
    lines = [line for line in done.stderr.splitlines() if not line.startswith("warning: ")]
    assert len(lines) == 1, done.stderr  # one line, no traceback
    return lines[0]


def test_a_misspelt_task_reference_is_one_line_naming_the_package(
    site: Path, tmp_path: Path
) -> None:
    listed = _cli(site, "tasks", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "ner:ncbi" in listed.stdout and "not-callable" in listed.stdout
    warned = "\n".join(line for line in listed.stderr.splitlines() if "misspelt" in line)
    assert (
        "benchmark 'misspelt-module': make_task 'misspelt_modul:Toy': no module named "
        "'misspelt_modul' (package 'misspelt-module')"
    ) in warned
    for task, expected in (
        (
            "misspelt-module",
            "make_task 'misspelt_modul:Toy': no module named 'misspelt_modul'",
        ),
        (
            "missing-attribute",
            "make_task 'missing_attribute:Tyo': 'missing_attribute' has no attribute 'Tyo'",
        ),
    ):
        done = _cli(site, "run", task, "--model", "predictions:unused.jsonl", "--output-dir",
                    str(tmp_path / task), cwd=tmp_path)  # fmt: skip
        assert done.returncode == 2, done.stderr
        assert _last_error(done) == f"error: benchmark {task!r}: {expected} (package {task!r})"
        assert not (tmp_path / task).exists()  # refused before anything was written


def _predictions(path: Path) -> Path:
    rows = {"s1": "A", "s2": "B", "s3": "A", "s4": "A"}
    path.write_text("".join(json.dumps({"id": k, "answer": v}) + "\n" for k, v in rows.items()))
    return path


def test_parts_that_are_not_callable_or_take_other_arguments(site: Path, tmp_path: Path) -> None:
    """A run resolves every declared part before it computes anything: a report section or
    statistics that cannot be called is the first line, not a failure after the model ran."""
    answers = _predictions(tmp_path / "p.jsonl")
    refusals = {
        "wrong-arguments": "error: benchmark 'wrong-arguments': report_section "
        "'wrong_arguments:section_of' cannot be called as report_section(run, task): missing a "
        "required argument: 'schema' (package 'wrong-arguments')",
        "not-callable": "error: benchmark 'not-callable': statistics "
        "'not_callable:NOT_A_FUNCTION' is not callable (it is a list) (package 'not-callable')",
    }
    for task, line in refusals.items():
        for extra in ([], ["--dry-run"]):
            out = tmp_path / f"{task}{len(extra)}"
            done = _cli(site, "run", task, "--model", f"predictions:{answers}",
                        "--output-dir", str(out), *extra, cwd=tmp_path)  # fmt: skip
            assert (done.returncode, _last_error(done)) == (2, line)
            assert not out.exists()
