"""What an OpenAI-compatible server says about how many requests it serves at once.

`--concurrency` is how many calls clineval keeps in flight. A server that decodes fewer at
once queues the rest, and a queued request's time counts against `--timeout`: with 16 calls
in flight and llama.cpp's 2 slots, the queued ones time out and are sent again while the server
still computes the abandoned ones (issue 18: `retries 32` within 7 minutes). Before the first
call clineval asks each base URL, best effort and briefly (a server that does not answer is
simply not described):

- llama.cpp: `GET /props` -> `total_slots`, else `GET /slots` (one entry per slot);
- vLLM: `GET /metrics` -> `vllm:num_requests_waiting` (requests it already queues) and the
  KV cache's size in tokens (`vllm:cache_config_info`: `num_gpu_blocks` x `block_size`).

and prints one warning line when the concurrency cannot be served. Nothing is refused: the
server's own limits are its business, and a fleet behind a load balancer reports one member.
"""

from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import dataclass
from typing import Any

from clineval.jsonio import parse_json
from clineval.models.http_errors import safe_host

log = logging.getLogger("clineval")
PROBE_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class Capacity:
    """What one server said about itself (None: it did not say)."""

    slots: int | None = None  # requests decoded at once (llama.cpp)
    waiting: int | None = None  # requests queued right now (vLLM)
    kv_tokens: int | None = None  # KV-cache size in tokens (vLLM)
    source: str = ""  # the endpoint it came from, for the message


def server_root(base_url: str) -> str:
    """The server's root: the base URL without a trailing /v1 (where /props and /metrics are)."""
    root = base_url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


_LABEL = re.compile(r'(\w+)="([^"]*)"')


def parse_vllm_metrics(text: str) -> Capacity | None:
    """vLLM's queue and KV-cache size from its Prometheus text; None when it is not vLLM's."""
    waiting: float | None = None
    kv: int | None = None
    for line in text.splitlines():
        if line.startswith("vllm:num_requests_waiting"):
            try:
                waiting = (waiting or 0.0) + float(line.rsplit(None, 1)[-1])
            except ValueError:
                continue
        elif line.startswith("vllm:cache_config_info{"):
            labels = dict(_LABEL.findall(line))
            blocks, size = labels.get("num_gpu_blocks"), labels.get("block_size")
            if blocks and size and blocks.isdigit() and size.isdigit():
                kv = int(blocks) * int(size)
    if waiting is None and kv is None:
        return None
    return Capacity(
        waiting=None if waiting is None else int(waiting), kv_tokens=kv, source="/metrics"
    )


def parse_llamacpp(props: Any, slots: Any) -> Capacity | None:
    """llama.cpp's slot count from /props (`total_slots`) or /slots (a list)."""
    if isinstance(props, dict):
        total = props.get("total_slots")
        if isinstance(total, int) and not isinstance(total, bool) and total > 0:
            return Capacity(slots=total, source="/props")
    if isinstance(slots, list) and slots:
        return Capacity(slots=len(slots), source="/slots")
    return None


async def probe(base_url: str, api_key: str | None) -> Capacity | None:
    """What the server at `base_url` says of its capacity, or None (never raises)."""
    import aiohttp

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    root = server_root(base_url)
    timeout = aiohttp.ClientTimeout(total=PROBE_TIMEOUT_S)

    async def get(session: Any, path: str) -> tuple[int, str]:
        try:
            async with session.get(root + path) as resp:
                return resp.status, (await resp.text())[:1_000_000]
        except (aiohttp.ClientError, OSError, TimeoutError, UnicodeDecodeError):
            return 0, ""

    found: Capacity | None = None
    try:  # one deadline for the whole probe: a server that accepts and never answers costs 2 s
        async with (
            asyncio.timeout(PROBE_TIMEOUT_S),
            aiohttp.ClientSession(headers=headers, timeout=timeout) as session,
        ):
            status, text = await get(session, "/props")
            found = parse_llamacpp(_json(text) if status == 200 else None, None)
            if found is None:
                status, text = await get(session, "/slots")
                found = parse_llamacpp(None, _json(text) if status == 200 else None)
            if found is None:
                status, text = await get(session, "/metrics")
                found = parse_vllm_metrics(text) if status == 200 else None
    except TimeoutError:
        return None
    return found


def _json(text: str) -> Any:
    try:
        return parse_json(text)
    except ValueError:
        return None


def capacity_warnings(
    capacities: dict[str, Capacity | None], concurrency: int, timeout_s: float
) -> list[str]:
    """The warning lines for servers that cannot serve `concurrency` calls at once."""
    described = {url: c for url, c in capacities.items() if c is not None}
    out: list[str] = []
    slots = [c.slots for c in described.values() if c.slots is not None]
    if slots and len(slots) == len(capacities) and concurrency > sum(slots):
        hosts = ", ".join(safe_host(u) for u in described)
        out.append(
            f"warning: --concurrency {concurrency} but {hosts} decode(s) {sum(slots)} "
            f"request(s) at once ({described[next(iter(described))].source}): the rest queue "
            f"in the server and their wait counts against --timeout {timeout_s:g}; use "
            f"--concurrency {sum(slots)} (or start the server with more slots)"
        )
    for url, c in described.items():
        if c.waiting:
            out.append(
                f"warning: {safe_host(url)} already queues {c.waiting} request(s) "
                f"(vllm:num_requests_waiting): calls will wait there, counted against --timeout"
            )
    return out


async def warn_unservable_concurrency(
    urls: tuple[str, ...], api_key: str | None, concurrency: int, timeout_s: float
) -> None:
    """Probe every base URL (at once, briefly) and log a warning per problem found."""
    found = await asyncio.gather(*(probe(u, api_key) for u in urls))
    for line in capacity_warnings(dict(zip(urls, found, strict=True)), concurrency, timeout_s):
        log.warning("%s", line)
