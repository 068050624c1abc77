"""The benchmark registry: built-ins, benchmarks added at run time, and outside packages through
the `clineval.benchmarks` entry-point group, where a broken one costs one warning line and a
name already taken is refused."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from clineval.benchmarks import registry
from clineval.benchmarks.declaration import Benchmark
from clineval.cli import main
from clineval.errors import InputError
from clineval.metrics.schema import MetricSchema, MetricSpec

BUILT_IN = [
    *("ner:ncbi", "ner:bc5cdr", "ner:biored", "ner:chia", "tcm-sd", "clinconsensus"),
    *("healthbench", "healthbench:hard", "healthbench:consensus", "healthbench:meta-eval"),
    "head-to-head",
]


def _bench(family: str, tasks: tuple[str, ...]) -> Benchmark:
    def make(name: str) -> object:
        raise AssertionError("not needed here")

    return Benchmark(
        family=family,
        title=family,
        tasks=tasks,
        make_task=make,  # type: ignore[arg-type]
        metrics=MetricSchema((MetricSpec("score"),)),
    )


@pytest.fixture
def fresh() -> Iterator[None]:
    registry.benchmarks.cache_clear()
    yield
    registry.benchmarks.cache_clear()


def test_the_built_in_benchmarks_and_their_tasks(fresh: None) -> None:
    assert registry.task_names() == BUILT_IN
    bench = registry.benchmark_of("ner:chia")
    assert bench is not None and bench.family == "ner"
    assert registry.benchmark_of("not-a-task") is None
    with pytest.raises(InputError, match="unknown task 'nope'"):
        registry.get_task("nope")


def test_a_benchmark_added_at_run_time(fresh: None) -> None:
    registry.register(_bench("toy", ("toy-a", "toy-b")))
    try:
        assert registry.task_names() == [*BUILT_IN, "toy-a", "toy-b"]
        assert registry.get_benchmark("toy") is registry.benchmark_of("toy-b")
        with pytest.raises(InputError, match="reuses the name"):
            registry.register(_bench("other", ("tcm-sd",)))  # a task name that is taken
        with pytest.raises(InputError, match="reuses the name"):
            registry.register(_bench("toy", ("toy-c",)))  # a family name that is taken
    finally:
        registry.unregister("toy")
    assert "toy-a" not in registry.task_names()


def _dist(site: Path, name: str, target: str) -> None:
    info = site / f"{name}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[clineval.benchmarks]\n{name} = {target}\n")


def test_a_broken_plugin_is_one_warning_and_a_clashing_one_is_refused(
    tmp_path: Path, fresh: None, capsys: pytest.CaptureFixture[str]
) -> None:
    site = tmp_path / "site"
    _dist(site, "broken", "no_such_module_here:BENCHMARK")
    (site / "clashing_plugin.py").write_text(
        "from clineval.benchmarks import Benchmark, MetricSchema, MetricSpec\n"
        "BENCHMARK = Benchmark('clash', 'clash', ('tcm-sd',), lambda n: None,\n"
        "                      MetricSchema((MetricSpec('x'),)))\n"
        "NOT_ONE = 5\n"
    )
    _dist(site, "clashing", "clashing_plugin:BENCHMARK")
    _dist(site, "wrongtype", "clashing_plugin:NOT_ONE")
    sys.path.insert(0, str(site))
    try:
        names = registry.task_names()
    finally:
        sys.path.remove(str(site))
        sys.modules.pop("clashing_plugin", None)
    assert names == BUILT_IN  # the built-ins stand, none of the three was taken
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 3 and all(line.startswith("warning: ") for line in lines)
    text = "\n".join(lines)
    assert "'broken'" in text and "failed to load" in text
    assert "'wrongtype'" in text and "is not a Benchmark" in text
    assert "benchmark 'clash' of 'clashing' reuses the built-in name(s) 'tcm-sd'" in text


def test_a_built_in_lookup_imports_no_plugin(
    fresh: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Plugins are imported when a command needs one (a listing, a task no built-in declares),
    never for a lookup the built-ins answer, nor for a listing the command defers."""

    def refuse() -> list[object]:
        raise AssertionError("the plugins were imported")

    monkeypatch.setattr(registry, "_plugins", refuse)
    bench = registry.benchmark_of("ner:chia")
    assert bench is not None and registry.get_benchmark("tcm-sd") is not None
    assert registry.metric_schema("clinconsensus") is not None
    assert registry.get_task("tcm-sd").name == "tcm-sd"
    registry.defer_plugins(True)
    try:
        assert registry.task_names() == BUILT_IN
        assert registry.option_groups()  # the built-ins' and the model layer's
    finally:
        registry.defer_plugins(False)
    with pytest.raises(AssertionError, match="imported"):
        registry.benchmark_of("a-plugin-task")  # no built-in declares it: the plugins are asked
    # `clineval run` of a built-in task defers them for the command only
    assert (
        main(["run", "tcm-sd", "-m", "predictions:/nonexistent.jsonl", "-o", "/nonexistent/x"]) == 2
    )
    assert "error: " in capsys.readouterr().err
    assert registry._STATE["deferred"] is False


def test_a_refused_plugins_task_says_why_it_is_not_there(
    tmp_path: Path, fresh: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """A task of a plugin refused for a clash is not "unknown": the error says why."""
    site = tmp_path / "site"
    (site / "twin_plugins.py").parent.mkdir(parents=True)
    (site / "twin_plugins.py").write_text(
        "from clineval.benchmarks import Benchmark, MetricSchema, MetricSpec\n"
        "def _make(family, tasks):\n"
        "    return Benchmark(family, family, tasks, lambda n: None,\n"
        "                     MetricSchema((MetricSpec('x'),)))\n"
        # reuses the built-in family name tcm-sd, with a task of its own
        "OWN = _make('tcm-sd', ('tcm-sd:mine',))\n"
        # two plugins that share a task: neither is used
        "A = _make('twin-a', ('twin:x', 'twin-a:y'))\n"
        "B = _make('twin-b', ('twin:x',))\n"
    )
    _dist(site, "owner", "twin_plugins:OWN")
    _dist(site, "twina", "twin_plugins:A")
    _dist(site, "twinb", "twin_plugins:B")
    sys.path.insert(0, str(site))
    try:
        assert registry.task_names() == BUILT_IN
        reasons = {}
        for task in ("tcm-sd:mine", "twin:x", "twin-a:y"):
            with pytest.raises(InputError) as caught:
                registry.get_task(task)
            reasons[task] = str(caught.value)
        with pytest.raises(InputError, match="unknown task 'twin:z'"):
            registry.get_task("twin:z")
    finally:
        sys.path.remove(str(site))
        sys.modules.pop("twin_plugins", None)
    assert reasons["tcm-sd:mine"] == (
        "task 'tcm-sd:mine' is not available: benchmark 'tcm-sd' of 'owner' reuses the "
        "built-in name(s) 'tcm-sd'"
    )
    pair = ("'twin-a' of 'twina'", "'twin-b' of 'twinb'")  # found in either order
    for task in ("twin:x", "twin-a:y"):
        assert reasons[task] in {
            f"task {task!r} is not available: benchmarks {one} and {two} both declare "
            "'twin:x' (neither is used)"
            for one, two in (pair, pair[::-1])
        }
    assert registry.get_task("tcm-sd").name == "tcm-sd"  # the built-in keeps its name
    warnings = capsys.readouterr().err.strip().splitlines()
    assert len(warnings) == 2 and all(line.startswith("warning: ") for line in warnings)
