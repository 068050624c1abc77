"""Per-sample statistics of NER's headline metrics, from samples.jsonl rows: per-document
counts in `scores` (token: {type: {tp, fp, fn}}; partial/exact: {correct, incorrect, missed,
spurious}); the corpus metric is a function of their sums. They feed compare's paired
bootstrap and the report's intervals (NER stores none)."""

from __future__ import annotations

from typing import Any

import numpy as np

from clineval.reportkit import statistics as st

SPAN_FIELDS = ("correct", "incorrect", "missed", "spurious")


def _ids(samples: list[dict[str, Any]]) -> list[str]:
    return [str(r.get("id", i)) for i, r in enumerate(samples)]


def _gold_key(row: dict[str, Any]) -> str:
    """A fingerprint of a sample's gold answer (a paired test needs the same gold)."""
    gold = row.get("gold")
    return repr(gold)


def ner_statistics(
    metrics: dict[str, Any], samples: list[dict[str, Any]]
) -> dict[str, st.SampleStatistic]:
    out: dict[str, st.SampleStatistic] = {}
    scored = [r for r in samples if isinstance(r.get("scores"), dict)]
    if not scored or len(scored) != len(samples):
        return out
    ids = _ids(samples)
    gold = [_gold_key(r) for r in samples]
    per_type = metrics.get("per_type")
    types = list(per_type) if isinstance(per_type, dict) else []
    if not types:
        seen: dict[str, None] = {}
        for r in samples:
            for t in r["scores"].get("token", {}) or {}:
                seen.setdefault(str(t), None)
        types = list(seen)
    if types and all(isinstance(r["scores"].get("token"), dict) for r in samples):
        c = len(types)
        counts = np.zeros((len(samples), 3 * c))
        for i, r in enumerate(samples):
            tok = r["scores"]["token"]
            for k, t in enumerate(types):
                entry = tok.get(t) or {}
                counts[i, k] = entry.get("tp", 0)
                counts[i, c + k] = entry.get("fp", 0)
                counts[i, 2 * c + k] = entry.get("fn", 0)
        stat = st.counts_statistic(ids, counts, st.macro_f1_reducer(c))
        stat.gold = gold
        out["token_macro_f1"] = stat
    for scheme, key in (("partial", "span_partial_f1"), ("exact", "span_exact_f1")):
        if all(isinstance(r["scores"].get(scheme), dict) for r in samples):
            counts = np.array(
                [[r["scores"][scheme].get(f, 0) for f in SPAN_FIELDS] for r in samples],
                dtype=np.float64,
            )
            stat = st.counts_statistic(ids, counts, st.micro_f1_reducer)
            stat.gold = gold
            out[key] = stat
    return out
