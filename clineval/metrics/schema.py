"""What a task's figures are: each metric's direction, whether a report card and a compare
column show it, whether it is a count, its per-sample field, decimals and basis (`MetricSpec`),
and a benchmark's metrics together, primary first (`MetricSchema`). A benchmark declares its
schema (clineval.benchmarks.declaration); the run record keeps it, so compare, the report and the
API rank a run the same way where the benchmark is not installed.

Internal: not part of clineval's public API; a benchmark package imports these through
`clineval.benchmarks`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class MetricSpec:
    """One figure of a task's results.json entry.

    `headline` figures are the report's cards and compare's leaderboard columns; a `count` is
    shown but never ranked or tested; `higher_is_better` decides who is best in compare. All
    of it is written into the run record, so that compare, the Python API and other tools rank
    a run the same way where the benchmark is not installed.

    `per_sample` names the samples.jsonl field whose mean over the samples is this figure
    (true/false count as 1/0), e.g. "correct" for accuracy: compare's paired test and the
    report's interval then need no statistics code, and work from the run record alone.

    `digits` is how many decimals the figure is shown with (CACS, a percentage, with 2);
    `basis` names the count in the same results entry that the figure is computed on when that
    can be fewer than the samples run (CACS: the cases with every verdict), shown beside it."""

    key: str
    description: str = ""
    higher_is_better: bool = True
    headline: bool = True
    count: bool = False
    per_sample: str | None = None
    digits: int = 4
    basis: str | None = None

    def record(self) -> dict[str, Any]:
        """The spec as the run record keeps it (manifest.json["tasks"][task]["metrics"])."""
        out: dict[str, Any] = {
            "key": self.key,
            "description": self.description,
            "higher_is_better": self.higher_is_better,
            "headline": self.headline,
            "count": self.count,
        }
        if self.per_sample is not None:
            out["per_sample"] = self.per_sample
        if self.digits != 4:
            out["digits"] = self.digits
        if self.basis is not None:
            out["basis"] = self.basis
        return out

    @classmethod
    def from_record(cls, entry: Mapping[str, Any]) -> MetricSpec:
        """A spec read back from a run record (the record's model checked the types)."""
        return cls(
            key=str(entry["key"]),
            description=str(entry.get("description") or ""),
            higher_is_better=entry.get("higher_is_better") is not False,
            headline=entry.get("headline") is not False,
            count=entry.get("count") is True,
            per_sample=entry.get("per_sample"),
            digits=entry["digits"] if isinstance(entry.get("digits"), int) else 4,
            basis=str(entry["basis"]) if entry.get("basis") is not None else None,
        )


@dataclass(frozen=True)
class MetricSchema:
    """A benchmark's metrics, declared once. The first one is the primary metric."""

    metrics: tuple[MetricSpec, ...]
    # nested tables of a results entry (e.g. per-class figures), by key
    tables: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.metrics:
            raise ValueError("a metric schema needs at least its primary metric")
        keys = [m.key for m in self.metrics]
        if len(set(keys)) != len(keys):
            raise ValueError(f"metric keys repeat: {keys}")
        if self.metrics[0].count:
            raise ValueError("the primary metric cannot be a count")

    @property
    def primary(self) -> MetricSpec:
        return self.metrics[0]

    def spec(self, key: str) -> MetricSpec | None:
        return next((m for m in self.metrics if m.key == key), None)

    @property
    def headline_keys(self) -> tuple[str, ...]:
        return tuple(m.key for m in self.metrics if m.headline)

    @property
    def ranked_keys(self) -> tuple[str, ...]:
        """Headline figures a leaderboard ranks (counts excluded)."""
        return tuple(m.key for m in self.metrics if m.headline and not m.count)

    def higher_is_better(self, key: str) -> bool:
        spec = self.spec(key)
        return True if spec is None else spec.higher_is_better

    def digits(self) -> dict[str, int]:
        """Decimals per metric key, for those declared with other than 4."""
        return {m.key: m.digits for m in self.metrics if m.digits != 4}

    def record(self) -> list[dict[str, Any]]:
        return [m.record() for m in self.metrics]

    @classmethod
    def from_record(
        cls, metrics: Sequence[Mapping[str, Any]], tables: Sequence[str] = ()
    ) -> MetricSchema | None:
        """The schema a run record wrote; None when it wrote none (an older run) or one this
        class refuses (then the record is no guide to ranking)."""
        try:
            return cls(tuple(MetricSpec.from_record(m) for m in metrics), tuple(tables))
        except (KeyError, ValueError):
            return None
