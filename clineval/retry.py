"""One retry policy for everything clineval retries (model calls, data downloads).

Bounded: at most `max_retries` more attempts after the first, and no single wait longer than
`max_retry_after_s` (plus jitter), so a throttling server cannot park a run for hours.

Why not tenacity or stamina: the loops that use this policy hold a concurrency slot only while
a request is on the wire and move to another replica between attempts, which a decorator or a
retry context does not express without extra state; and measured on the success path (the one
that matters at 27,000 judge calls) tenacity's AsyncRetrying costs ~26 us per call and
stamina's retry_context ~31 us, against ~0.1 us for a plain loop over this policy, i.e. +8% on
the ~330 us of client CPU a whole judge call costs (`python -m perf.bench_retry_overhead`,
BENCHMARKS.md).
"""

from __future__ import annotations

import email.utils
import random
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded retries: at most `max_retries` more attempts after the first one.

    No wait is longer than `max_retry_after_s` (plus its jitter): a Retry-After above it is
    cut to it, so one throttling server cannot park a call (and a run) for hours; the retry
    that follows is counted like any other.
    """

    max_retries: int = 5
    base_delay_s: float = 0.5
    max_delay_s: float = 30.0
    # A server may ask for a long pause; longer than this and we wait only this long.
    max_retry_after_s: float = 120.0

    def delay(self, retry_index: int, retry_after: float | None, rng: random.Random) -> float:
        """Seconds to wait before retry number `retry_index` (0-based).

        Without Retry-After: "equal jitter" exponential backoff, uniform in [b/2, b] with
        b = min(max_delay, base * 2**i): never zero, and spread so that many calls failing
        together do not come back together. With Retry-After: at least what the server asked,
        plus up to 10% so a crowd of throttled calls does not return in one burst.
        """
        if retry_after is not None:
            wait = min(max(retry_after, 0.0), self.max_retry_after_s)
            return wait * (1.0 + 0.1 * rng.random())
        ceiling = min(self.max_delay_s, self.base_delay_s * (2.0**retry_index))
        return ceiling * (0.5 + 0.5 * rng.random())


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Retry-After as seconds: a number of seconds or an HTTP date; None if absent/garbled."""
    if value is None:
        return None
    text = value.strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))
