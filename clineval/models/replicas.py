"""The replicas (base URLs) of one model and which one a call goes to.

A call without a prefix key goes to the replica with the fewest requests in flight (ties
round-robin). A call with a prefix key (e.g. the ClinConsensus judge calls of one case and
answer, which share everything but the criterion) goes where the key's earlier calls went, so
that the server computes the shared prefix once and reuses it (llama.cpp per slot, vLLM /
SGLang prefix caches): a case's prefix is computed on one replica of the fleet instead of on
every replica.

Placement by active keys, with memory. The calls of one key run one after another (a case's
judge calls: about one in flight each), so the load that matters is how many keys a replica is
serving now, not how many requests it has in flight this instant. A key is active while one
of its calls is in the model (waiting for a slot, on the wire, or between retries: `begin` /
`end`). A key's first call goes to the replica with the fewest active keys; ties go to the
first in the key's rendezvous order (hashing, so that two processes with the same fleet break
them alike, whatever order the URLs were listed in). The key then stays there, also after a
pause, and moves only when its replica fails: resting after a connection failure or timeout,
or the replica this call just failed on; it moves to the live replica with the fewest active
keys and stays at its new home. Never by load: a move recomputes the key's prefix elsewhere.

The placement it replaced (rendezvous order with a bound on requests in flight, 1.5x the
mean) was lumpy with few keys per replica: with 4 replicas and 12 cases one replica got 25
calls of 360 and another 130, and the fleet computed 1.2-1.35x the minimum prompt tokens
(perf/bench_prefix_affinity_llamacpp.py, BENCHMARKS.md).

A replica that failed to connect (or timed out) rests a while (1, 2, 4 ... 30 s); calls go
elsewhere unless nothing else is left.
"""

from __future__ import annotations

import hashlib
import itertools
import time
from collections import OrderedDict

_KEYS_KEPT = 4096  # homes of inactive prefix keys remembered (those of recent cases)


class Replica:
    """One base URL of a model, with its load and health."""

    __slots__ = ("active_keys", "base_url", "down_until", "failures", "in_flight", "seed")

    def __init__(self, base_url: str):
        self.base_url = base_url
        self.in_flight = 0
        self.active_keys = 0  # prefix keys homed here with a call in the model
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

    def __init__(self, base_urls: tuple[str, ...]) -> None:
        self.replicas = [Replica(u) for u in base_urls]
        self._rr = itertools.count()
        # prefix key -> its home (least recently used first: inactive ones are forgotten
        # first, their cases are done)
        self._homes: OrderedDict[str, Replica] = OrderedDict()
        self._active: dict[str, int] = {}  # prefix key -> its calls in the model now

    # -- which keys are active ---------------------------------------------------------------
    def begin(self, prefix_key: str | None) -> None:
        """A call of `prefix_key` entered the model (before it waits for a slot)."""
        if prefix_key is None:
            return
        calls = self._active.get(prefix_key, 0)
        self._active[prefix_key] = calls + 1
        if calls == 0 and (home := self._homes.get(prefix_key)) is not None:
            home.active_keys += 1

    def end(self, prefix_key: str | None) -> None:
        """That call left the model (answered, failed or cancelled)."""
        if prefix_key is None:
            return
        calls = self._active.pop(prefix_key) - 1
        if calls:
            self._active[prefix_key] = calls
        elif (home := self._homes.get(prefix_key)) is not None:
            home.active_keys -= 1

    def active_keys(self) -> dict[str, int]:
        """Base URL -> prefix keys active there (progress, tests, benchmarks)."""
        return {r.base_url: r.active_keys for r in self.replicas}

    # -- the choice ----------------------------------------------------------------------------
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
        if prefix_key is None:
            return self._least_in_flight(usable)
        home = self._homes.get(prefix_key)
        if home is not None:
            self._homes.move_to_end(prefix_key)
            if home in usable:
                return home
        # A new home (a new key, or its home failed): the fewest active keys, hash order
        # breaking ties.
        ranked = rendezvous_order(prefix_key, usable)
        chosen = min(ranked, key=lambda r: r.active_keys)  # min keeps the first of equals
        self._set_home(prefix_key, home, chosen)
        return chosen

    def _set_home(self, key: str, old: Replica | None, new: Replica) -> None:
        if self._active.get(key):
            if old is not None:
                old.active_keys -= 1
            new.active_keys += 1
        if old is None and len(self._homes) >= _KEYS_KEPT:
            self._forget_one()
        self._homes[key] = new

    def _forget_one(self) -> None:
        """Forget the least recently used key that has no call in the model."""
        for key in self._homes:
            if not self._active.get(key):
                del self._homes[key]
                return

    def _least_in_flight(self, usable: list[Replica]) -> Replica:
        start = next(self._rr) % len(usable)
        order = usable[start:] + usable[:start]
        return min(order, key=lambda r: r.in_flight)
