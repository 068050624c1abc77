"""What a benchmark declares: the one object the generic code (runner, report, compare, the
Python API, `clineval tasks`, `data fetch`, `export`, skills) knows a benchmark by.

A benchmark package (built in under clineval/benchmarks/, or installed separately and
registered through the entry-point group `clineval.benchmarks`) exports one `Benchmark`.
Everything in it is cheap to build: its code parts (the task, report section, statistics,
fetch step, exporters, ...) are named by "module:attribute" strings, imported on first use
(`clineval.references`), so listing the tasks does not import torch or a tokenizer. A part may
also be given as the callable itself. Each is checked when first used: a string that does not
resolve, or names something that cannot be called as the part is called, is one
`DeclarationError` line naming the benchmark, the part and the reference.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from clineval.errors import InputError
from clineval.metrics.schema import MetricSchema
from clineval.options import OptionGroup
from clineval.references import UnresolvedReference, call_shape_problem, resolve_reference

# The RunConfig fields a benchmark may own (`Benchmark.run_settings`): read only by the tasks
# that declare them, so a run with none of those tasks refuses them
# (clineval.run_checks.check_run_settings). A setting of one benchmark alone is its option
# instead, with a flag of its own where it keeps one (clineval.options.Flag: --cases, --dedupe,
# --verdicts).
OWNABLE_RUN_SETTINGS = ("judges", "judge_base_urls", "judge_prompt")

if TYPE_CHECKING:
    from clineval.benchmarks.base import Task
    from clineval.config import RunConfig
    from clineval.data.fetch import Source
    from clineval.reportkit.run_files import ExportSettings, RunFiles
    from clineval.reportkit.rundata import RunData
    from clineval.reportkit.statistics import SampleStatistic
    from clineval.retry import RetryPolicy


# The statistics of one task's results for paired comparison: {metric key: statistic}.
SampleStatistics = Callable[[dict[str, Any], list[dict[str, Any]]], "dict[str, SampleStatistic]"]
# The report section of one task of a run: a plain dict the report template renders.
ReportSection = Callable[["RunData", str], dict[str, Any]]
# Files of a corpus that have no pinned hash, fetched after the pinned ones.
FetchStep = Callable[[Path, "str | None", "RetryPolicy"], list[Path]]
# One samples.jsonl row as the rows of a long-form frame (one per span, per criterion, ...).
LongRows = Callable[[dict[str, Any]], list[dict[str, Any]]]
# `clineval export --format NAME`: the paths written.
Exporter = Callable[["RunFiles", Path, "ExportSettings"], list[Path]]
# `clineval data synth NAME -o DIR [--seed S] [--data-dir D] [--scale X]`: the paths written.
Synthesizer = Callable[[Path, int, "str | None", float], list[Path]]
# Checks of the run's settings that only one benchmark reads (raising InputError).
SettingsCheck = Callable[["RunConfig"], None]
# The task of a name: a callable given the task's name, or a Task class (see Benchmark.task).
TaskMaker = Callable[..., "Task[Any]"]


class DeclarationError(InputError):
    """A part of a benchmark's declaration does not resolve, or has the wrong shape: one line
    naming the benchmark, the part and its reference (the registry adds a plugin's package)."""


# How generic code calls each code part of a declaration: its shape, checked on first use.
_CALLS = {
    "make_task": ("make_task(name)", 1),
    "statistics": ("statistics(metrics, samples)", 2),
    "report_section": ("report_section(run, task)", 2),
    "check_settings": ("check_settings(config)", 1),
    "long_rows": ("long_rows(row)", 1),
    "exporters": ("exporter(run, out_dir, settings)", 3),
    "synthesizers": ("synthesizer(out, seed, data_dir, scale)", 4),
    "unpinned": ("unpinned(cache_root, base_url, retry)", 3),
}


def _shown(value: str | Callable[..., Any]) -> str:
    if isinstance(value, str):
        return repr(value)
    module = getattr(value, "__module__", None)
    name = getattr(value, "__qualname__", None) or type(value).__name__
    return f"{module}:{name}" if module else str(name)


def _target(owner: str, part: str, value: str | Callable[..., Any]) -> object:
    """What a declared part names (a "module:attribute" string, its module imported now) or
    is."""
    if not isinstance(value, str):
        return value
    try:
        return resolve_reference(value)
    except UnresolvedReference as exc:
        raise DeclarationError(f"{owner}: {part} {exc.message}") from None


def _resolved(
    owner: str, part: str, value: str | Callable[..., Any], kind: str | None = None
) -> Any:
    """The callable a declared part names or is, checked to fit the call generic code makes
    (`_CALLS`; `kind` names the entry when `part` is an item such as exporters['x'])."""
    target = _target(owner, part, value)
    call, arguments = _CALLS[kind or part]
    problem = call_shape_problem(target, call, arguments)
    if problem is not None:
        raise DeclarationError(f"{owner}: {part} {_shown(value)} {problem}")
    return target


@dataclass(frozen=True)
class DataSource:
    """What `clineval data fetch NAME` downloads: pinned files (checked against the package
    manifest), then an optional step for files without a published hash."""

    name: str
    files: tuple[Source, ...] = ()
    # the step for files without a published hash, called as step(cache_root, base_url,
    # retry): a "module:function" string or the function
    unpinned: str | FetchStep | None = None
    notice: str | None = None  # shown once the files are fetched (license terms)
    # what to do when the official address cannot be reached (offline machines)
    offline_hint: str | None = None
    # data files, by the paths tasks name them with (`Task.data_status`), that the `unpinned`
    # step makes available: a task missing one is told to run this fetch
    provides: tuple[str, ...] = ()

    def supplies(self, relative: str) -> bool:
        """Whether fetching this source from its official address gets the data file
        `relative` (a file only a mirror has does not count)."""
        pinned = any(f.relative == relative and f.url is not None for f in self.files)
        return pinned or relative in self.provides

    def fetch_step(self) -> FetchStep | None:
        """The `unpinned` step, resolved (imported on this first use)."""
        if self.unpinned is None:
            return None
        return cast("FetchStep", _resolved(f"data source {self.name!r}", "unpinned", self.unpinned))


@dataclass(frozen=True)
class Benchmark:
    """A benchmark family: its tasks and everything generic code needs to know of them.

    The code parts (`make_task`, `statistics`, `report_section`, `check_settings`,
    `long_rows`, the values of `exporters` and `synthesizers`, a data source's `unpinned`) are
    each a "module:attribute" string or the callable itself; generic code reaches them through
    the methods below, which resolve a string on first use and check its shape."""

    family: str
    title: str
    tasks: tuple[str, ...]
    # called with a task's name, returning its Task; or a Task class, built with the task's
    # name when its constructor takes an argument, else with none (a family of one task)
    make_task: str | TaskMaker
    metrics: MetricSchema
    options: tuple[OptionGroup, ...] = ()
    # model capabilities (clineval.models.backends.Capability values) the tasks can use
    capabilities: frozenset[str] = frozenset()
    # statistics(metrics, samples): per-sample statistics of the headline metrics
    statistics: str | SampleStatistics | None = None
    # report_section(run, task): the task's section of `clineval report`
    report_section: str | ReportSection | None = None
    data_sources: tuple[DataSource, ...] = ()
    # {format: exporter(run, out_dir, settings)} and {name: synthesizer(out, seed, data_dir,
    # scale)}: `clineval export --format NAME`, `clineval data synth NAME`
    exporters: Mapping[str, str | Exporter] = field(default_factory=dict)
    synthesizers: Mapping[str, str | Synthesizer] = field(default_factory=dict)
    # check_settings(config): checks of the run's settings that only this benchmark reads
    # (e.g. a file a flag names), made with every other check: before anything is loaded or
    # written, and not by `score`
    check_settings: str | SettingsCheck | None = None
    # scoring settings (RunConfig fields such as judge_errors_as_unmet) its tasks read: one
    # given to `score` (or set for `run`) when no task of the run reads it is refused, as an
    # unknown option is, since it would be ignored silently
    scoring_settings: tuple[str, ...] = ()
    # run settings (RunConfig fields such as judges, judge_prompt) its tasks read and other
    # benchmarks' tasks do not: one given to `run` when no task of the run reads it is
    # refused, as an unknown option is (a judged benchmark: JUDGED_RUN_SETTINGS)
    run_settings: tuple[str, ...] = ()
    # folder holding the benchmark's Agent Skill pages (one sub-folder per skill)
    skills_dir: Path | None = None
    # long_rows(sample row): how one sample row explodes into the rows of the long-form
    # frame (the Python API's RunResult.long_frame); without it a sample is one row
    long_rows: str | LongRows | None = None

    def __post_init__(self) -> None:
        if not self.tasks:
            raise ValueError(f"benchmark {self.family!r} declares no task")
        foreign = [name for name in self.run_settings if name not in OWNABLE_RUN_SETTINGS]
        if foreign:  # e.g. "model": every run without this benchmark would refuse --model
            raise ValueError(
                f"benchmark {self.family!r}: run_settings {foreign} are not settings a "
                f"benchmark may own ({', '.join(OWNABLE_RUN_SETTINGS)})"
            )

    def record(self) -> dict[str, Any]:
        """What a run record says of each of its tasks, so that compare, the Python API and
        other tools rank runs without the benchmark installed: the family, the primary metric
        and its direction, and every declared metric with its flags."""
        primary = self.metrics.primary
        return {
            "family": self.family,
            "primary_metric": primary.key,
            "higher_is_better": primary.higher_is_better,
            "metrics": self.metrics.record(),
            "tables": list(self.metrics.tables),
        }

    # ---- the code parts, resolved on first use ---------------------------------------------

    def _part(self, part: str, value: str | Callable[..., Any], kind: str | None = None) -> Any:
        return _resolved(f"benchmark {self.family!r}", part, value, kind)

    def task(self, name: str) -> Task[Any]:
        """The task `name` (one of `tasks`), made by `make_task`: a callable is given the name;
        a Task class is built with it when its constructor takes an argument, else with none."""
        from clineval.benchmarks.base import Task

        target = _target(f"benchmark {self.family!r}", "make_task", self.make_task)
        # a Task class whose constructor takes nothing stands for a family of one task
        bare = (
            isinstance(target, type)
            and issubclass(target, Task)
            and call_shape_problem(target, "", 1) is not None
            and call_shape_problem(target, "", 0) is None
        )
        if bare:
            made = cast("type[Task[Any]]", target)()
        else:
            made = self._part("make_task", self.make_task)(name)
        if not isinstance(made, Task):
            raise DeclarationError(
                f"benchmark {self.family!r}: make_task {_shown(self.make_task)} returned a "
                f"{type(made).__name__}, not a Task"
            )
        return made

    def statistics_function(self) -> SampleStatistics | None:
        if self.statistics is None:
            return None
        return cast("SampleStatistics", self._part("statistics", self.statistics))

    def report_section_function(self) -> ReportSection | None:
        if self.report_section is None:
            return None
        return cast("ReportSection", self._part("report_section", self.report_section))

    def check_settings_function(self) -> SettingsCheck | None:
        if self.check_settings is None:
            return None
        return cast("SettingsCheck", self._part("check_settings", self.check_settings))

    def long_rows_function(self) -> LongRows | None:
        if self.long_rows is None:
            return None
        return cast("LongRows", self._part("long_rows", self.long_rows))

    def exporter(self, name: str) -> Exporter:
        """The exporter of format `name` (one of `exporters`)."""
        value = self.exporters[name]
        return cast("Exporter", self._part(f"exporters[{name!r}]", value, "exporters"))

    def synthesizer(self, name: str) -> Synthesizer:
        """The synthesizer `name` (one of `synthesizers`)."""
        value = self.synthesizers[name]
        return cast("Synthesizer", self._part(f"synthesizers[{name!r}]", value, "synthesizers"))

    def check_parts(self) -> None:
        """Resolve every declared code part now (DeclarationError for the first that does
        not resolve or fit its call). A run calls it before it computes anything: a misspelt
        report section would otherwise be found only at the end, after hours of model calls."""
        self.statistics_function()
        self.report_section_function()
        self.check_settings_function()
        self.long_rows_function()
        for name in self.exporters:
            self.exporter(name)
        for name in self.synthesizers:
            self.synthesizer(name)
        for source in self.data_sources:
            source.fetch_step()
