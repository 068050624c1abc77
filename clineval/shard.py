"""`--shard I/N`: a deterministic part of the samples, so N machines can split one run.

A sample belongs to shard I (1-based, I in 1..N) when the stable hash of its id, modulo N, is
I - 1. Membership depends on the id alone, never on file order, on --limit or on which other
samples exist, so the N shards are disjoint, together cover everything, and a shard rerun
later (resume) picks exactly the same samples. Apply it AFTER --limit: `--limit 100 --shard
1/4` runs shard 1 of the first 100 samples, and merging the four shards gives the unsharded
`--limit 100` run.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from typing import TypeVar

from clineval.errors import InputError

T = TypeVar("T")


def parse_shard(spec: str) -> tuple[int, int]:
    """ "I/N" -> (I, N) with 1 <= I <= N; InputError on anything else."""
    index_text, sep, count_text = spec.strip().partition("/")
    try:
        index, count = int(index_text), int(count_text)
    except ValueError:
        index, count = 0, 0
    if not sep or count < 1 or not 1 <= index <= count:
        raise InputError(f"--shard {spec!r} is not I/N with 1 <= I <= N (e.g. 1/4 ... 4/4)")
    return index, count


def shard_of(sample_id: str, count: int) -> int:
    """The 1-based shard of a sample id among `count` shards."""
    digest = hashlib.sha256(str(sample_id).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % count + 1


def select_shard(
    ids: Iterable[T], shard_spec: str | None, key: Callable[[T], str] | None = None
) -> list[T]:
    """The members of shard I/N, in their given order; everything when `shard_spec` is None.

    `ids` are sample ids, or samples with `key(sample)` giving the id.
    """
    items = list(ids)
    if shard_spec is None:
        return items
    index, count = parse_shard(shard_spec)
    get_id = key or str
    return [item for item in items if shard_of(get_id(item), count) == index]
