"""The replicas (base URLs) of one model and which one a call goes to.

A call without a prefix key goes to the replica with the fewest requests in flight (ties
round-robin). A call with a prefix key (e.g. the ClinConsensus judge calls of one case and
answer, which share everything but the criterion) goes where the key's earlier calls went, so
that the server computes the shared prefix once and reuses it (llama.cpp per slot, vLLM /
SGLang prefix caches): a case's prefix is computed on one replica of the fleet instead of on
every replica.

Placement (rendezvous hashing with bounded loads, with memory): a key's first call goes to the
first replica in the key's rendezvous order whose requests in flight are at most the fleet's
mean (this call included), so new keys fill the replicas that have room and the load stays
even. Its later calls go to that replica while it holds fewer than LOAD_BOUND x the mean;
past that, a call takes the next replica in the same way, which then also serves the key. A
replica that is resting or failed this call is skipped: its keys move, the others stay.

A replica that failed to connect (or timed out) rests a while (1, 2, 4 ... 30 s); calls go
elsewhere unless nothing else is left.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import time
from collections import OrderedDict

# In-flight calls a replica may hold, relative to the fleet's mean, before a key's next call
# moves on (perf/bench_prefix_affinity_sim.py measures the trade: lower spreads the
# load more evenly, higher keeps more of a key's calls on one cache).
LOAD_BOUND = 1.5
_KEYS_KEPT = 4096  # prefix keys whose replicas are remembered (those of recent cases)


class Replica:
    """One base URL of a model, with its load and health."""

    __slots__ = ("base_url", "down_until", "failures", "in_flight", "seed")

    def __init__(self, base_url: str):
        self.base_url = base_url
        self.in_flight = 0
        self.failures = 0  # consecutive connection failures / timeouts
        self.down_until = 0.0  # time.monotonic() before which new calls go elsewhere
        # The replica's identity in the rendezvous hash: its URL, so that the same fleet
        # listed in another order (another shard's command line) ranks keys the same way.
        self.seed = hashlib.blake2b(base_url.encode("utf-8"), digest_size=16).digest()

    def failed(self) -> None:
        """An unreachable replica rests 1, 2, 4 ... 30 s, so calls stop paying its timeouts."""
        self.failures += 1
        self.down_until = time.monotonic() + min(30.0, 2.0 ** (self.failures - 1))

    def succeeded(self) -> None:
        self.failures = 0
        self.down_until = 0.0


def rendezvous_order(key: str, replicas: list[Replica]) -> list[Replica]:
    """`replicas` by their rendezvous score for `key`, best first (highest random weight)."""
    raw = key.encode("utf-8")

    def score(replica: Replica) -> bytes:
        return hashlib.blake2b(raw, digest_size=8, key=replica.seed).digest()

    return sorted(replicas, key=score, reverse=True)


class ReplicaSet:
    """The base URLs of one model, and the choice of one for each attempt."""

    def __init__(self, base_urls: tuple[str, ...], load_bound: float = LOAD_BOUND) -> None:
        self.replicas = [Replica(u) for u in base_urls]
        self.load_bound = load_bound
        self._rr = itertools.count()
        # prefix key -> the replicas that served it, first home first (least recently used
        # keys forgotten first: their cases are done)
        self._homes: OrderedDict[str, list[Replica]] = OrderedDict()

    def _usable(self, avoid: Replica | None) -> list[Replica]:
        """Replicas neither resting nor `avoid`; else not `avoid`; else all of them."""
        now = time.monotonic()
        replicas = self.replicas
        return (
            [r for r in replicas if r is not avoid and r.down_until <= now]
            or [r for r in replicas if r is not avoid]
            or replicas
        )

    def pick(self, avoid: Replica | None, prefix_key: str | None = None) -> Replica:
        """The replica for one attempt (see the module doc). Replicas resting after
        connection failures and the one this call just failed on are used only if nothing
        else is left."""
        replicas = self.replicas
        if len(replicas) == 1:
            return replicas[0]
        usable = self._usable(avoid)
        if prefix_key is None or len(usable) == 1:
            return self._least_in_flight(usable)
        # The fleet's mean load with this call placed.
        mean = (sum(r.in_flight for r in usable) + 1) / len(usable)
        homes = self._homes.get(prefix_key)
        if homes is None:
            if len(self._homes) >= _KEYS_KEPT:
                self._homes.popitem(last=False)
            homes = self._homes[prefix_key] = []
        else:
            self._homes.move_to_end(prefix_key)
            bound = math.ceil(self.load_bound * mean)
            for replica in homes:
                if replica.in_flight < bound and replica in usable:
                    return replica
        # A new home: the key's first replica in rendezvous order with room (at most the mean).
        room = math.ceil(mean)
        others = [r for r in usable if r not in homes] or usable
        ranked = rendezvous_order(prefix_key, others)
        chosen = next((r for r in ranked if r.in_flight < room), None)
        if chosen is None:
            chosen = self._least_in_flight(others)
        if chosen not in homes:
            homes.append(chosen)
        return chosen

    def _least_in_flight(self, usable: list[Replica]) -> Replica:
        start = next(self._rr) % len(usable)
        order = usable[start:] + usable[:start]
        return min(order, key=lambda r: r.in_flight)
