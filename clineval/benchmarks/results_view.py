"""What a type checker sees of one task's metrics in the Python API.

At run time every task's metrics are one generic class (`clineval.run_result.TaskMetrics`):
its attributes come from what the task's benchmark declares, so a new benchmark needs no code
there. A type checker cannot read a declaration, so each benchmark also states its metrics as
a view, a subclass of `MetricsView` built by one rule from its `MetricSchema`
(tests/test_api_results.py holds each one to its schema):

- one attribute per declared metric, named by `attribute_key` (`cacs@7` -> `cacs_at_7`):
  `int | None` for a count, else `float | None`;
- `<attribute>_ci` for every metric that is not a count: its interval, `tuple[float, float] |
  None`;
- each declared table: `dict[str, Any]`.

`RunResult.metrics_as(task, SomeView)` checks at run time that the task's benchmark declares
every metric the view names and returns the task's metrics typed as the view, so a misspelt
metric is an error of the type checker, not a None at run time.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping
from typing import Any

# One samples.jsonl row as the rows of a long-form frame (clineval.benchmarks.declaration
# names the same type for a declaration's `long_rows`).
LongRows = Callable[[dict[str, Any]], list[dict[str, Any]]]


def attribute_key(name: str) -> str:
    """A Python attribute name for a results.json key: `cacs@7` is `cacs_at_7`, and any other
    character an identifier cannot hold is `_` (`score:bootstrap_std` is
    `score_bootstrap_std`)."""
    return re.sub(r"\W", "_", name.replace("@", "_at_"))


class MetricsView:
    """What every task's metrics offer (`clineval.TaskMetrics`), for type checkers. A view is
    never made: `RunResult.metrics_as` returns the task's TaskMetrics typed as one. (A class,
    not a Protocol: a type checker refuses a Protocol where `type[View]` is expected.)"""

    task: str
    values: Mapping[str, Any]
    family: str
    primary_metric: str | None
    higher_is_better: bool
    primary: float | None
    fixture: bool

    def __init__(self) -> None:
        raise TypeError("a metrics view only types a task's metrics: use RunResult.metrics_as")

    def scalars(self) -> dict[str, float | int]:
        raise NotImplementedError

    def headline(self) -> list[tuple[str, float | int, tuple[float, float] | None]]:
        raise NotImplementedError

    def __getitem__(self, key: str) -> Any:
        raise NotImplementedError

    def get(self, key: str, default: Any = None) -> Any:
        raise NotImplementedError


def view_attributes(view: type[MetricsView]) -> dict[str, Any]:
    """The metric attributes a view names (its own and its bases', not MetricsView's), with
    their annotations."""
    out: dict[str, Any] = {}
    for klass in reversed(view.__mro__):
        if issubclass(klass, MetricsView) and klass is not MetricsView:
            out.update(inspect.get_annotations(klass))
    return out


def exploding(
    field: str, keep: tuple[str, ...]
) -> Callable[[dict[str, Any]], list[dict[str, Any]]]:
    """A declaration's `long_rows` for samples that hold their scored items as a list of
    objects in `field` (a judged item's `verdicts`): one row per object, after the sample's
    `keep` fields."""

    def rows(sample: dict[str, Any]) -> list[dict[str, Any]]:
        head = {name: sample.get(name) for name in keep}
        items = sample.get(field)
        return [{**head, **item} for item in items or [] if isinstance(item, dict)]

    return rows
