"""Token usage per call and per run, and an estimated cost from a user-supplied price table.

The price table is a JSON file the user passes with `--price-table`:
    {"gpt-4o": {"input_per_1m": 2.5, "output_per_1m": 10.0, "cached_input_per_1m": 1.25}, ...}
Keys are matched against the model label ("openai:gpt-4o") first, then the bare model name
("gpt-4o"). Prices are per million tokens, in whatever currency the user writes them in; the
project ships no prices (they change, and a stale price is worse than none).
`cached_input_per_1m` (optional) prices the prompt tokens a server served from its prompt
cache (`usage.prompt_tokens_details.cached_tokens`); without it they cost `input_per_1m`.
Calls made through a batch (`--batch`, batch files: their stored usage says `"batch": true`)
are priced at `batch_input_per_1m` / `batch_output_per_1m` / `batch_cached_input_per_1m`, or
at the list prices times (1 - `batch_discount`), e.g. `"batch_discount": 0.5`; without either
at the list prices. `estimated_cost_list` is then what the same calls cost at list prices.

Cached prompt tokens are part of `prompt_tokens` (as OpenAI-compatible servers count them);
a call whose server reports no cached count is counted as none cached, and
`calls_reporting_cache` says how many calls did report one.

A call answered by an earlier run directory (`--reuse`, its usage marks `reused_from`) was
paid for by that run: it is counted in `reused_calls`, not in this run's tokens or cost.

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
from clineval.store_reuse import REUSED_FROM


@dataclass(frozen=True)
class Price:
    input_per_1m: float
    output_per_1m: float
    cached_input_per_1m: float | None = None  # None: cached prompt tokens cost input_per_1m
    # Batch API rates (clineval.models.batch): explicit prices, else the list prices times
    # (1 - batch_discount); with neither, batch calls are priced at the list prices.
    batch_input_per_1m: float | None = None
    batch_output_per_1m: float | None = None
    batch_cached_input_per_1m: float | None = None
    batch_discount: float | None = None

    @property
    def has_batch_price(self) -> bool:
        """Whether any batch rate is given (any one of them changes what a batch call costs)."""
        return any(
            value is not None
            for value in (
                self.batch_discount,
                self.batch_input_per_1m,
                self.batch_output_per_1m,
                self.batch_cached_input_per_1m,
            )
        )

    def batch(self) -> Price:
        """The prices of a call made through a batch."""
        keep = 1.0 - (self.batch_discount or 0.0)
        cached = self.cached_input_per_1m
        return Price(
            input_per_1m=_or(self.batch_input_per_1m, self.input_per_1m * keep),
            output_per_1m=_or(self.batch_output_per_1m, self.output_per_1m * keep),
            cached_input_per_1m=_or(
                self.batch_cached_input_per_1m, None if cached is None else cached * keep
            ),
        )

    def cost(self, prompt_tokens: int, completion_tokens: int, cached_tokens: int = 0) -> float:
        """Cost of `prompt_tokens` (of which `cached_tokens` came from a prompt cache) and
        `completion_tokens`."""
        cached = min(max(cached_tokens, 0), prompt_tokens)
        cached_price = (
            self.input_per_1m if self.cached_input_per_1m is None else self.cached_input_per_1m
        )
        return (
            (prompt_tokens - cached) * self.input_per_1m
            + cached * cached_price
            + completion_tokens * self.output_per_1m
        ) / 1e6


def _or(value: float | None, default: float | None) -> Any:
    return default if value is None else value


_PRICE_FIELDS = (
    "input_per_1m",
    "output_per_1m",
    "cached_input_per_1m",
    "batch_input_per_1m",
    "batch_output_per_1m",
    "batch_cached_input_per_1m",
)
_OPTIONAL = frozenset(_PRICE_FIELDS[2:])


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
        # Other keys (a note, a currency) are the user's own; a misspelt price is refused, as
        # it would otherwise be ignored and the estimate silently wrong.
        unknown = [
            k
            for k in entry
            if (str(k).endswith("per_1m") or str(k).startswith("batch_"))
            and k not in (*_PRICE_FIELDS, "batch_discount")
        ]
        if unknown:
            raise InputError(
                f"{model!r}: unknown price {unknown[0]!r} (known: {', '.join(_PRICE_FIELDS)})",
                path=p,
            )
        values: dict[str, float] = {}
        for field_name in _PRICE_FIELDS:
            if field_name in _OPTIONAL and field_name not in entry:
                continue
            value = entry.get(field_name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise InputError(f"{model!r}: {field_name} must be a number", path=p)
            if not math.isfinite(value) or value < 0:
                raise InputError(f"{model!r}: {field_name} must be >= 0", path=p)
            values[field_name] = float(value)
        if "batch_discount" in entry:
            discount = entry["batch_discount"]
            if (
                isinstance(discount, bool)
                or not isinstance(discount, int | float)
                or not 0 <= discount <= 1
            ):
                raise InputError(
                    f"{model!r}: batch_discount must be a number from 0 to 1 (0.5: half price)",
                    path=p,
                )
            values["batch_discount"] = float(discount)
        table[str(model)] = Price(**values)
    return table


def find_price(table: Mapping[str, Price], model_label: str) -> Price | None:
    """Price for a label like "openai:gpt-4o": exact label first, then the name after ':'."""
    if model_label in table:
        return table[model_label]
    _, _, name = model_label.partition(":")
    return table.get(name)


def batch_price_warnings(
    table: Mapping[str, Price], batched_labels: Iterable[str], path: str | Path | None
) -> list[str]:
    """One line per batched model whose price-table entry has no batch rate: its batch calls
    will be priced (and --dry-run prices them) at list prices, which a Batch API does not
    charge; said before the run, so that the table can be mended first."""
    out = []
    for label in dict.fromkeys(batched_labels):
        price = find_price(table, label)
        if price is not None and not price.has_batch_price:
            out.append(
                f"warning: {path}: {label} has no batch price, so its batch calls are priced at"
                ' list prices; add "batch_discount" (0.5: half price) or "batch_input_per_1m" /'
                ' "batch_output_per_1m" to its entry'
            )
    return out


def usage_tokens(usage: Mapping[str, Any] | None) -> tuple[int, int]:
    """(prompt_tokens, completion_tokens) of one call's usage dict; missing -> 0."""
    if not usage:
        return 0, 0
    return int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)


# llama.cpp's per-call `timings` kept with the usage (the counts and times of its prompt
# processing and decoding; `cache_n` = prompt tokens reused from the slot's cache).
TIMING_KEYS = ("prompt_n", "prompt_ms", "predicted_n", "predicted_ms", "cache_n")


def _count(value: Any) -> int | None:
    """A token count from a server reply: a finite number >= 0, else None (never trusted
    further: usage is what the server says, and a NaN must not stop the run)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not math.isfinite(value) or value < 0:
        return None
    return int(value)


def usage_of(completion: Mapping[str, Any]) -> dict[str, Any]:
    """The usage of one chat.completion as the run store keeps it: prompt_tokens,
    completion_tokens, total_tokens; cached_tokens (`usage.prompt_tokens_details.cached_tokens`,
    else llama.cpp's `timings.cache_n`) and llama.cpp's `timings` where the server sends them."""
    raw = completion.get("usage")
    raw = raw if isinstance(raw, Mapping) else {}
    usage: dict[str, Any] = {}
    # prompt_tokens_untruncated: an hf: model that cut its input (ChatRequest.max_input_tokens)
    for name in ("prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_untruncated"):
        value = _count(raw.get(name))
        if value is not None:
            usage[name] = value
    details = raw.get("prompt_tokens_details")
    cached = _count(details.get("cached_tokens")) if isinstance(details, Mapping) else None
    timings = completion.get("timings")
    if isinstance(timings, Mapping):
        kept = {k: timings[k] for k in TIMING_KEYS if _count(timings.get(k)) is not None}
        if kept:
            usage["timings"] = kept
        if cached is None:
            cached = _count(timings.get("cache_n"))
    if cached is not None:
        usage["cached_tokens"] = cached
    return usage


def cached_tokens(usage: Mapping[str, Any] | None) -> int | None:
    """The prompt tokens of one call that its server served from a prompt cache, as stored
    (`cached_tokens`, see usage_of); None when the server did not report it."""
    if not usage:
        return None
    value = usage.get("cached_tokens")
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


def cached_share(cached: int, prompt: int) -> float | None:
    """The share of prompt tokens served from a cache (None without prompt tokens)."""
    return round(cached / prompt, 4) if prompt else None


def summarize_usage(
    calls: Iterable[tuple[str, Mapping[str, Any] | None]], prices: Mapping[str, Price]
) -> dict[str, Any]:
    """Per-model and total usage of (model_label, usage) pairs, with cost where priced.

    `estimated_cost` is None when no model of the run has a price (not 0: unknown is not free).
    """
    per_model: dict[str, dict[str, Any]] = {}
    batch_part: dict[str, list[int]] = {}  # label -> prompt, completion, cached of batch calls
    for label, usage in calls:
        row = per_model.setdefault(
            label,
            {
                "calls": 0,
                "prompt_tokens": 0,
                "cached_prompt_tokens": 0,
                "completion_tokens": 0,
                "calls_without_usage": 0,
                "calls_reporting_cache": 0,
                "batch_calls": 0,
                "reused_calls": 0,
            },
        )
        if usage and usage.get(REUSED_FROM):
            # answered by an earlier run's stored call (--reuse): paid for there, not here
            row["reused_calls"] += 1
            continue
        row["calls"] += 1
        if not usage:
            row["calls_without_usage"] += 1
        prompt, completion = usage_tokens(usage)
        row["prompt_tokens"] += prompt
        row["completion_tokens"] += completion
        cached = cached_tokens(usage)
        if cached is not None:
            row["calls_reporting_cache"] += 1
            row["cached_prompt_tokens"] += min(cached, prompt)
        if usage and usage.get("batch"):  # a verdict record sums its calls: a count
            row["batch_calls"] += 1
            part = batch_part.setdefault(label, [0, 0, 0])
            part[0] += prompt
            part[1] += completion
            part[2] += min(cached or 0, prompt)
    total_cost: float | None = None
    unpriced: list[str] = []
    for label, row in per_model.items():
        price = find_price(prices, label)
        row["total_tokens"] = row["prompt_tokens"] + row["completion_tokens"]
        row["cached_share"] = cached_share(row["cached_prompt_tokens"], row["prompt_tokens"])
        if price is None:
            row["estimated_cost"] = None
            unpriced.append(label)
            continue
        cost = price.cost(
            row["prompt_tokens"], row["completion_tokens"], row["cached_prompt_tokens"]
        )
        if label in batch_part:
            # the batch calls at batch rates instead of list rates
            b_prompt, b_completion, b_cached = batch_part[label]
            row["estimated_cost_list"] = round(cost, 6)
            row["batch_priced"] = price.has_batch_price
            cost += price.batch().cost(b_prompt, b_completion, b_cached) - price.cost(
                b_prompt, b_completion, b_cached
            )
        row["estimated_cost"] = round(cost, 6)
        total_cost = (total_cost or 0.0) + row["estimated_cost"]
    prompt_total = sum(r["prompt_tokens"] for r in per_model.values())
    cached_total = sum(r["cached_prompt_tokens"] for r in per_model.values())
    return {
        "models": per_model,
        "calls": sum(r["calls"] for r in per_model.values()),
        "prompt_tokens": prompt_total,
        "cached_prompt_tokens": cached_total,
        "cached_share": cached_share(cached_total, prompt_total),
        "completion_tokens": sum(r["completion_tokens"] for r in per_model.values()),
        "batch_calls": sum(r["batch_calls"] for r in per_model.values()),
        "reused_calls": sum(r["reused_calls"] for r in per_model.values()),
        "estimated_cost_list": None
        if total_cost is None
        else round(
            sum(r.get("estimated_cost_list", r["estimated_cost"]) or 0 for r in per_model.values()),
            6,
        ),
        "estimated_cost": None if total_cost is None else round(total_cost, 6),
        "unpriced_models": unpriced,
    }


def run_usage(
    store: Any, price_table: str | Path | None = None, calls: list[tuple[str, Any]] | None = None
) -> dict[str, Any]:
    """Usage + estimated cost of every call in a run store (`RunStore`); `calls`: its
    `call_usage()` when the caller has read it already (tens of thousands of decoded rows)."""
    prices = load_price_table(price_table)
    return summarize_usage(store.call_usage() if calls is None else calls, prices)


def task_usage(
    store: Any,
    keys: Iterable[str],
    unkeyed: Iterable[tuple[str, Mapping[str, Any] | None]] = (),
    price_table: str | Path | None = None,
) -> dict[str, Any]:
    """Usage + estimated cost of one task's calls: the stored calls its records name by key
    (`keys`), each once, read from the run store exactly as `run_usage` reads them for the
    manifest, so a call reused from another run (`--reuse`) is `reused_calls` and costs
    nothing in both. `unkeyed`: (model, usage) of records stored before records named
    their calls, counted from their own usage as those runs did."""
    calls = store.call_usage_of(set(keys))
    return summarize_usage([*calls, *unkeyed], load_price_table(price_table))
