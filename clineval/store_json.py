"""The JSON of the run store: the canonical text that call keys are hashed from, and the fast
encoders of the hot path (orjson, with the json module for what orjson refuses)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import orjson


def canonical_json(obj: Any) -> str:
    """The one JSON text of `obj` that keys are hashed from: sorted keys, no spaces, UTF-8."""
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def hash_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def stable_hash(obj: Any) -> str:
    """sha256 of a canonical JSON encoding: the same content always gives the same key."""
    return hash_text(canonical_json(obj))


def loads_fast(text: str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:  # e.g. NaN, which the json module writes and orjson refuses
        return json.loads(text)


def dumps_fast(value: Any) -> str:
    """JSON for the hot path of model calls (orjson: ~20x faster on a judge prompt). Values
    that orjson refuses (big ints, non-string keys) go through the json module."""
    try:
        return orjson.dumps(value).decode("utf-8")
    except TypeError:
        return dumps(value)


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
