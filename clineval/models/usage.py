"""Token usage per call and per run, and an estimated cost from a user-supplied price table.

The price table is a JSON file the user passes with `--price-table`:
    {"gpt-4o": {"input_per_1m": 2.5, "output_per_1m": 10.0}, ...}
Keys are matched against the model label ("openai:gpt-4o") first, then the bare model name
("gpt-4o"). Prices are per million tokens, in whatever currency the user writes them in; the
project ships no prices (they change, and a stale price is worse than none).

Run totals are summed from the run store, not from in-memory counters, so a resumed or merged
run reports the usage of every stored call exactly once.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clineval.errors import InputError
from clineval.jsonio import read_json_file


@dataclass(frozen=True)
class Price:
    input_per_1m: float
    output_per_1m: float

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.input_per_1m + completion_tokens * self.output_per_1m) / 1e6


PriceTable = dict[str, Price]


def load_price_table(path: str | Path | None) -> PriceTable:
    """Read and validate a price table file; None -> empty table (no cost estimate)."""
    if path is None:
        return {}
    p = Path(path)
    raw = read_json_file(p, "price table")
    if not isinstance(raw, dict):
        raise InputError('expected {"MODEL": {"input_per_1m": X, "output_per_1m": Y}}', path=p)
    table: PriceTable = {}
    for model, entry in raw.items():
        if not isinstance(entry, dict):
            raise InputError(f"price of {model!r} must be an object", path=p)
        values = []
        for field_name in ("input_per_1m", "output_per_1m"):
            value = entry.get(field_name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise InputError(f"{model!r}: {field_name} must be a number", path=p)
            if not math.isfinite(value) or value < 0:
                raise InputError(f"{model!r}: {field_name} must be >= 0", path=p)
            values.append(float(value))
        table[str(model)] = Price(values[0], values[1])
    return table


def find_price(table: Mapping[str, Price], model_label: str) -> Price | None:
    """Price for a label like "openai:gpt-4o": exact label first, then the name after ':'."""
    if model_label in table:
        return table[model_label]
    _, _, name = model_label.partition(":")
    return table.get(name)


def usage_tokens(usage: Mapping[str, Any] | None) -> tuple[int, int]:
    """(prompt_tokens, completion_tokens) of one call's usage dict; missing -> 0."""
    if not usage:
        return 0, 0
    return int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)


def summarize_usage(
    calls: Iterable[tuple[str, Mapping[str, Any] | None]], prices: Mapping[str, Price]
) -> dict[str, Any]:
    """Per-model and total usage of (model_label, usage) pairs, with cost where priced.

    `estimated_cost` is None when no model of the run has a price (not 0: unknown is not free).
    """
    per_model: dict[str, dict[str, Any]] = {}
    for label, usage in calls:
        row = per_model.setdefault(
            label,
            {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "calls_without_usage": 0},
        )
        row["calls"] += 1
        if not usage:
            row["calls_without_usage"] += 1
        prompt, completion = usage_tokens(usage)
        row["prompt_tokens"] += prompt
        row["completion_tokens"] += completion
    total_cost: float | None = None
    unpriced: list[str] = []
    for label, row in per_model.items():
        price = find_price(prices, label)
        row["total_tokens"] = row["prompt_tokens"] + row["completion_tokens"]
        if price is None:
            row["estimated_cost"] = None
            unpriced.append(label)
            continue
        row["estimated_cost"] = round(price.cost(row["prompt_tokens"], row["completion_tokens"]), 6)
        total_cost = (total_cost or 0.0) + row["estimated_cost"]
    return {
        "models": per_model,
        "calls": sum(r["calls"] for r in per_model.values()),
        "prompt_tokens": sum(r["prompt_tokens"] for r in per_model.values()),
        "completion_tokens": sum(r["completion_tokens"] for r in per_model.values()),
        "estimated_cost": None if total_cost is None else round(total_cost, 6),
        "unpriced_models": unpriced,
    }


def run_usage(store: Any, price_table: str | Path | None = None) -> dict[str, Any]:
    """Usage + estimated cost of every call in a run store (`RunStore`)."""
    prices = load_price_table(price_table)
    return summarize_usage(store.call_usage(), prices)
