"""The benchmark registry: the built-in families plus every package that registers one through
the entry-point group `clineval.benchmarks` (an entry point names a `Benchmark` object).

Generic code asks this module, never a family package: which tasks exist, which benchmark a
task belongs to (for its metric schema, report section, statistics), the declared options.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

from clineval.benchmarks.base import Task
from clineval.benchmarks.declaration import Benchmark, DataSource, Exporter, Synthesizer
from clineval.datapaths import MissingDataFile
from clineval.errors import InputError
from clineval.options import OptionGroup

ENTRY_POINT_GROUP = "clineval.benchmarks"


def _builtin() -> list[Benchmark]:
    from clineval.benchmarks.clinconsensus import BENCHMARK as CLINCONSENSUS
    from clineval.benchmarks.ner import BENCHMARK as NER
    from clineval.benchmarks.tcm_sd import BENCHMARK as TCM_SD

    return [NER, TCM_SD, CLINCONSENSUS]


def _plugins() -> list[Benchmark]:
    """Benchmarks of installed packages. A plugin that fails to load is skipped with one
    warning line: a broken outside package must not take the built-in benchmarks down."""
    found: list[Benchmark] = []
    for entry in metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            value = entry.load()
        except Exception as exc:  # any error of outside code: report it, go on
            _warn(f"benchmark plugin {entry.name!r} ({entry.value}) failed to load: {exc}")
            continue
        if not isinstance(value, Benchmark):
            _warn(f"benchmark plugin {entry.name!r} ({entry.value}) is not a Benchmark")
            continue
        found.append(value)
    return found


def _warn(message: str) -> None:
    from clineval.secrets import redact

    # outside code's error text: masked like everything printed, and kept to one short line
    line = " ".join(redact(message).split())[:400]
    print(f"warning: {line}; skipped", file=sys.stderr)


@cache
def benchmarks() -> tuple[Benchmark, ...]:
    """Every registered benchmark, built-ins first. A later one that reuses a family or task
    name is refused (the first keeps it)."""
    chosen: list[Benchmark] = []
    families: set[str] = set()
    tasks: set[str] = set()
    builtin = _builtin()
    for bench in [*builtin, *_plugins()]:
        clash = sorted(tasks.intersection(bench.tasks))
        if bench.family in families or clash:
            _warn(f"benchmark {bench.family!r} reuses the name(s) {clash or [bench.family]}")
            continue
        families.add(bench.family)
        tasks.update(bench.tasks)
        chosen.append(bench)
    return tuple(chosen)


_ADDED: list[Benchmark] = []


def register(bench: Benchmark) -> None:
    """Add a benchmark at run time (a test, a notebook), as an installed package would. Its
    family and task names must be new."""
    taken = set(task_names())
    clash = sorted(taken.intersection(bench.tasks))
    if get_benchmark(bench.family) is not None or clash:
        raise InputError(f"benchmark {bench.family!r} reuses the name(s) {clash or [bench.family]}")
    _ADDED.append(bench)


def unregister(family: str) -> None:
    _ADDED[:] = [b for b in _ADDED if b.family != family]


def _all() -> tuple[Benchmark, ...]:
    return (*benchmarks(), *_ADDED)


def task_names() -> list[str]:
    return [task for bench in _all() for task in bench.tasks]


def benchmark_of(task: str) -> Benchmark | None:
    """The benchmark that declares `task`; None for a task no installed benchmark knows (a run
    directory written with a plugin that is not installed here)."""
    return next((b for b in _all() if task in b.tasks), None)


def get_benchmark(family: str) -> Benchmark | None:
    return next((b for b in _all() if b.family == family), None)


def get_task(name: str) -> Task[Any]:
    bench = benchmark_of(name)
    if bench is None:
        raise InputError(f"unknown task {name!r} (known: {', '.join(task_names())})")
    return bench.make_task(name)


def option_groups() -> list[OptionGroup]:
    """Every declared `--option` group: the benchmarks' and the model layer's."""
    from clineval.models.options import MODEL_OPTION_GROUPS

    groups: list[OptionGroup] = []
    for bench in _all():
        groups.extend(g for g in bench.options if g not in groups)
    return [*groups, *MODEL_OPTION_GROUPS]


def active_namespaces(tasks: list[str]) -> set[str]:
    """The option namespaces a run of `tasks` reads (the model layer's always: any task may
    use a chat model, as candidate or judge)."""
    from clineval.models.options import MODEL_OPTION_GROUPS

    active = {group.namespace for group in MODEL_OPTION_GROUPS}
    for name in tasks:
        bench = benchmark_of(name)
        if bench is not None:
            active.update(group.namespace for group in bench.options)
    return active


def data_sources() -> dict[str, DataSource]:
    """`clineval data fetch NAME`: every benchmark's corpora by name."""
    return {source.name: source for bench in _all() for source in bench.data_sources}


def fetch_command(relative: str) -> str | None:
    """The command that puts the data file at `relative` into the fetch cache, if one does."""
    for name, source in data_sources().items():
        if source.supplies(relative):
            return f"clineval data fetch {name}"
    return None


@contextmanager
def naming_fetch_commands() -> Iterator[None]:
    """A data file missing in the data root and the fetch cache becomes an error that names
    the command fetching its corpus (a task knows its files, the registry their sources)."""
    try:
        yield
    except MissingDataFile as exc:
        command = fetch_command(exc.relative)
        if command is None:
            raise
        raise exc.with_hint(f"run '{command}'") from None


def benchmarks_with_skills() -> list[Path]:
    """The folders of the benchmarks' Agent Skill pages (one sub-folder per skill)."""
    return [b.skills_dir for b in _all() if b.skills_dir is not None and b.skills_dir.is_dir()]


def synthesizers() -> dict[str, Synthesizer]:
    """`clineval data synth NAME`: every benchmark's synthetic-fixture generators."""
    return {name: fn for bench in _all() for name, fn in bench.synthesizers.items()}


def exporters() -> dict[str, Exporter]:
    """`clineval export --format NAME` formats that benchmarks declare."""
    return {name: fn for bench in _all() for name, fn in bench.exporters.items()}
