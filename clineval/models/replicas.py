"""The replicas (base URLs) of one model and which one a call goes to: the fewest requests in
flight, ties round-robin; a replica that failed to connect rests a while (1, 2, 4 ... 30 s)."""

from __future__ import annotations

import itertools
import time


class Replica:
    """One base URL of a model, with its load and health."""

    __slots__ = ("base_url", "down_until", "failures", "in_flight")

    def __init__(self, base_url: str):
        self.base_url = base_url
        self.in_flight = 0
        self.failures = 0  # consecutive connection failures / timeouts
        self.down_until = 0.0  # time.monotonic() before which new calls go elsewhere

    def failed(self) -> None:
        """An unreachable replica rests 1, 2, 4 ... 30 s, so calls stop paying its timeouts."""
        self.failures += 1
        self.down_until = time.monotonic() + min(30.0, 2.0 ** (self.failures - 1))

    def succeeded(self) -> None:
        self.failures = 0
        self.down_until = 0.0


class ReplicaSet:
    """The base URLs of one model, and the choice of one for each attempt."""

    def __init__(self, base_urls: tuple[str, ...]) -> None:
        self.replicas = [Replica(u) for u in base_urls]
        self._rr = itertools.count()

    def pick(self, avoid: Replica | None) -> Replica:
        """Fewest requests in flight, ties round-robin; replicas resting after connection
        failures and the one this call just failed on are used only if nothing else is left."""
        replicas = self.replicas
        if len(replicas) == 1:
            return replicas[0]
        start = next(self._rr) % len(replicas)
        order = replicas[start:] + replicas[:start]
        now = time.monotonic()
        candidates = [r for r in order if r is not avoid and r.down_until <= now]
        candidates = candidates or [r for r in order if r is not avoid] or order
        return min(candidates, key=lambda r: r.in_flight)
