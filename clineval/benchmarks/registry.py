"""The benchmark registry: the built-in families plus every package that registers one through
the entry-point group `clineval.benchmarks` (an entry point names a `Benchmark` object).

Generic code asks this module, never a family package: which tasks exist, which benchmark a
task belongs to (for its metric schema, report section, statistics), the declared options.

A plugin is outside code and cannot take a command down: it is imported only when needed,
tried first in a child process with a time bound (plugin_import.py); what it raises is a
warning; a name two plugins share is refused for both; its task's exception is one PluginError
line naming the task and the distribution (docs/architecture.md, "A benchmark is a unit").

Long module: the lookups every command makes and the guards around plugin code share one
cached list of benchmarks; split, each half would reach into the other's cache.
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache, partial
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from clineval.benchmarks.base import DataFileStatus, RunContext, Task, TaskResult
from clineval.benchmarks.declaration import (
    Benchmark,
    DataSource,
    DeclarationError,
    Exporter,
    Synthesizer,
)
from clineval.benchmarks.plugin_import import (
    IMPORT_TIMEOUT_VARIABLE,
    import_timeout,
    load_entry,
    probe,
)
from clineval.datapaths import MissingDataFile
from clineval.errors import InputError
from clineval.messages import did_you_mean
from clineval.metrics.schema import MetricSchema
from clineval.options import OptionGroup

if TYPE_CHECKING:
    from clineval.plan import CallPlan
    from clineval.reportkit.run_files import ExportSettings, RunFiles

ENTRY_POINT_GROUP = "clineval.benchmarks"
T = TypeVar("T")


@cache  # one list, never changed: the lookups ask it first
def _builtin() -> list[Benchmark]:
    from clineval.benchmarks.clinconsensus import BENCHMARK as CLINCONSENSUS
    from clineval.benchmarks.head_to_head import BENCHMARK as HEAD_TO_HEAD
    from clineval.benchmarks.healthbench import (
        BENCHMARK as HEALTHBENCH,
        META_BENCHMARK as HEALTHBENCH_META,
    )
    from clineval.benchmarks.ner import BENCHMARK as NER
    from clineval.benchmarks.tcm_sd import BENCHMARK as TCM_SD

    return [NER, TCM_SD, CLINCONSENSUS, HEALTHBENCH, HEALTHBENCH_META, HEAD_TO_HEAD]


class PluginError(InputError):
    """A plugin's own code failed: its `make_task`, or its task's load, predict, evaluate or
    plan raised. One line naming the task and the distribution it came from."""


@dataclass(frozen=True)
class _Found:
    bench: Benchmark
    distribution: str


def _distribution(entry: metadata.EntryPoint) -> str:
    dist = getattr(entry, "dist", None)
    try:
        name = None if dist is None else dist.metadata["Name"]
    except (KeyError, OSError, ValueError):  # a damaged METADATA names no one
        name = None
    return str(name) if name else f"the package of entry point {entry.name!r}"


def _plugins() -> list[_Found]:
    """Benchmarks of installed packages. A plugin that fails to load (raises, hangs, ends
    its process: each tried in a child process first, clineval.benchmarks.plugin_import) is
    skipped with one warning line: a broken outside package must not take the built-in
    benchmarks down."""
    found: list[_Found] = []
    timeout = import_timeout()
    entries = list(metadata.entry_points(group=ENTRY_POINT_GROUP))
    for entry, failed in zip(entries, probe(entries, timeout), strict=True):
        dist = _distribution(entry)
        what = f"benchmark plugin {entry.name!r} ({entry.value}) of {dist!r}"
        if failed is not None:
            _warn(f"{what} {failed}")
            continue
        status, value = load_entry(entry, timeout)
        if status == "hung":
            _warn(f"{what} did not finish importing in {timeout:g} s ({IMPORT_TIMEOUT_VARIABLE})")
            continue
        if status == "raised":
            _warn(f"{what} failed to load: {_describe(value)}")
            continue
        if not isinstance(value, Benchmark):
            _warn(f"{what} is not a Benchmark")
            continue
        found.append(_Found(value, dist))
    return found


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _warn(message: str) -> None:
    from clineval.secrets import redact

    # outside code's error text: masked like everything printed, and kept to one short line
    line = " ".join(redact(message).split())[:400]
    print(f"warning: {line}; skipped", file=sys.stderr)


def _names(bench: Benchmark) -> set[str]:
    # family and task names are checked apart (a family may share its one task's name)
    return {f"family {bench.family}", *(f"task {t}" for t in bench.tasks)}


def _shown(names: set[str]) -> str:
    return ", ".join(repr(n) for n in sorted({n.split(" ", 1)[1] for n in names}))


# The distribution each installed plugin's benchmark came from, by family (built-ins and
# benchmarks registered at run time have none).
_ORIGIN: dict[str, str] = {}


@cache
def benchmarks() -> tuple[Benchmark, ...]:
    """Every registered benchmark, built-ins first. A plugin that reuses a built-in's family or
    task name is refused; two plugins that share a name are both refused (which one won would
    depend on the order packages happen to be found in)."""
    builtin = _builtin()
    taken: set[str] = set().union(*(_names(b) for b in builtin))
    plugins = _plugins()
    chosen: list[_Found] = []
    _REFUSED.clear()
    for item in plugins:
        clash = _names(item.bench) & taken
        if clash:
            _refuse(
                item,
                f"benchmark {item.bench.family!r} of {item.distribution!r} reuses the built-in "
                f"name(s) {_shown(clash)}",
            )
            continue
        chosen.append(item)
    refused: set[int] = set()
    for i, a in enumerate(chosen):
        for j in range(i + 1, len(chosen)):
            b = chosen[j]
            clash = _names(a.bench) & _names(b.bench)
            if clash:
                why = (
                    f"benchmarks {a.bench.family!r} of {a.distribution!r} and "
                    f"{b.bench.family!r} of {b.distribution!r} both declare "
                    f"{_shown(clash)} (neither is used)"
                )
                _refuse(a, why)
                _refuse(b, why, warn=False)
                refused.update((i, j))
    kept = [item for i, item in enumerate(chosen) if i not in refused]
    _ORIGIN.clear()
    _ORIGIN.update({item.bench.family: item.distribution for item in kept})
    return (*builtin, *(item.bench for item in kept))


# Why each task of a refused plugin is not one: `get_task` says so rather than "unknown".
_REFUSED: dict[str, str] = {}


def _refuse(item: _Found, why: str, warn: bool = True) -> None:
    if warn:
        _warn(why)
    for task in (*item.bench.tasks, item.bench.family):
        if task not in _REFUSED:  # a built-in's own name stays the built-in's
            _REFUSED[task] = why


def distribution_of(task: str) -> str | None:
    """The installed distribution whose plugin declares `task` (None for a built-in task, one
    registered at run time, or an unknown one)."""
    bench = benchmark_of(task)
    return None if bench is None else _ORIGIN.get(bench.family)


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


# Plugins are imported when a command first needs one: a listing (`tasks`, the option keys, a
# completion), or a task or family no built-in declares. `defer_plugins(True)` says the command
# needs none (`clineval run` of built-in tasks and flags only: clineval.option_flags.
# run_needs_plugins): its listings are then of the benchmarks loaded so far.
_STATE = {"deferred": False}


def defer_plugins(deferred: bool) -> None:
    """Whether listings may leave the plugins unimported (see _STATE); a lookup that no built-in
    answers imports them whatever this says."""
    _STATE["deferred"] = deferred


def _all() -> tuple[Benchmark, ...]:
    if _STATE["deferred"] and not benchmarks.cache_info().currsize:  # not imported yet
        return (*_builtin(), *_ADDED)
    return (*benchmarks(), *_ADDED)


def _lookup(match: Callable[[Benchmark], bool]) -> Benchmark | None:
    """The first benchmark `match` accepts: the built-ins and those registered at run time
    first, so that a lookup they answer imports no plugin."""
    found = next((b for b in (*_builtin(), *_ADDED) if match(b)), None)
    return found if found is not None else next((b for b in _all_loaded() if match(b)), None)


def _all_loaded() -> tuple[Benchmark, ...]:
    return (*benchmarks(), *_ADDED)


def builtin_task_names() -> list[str]:
    return [task for bench in _builtin() for task in bench.tasks]


def task_names() -> list[str]:
    return [task for bench in _all() for task in bench.tasks]


def benchmark_of(task: str) -> Benchmark | None:
    """The benchmark that declares `task`; None for a task no installed benchmark knows (a run
    directory written with a plugin that is not installed here)."""
    return _lookup(lambda b: task in b.tasks)


def metric_schema(task: str, notes: Mapping[str, Any] | None = None) -> MetricSchema | None:
    """The metrics of `task` as its installed benchmark declares them; for a task no installed
    benchmark declares, as the run record `notes` (manifest.json["tasks"][task]) wrote them;
    None for a run written before the record kept them."""
    bench = benchmark_of(task)
    if bench is not None:
        return bench.metrics
    recorded = (notes or {}).get("metrics")
    if not isinstance(recorded, list) or not recorded:
        return None
    tables = (notes or {}).get("tables") or ()
    return MetricSchema.from_record(
        [m for m in recorded if isinstance(m, Mapping)],
        [str(t) for t in tables if isinstance(t, str)],
    )


def get_benchmark(family: str) -> Benchmark | None:
    return _lookup(lambda b: b.family == family)


def get_task(name: str) -> Task[Any]:
    """The task `name`. A plugin's task comes wrapped: an exception its code raises (in
    `make_task`, or in the task's methods) is a PluginError naming the task and the package."""
    bench = benchmark_of(name)
    if bench is None:
        known = [task for b in _all_loaded() for task in b.tasks]
        if name in _REFUSED:  # a plugin declares it, and was refused
            raise InputError(f"task {name!r} is not available: {_REFUSED[name]}")
        raise InputError(
            f"unknown task {name!r}{did_you_mean(name, known)} (known: {', '.join(known)})"
        )
    dist = _ORIGIN.get(bench.family)
    if dist is None:
        return bench.task(name)
    try:
        task = bench.task(name)
    except DeclarationError as exc:  # says what is wrong with which part: add the package
        raise _declaration_error(exc, dist) from None
    except (Exception, SystemExit) as exc:  # a sys.exit in outside code is a failure too
        raise _plugin_error(name, dist, "make_task", exc) from exc
    return _PluginTask(task, dist)


def check_declared_parts(tasks: Sequence[str]) -> None:
    """Every code part the benchmarks of `tasks` declare resolves and fits its call
    (`Benchmark.check_parts`); for a plugin, what its modules raise on import is one
    PluginError naming the package."""
    for bench in {id(b): b for b in map(benchmark_of, tasks) if b is not None}.values():
        dist = _ORIGIN.get(bench.family)
        if dist is None:
            bench.check_parts()
            continue
        try:
            with contextlib.redirect_stdout(sys.stderr):
                bench.check_parts()
        except DeclarationError as exc:
            raise _declaration_error(exc, dist) from None
        except (Exception, SystemExit) as exc:
            raise _plugin_error(
                bench.tasks[0], dist, "an import of its declared parts", exc
            ) from exc


def _declaration_error(exc: DeclarationError, dist: str) -> PluginError:
    return PluginError(f"{exc.message} (package {dist!r})")


def _plugin_error(task: str, dist: str, step: str, exc: BaseException) -> PluginError:
    return PluginError(f"task {task!r} (package {dist!r}) failed in {step}: {_describe(exc)}")


def guarded(task: str, step: str, call: Callable[[], T]) -> T:
    """`call()`, a step of `task`'s benchmark code (its report section, its statistics): for a
    plugin, an exception of its own becomes one PluginError line naming task and package, and
    what it prints goes to stderr."""
    dist = distribution_of(task)
    if dist is None:
        return call()
    return _plugin_step(task, dist, step, call)


def _plugin_step(task: str, dist: str, step: str, call: Callable[[], T]) -> T:
    # What the plugin prints goes to stderr: stdout is the command's (a CSV, a table).
    try:
        with contextlib.redirect_stdout(sys.stderr):
            return call()
    except DeclarationError as exc:
        raise _declaration_error(exc, dist) from None
    except (Exception, SystemExit) as exc:
        if _passes(exc):
            raise
        raise _plugin_error(task, dist, step, exc) from exc


def _passes(exc: BaseException) -> bool:
    """clineval's own exceptions keep their meaning through a plugin's task: bad input
    (InputError, already one line), batch files written, a model call's error."""
    return type(exc).__module__.split(".")[0] == "clineval"


class _PluginTask(Task[Any]):
    """A plugin's task, each step guarded: its own exceptions become one PluginError line
    (instead of "internal error: RuntimeError" naming nothing)."""

    def __init__(self, inner: Task[Any], dist: str) -> None:
        self.inner = inner
        self.dist = dist
        self.name = inner.name
        self.family = inner.family
        self.description = inner.description
        self.option_group = inner.option_group

    def _guard(self, step: str, call: Callable[[], T]) -> T:
        return _plugin_step(self.name, self.dist, step, call)

    def data_status(self, data_root: Path | None) -> list[DataFileStatus]:
        return self._guard("data_status", lambda: self.inner.data_status(data_root))

    def load(self, ctx: RunContext) -> Any:
        return self._guard("load", lambda: self.inner.load(ctx))

    def predict(self, ctx: RunContext, data: Any) -> None:
        self._guard("predict", lambda: self.inner.predict(ctx, data))

    def evaluate(self, ctx: RunContext, data: Any) -> TaskResult:
        return self._guard("evaluate", lambda: self.inner.evaluate(ctx, data))

    def plan(self, ctx: RunContext, data: Any, calls: CallPlan) -> None:
        self._guard("plan", lambda: self.inner.plan(ctx, data, calls))


def option_groups() -> list[OptionGroup]:
    """Every `--option` group (benchmarks', model layer's), given the backends' names."""
    from clineval.models.options import MODEL_OPTION_GROUPS
    from clineval.models.registry import BACKENDS

    groups: list[OptionGroup] = []
    for bench in _all():
        groups.extend(g for g in bench.options if g not in groups)
    return [dataclasses.replace(g, backends=BACKENDS) for g in [*groups, *MODEL_OPTION_GROUPS]]


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
    """`clineval data synth NAME`: every benchmark's synthetic-fixture generators, each
    resolved when it is called (a completion lists the names, importing none of them)."""
    found = [(bench, name) for bench in _all() for name in bench.synthesizers]
    return {name: partial(_synthesize, bench, name) for bench, name in found}


def _synthesize(
    bench: Benchmark, name: str, out: Path, seed: int, data_dir: str | None, scale: float
) -> list[Path]:
    return bench.synthesizer(name)(out, seed, data_dir, scale)


def exporters() -> dict[str, Exporter]:
    """`clineval export --format NAME` formats that benchmarks declare, each resolved when it
    is called."""
    return {name: partial(_export, bench, name) for bench in _all() for name in bench.exporters}


def _export(
    bench: Benchmark, name: str, run: RunFiles, out_dir: Path, settings: ExportSettings
) -> list[Path]:
    return bench.exporter(name)(run, out_dir, settings)
