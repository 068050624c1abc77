"""Prefix affinity in a simulated fleet: prefill work and load spread, no servers.

    .venv/bin/python -m perf.bench_prefix_affinity_sim [--replicas 16]
        [--concurrency 256] [--cases 900] [--criteria 30] [--answer-chars 2000]
        [--cache-tokens 65536] [--seed 0] [--runs 0]

The judge calls of a ClinConsensus run (N cases x M criteria, the built-in judge prompt, synthetic
Chinese queries ~150-400 characters, answers around --answer-chars, criteria 15-60 characters)
go through clineval's own replica choice (clineval.models.replicas.ReplicaSet, the code a run
uses) to a fleet of simulated servers, --concurrency at a time, in the run's issue order
(clineval.benchmarks.judged_flow: a window of judging_window(concurrency) cases at once,
the window's cases in turn). Two
routings are compared: least-in-flight (no prefix key) and prefix affinity (the case's key).
Order matters too: the same calls with every case interleaved (what the run did before the
window: each case's calls spread over the whole run) are shown as well.

Each server is a vLLM-like prefix cache of bounded size: prompts are split into 16-token blocks;
a block's identity is its content and everything before it (the judge template's blocks are
shared by every case, a case's blocks by its calls, the criterion's tail by nobody); a new
call reuses the longest run of cached blocks from the start and computes the rest (its blocks
are cached as soon as it is scheduled, as vLLM does, so calls arriving together share them);
blocks of running calls are pinned, the others evicted least recently used when the cache
holds more than --cache-tokens. Tokens are estimated as clineval's --dry-run does
(clineval.plan.estimate_tokens: 1 per CJK character, 1 per 4 others).

Time: a call takes 20 ms + 0.1 ms per prefill token + 40 reply tokens at 15 ms each, the
decode slowed by (1 + calls in flight on that server / 64) (batching). Only the ratios matter.

Reported per routing: prefill tokens the servers computed, against the minimum (the same calls
sent to ONE server with an unbounded cache: every distinct block once, every call's own tail),
and against the issue's minimum (each case's shared prefix once plus every call's own suffix);
the load spread (max / mean calls per replica); simulated wall time.
"""

from __future__ import annotations

import argparse
import heapq
import random
import sys
from collections import OrderedDict
from dataclasses import dataclass

from clineval.benchmarks.clinconsensus.wording import builtin_prompt
from clineval.benchmarks.judged_flow import judging_window
from clineval.models.replicas import Replica, ReplicaSet
from clineval.plan import estimate_tokens

BLOCK = 16
REPLY_TOKENS = 40
FLOOR_PREFILL = 1.2  # affinity prefill / minimum, at most (issue 13)
FLOOR_SPREAD = 1.25  # max / mean calls per replica, at most
FLOOR_RUNS_PREFILL = 1.1  # --runs: affinity prefill / minimum in every run (issue 20)
FLOOR_RUNS_OFF_MEAN = 0.15  # --runs: every replica's calls within 15% of the mean

_HANZI = (
    "患者男性岁反复胸闷气短三年加重一周既往高血压病史建议完善心电图心肌酶谱超声检查必要时冠脉造影"
)


@dataclass(frozen=True)
class Call:
    case: int
    criterion: int
    template_tokens: int  # shared by every case (system text, rules)
    case_tokens: int  # shared by the case's calls (query, answer)
    own_tokens: int  # the criterion and what follows it

    @property
    def prompt_tokens(self) -> int:
        return self.template_tokens + self.case_tokens + self.own_tokens

    def blocks(self) -> list[tuple[int, ...]]:
        """Block identities of the prompt (a partial last block is never cached)."""
        out: list[tuple[int, ...]] = []
        shared = self.template_tokens + self.case_tokens
        for b in range(self.prompt_tokens // BLOCK):
            end = (b + 1) * BLOCK
            if end <= self.template_tokens:
                out.append((b,))
            elif end <= shared:
                out.append((b, self.case))
            else:
                out.append((b, self.case, self.criterion))
        return out


def _text(rng: random.Random, low: int, high: int) -> str:
    return "".join(rng.choice(_HANZI) for _ in range(rng.randint(low, high)))


def make_calls(n_cases: int, n_criteria: int, answer_chars: int, seed: int) -> list[list[Call]]:
    """Judge calls per case, token counts from the built-in judge prompt and synthetic text."""
    rng = random.Random(seed)
    prompt = builtin_prompt()
    system = estimate_tokens(prompt.system or "") + 4
    head, _, _ = prompt.template.partition("{query}")
    template = system + estimate_tokens(head) + 4
    cases = []
    for case in range(n_cases):
        query = _text(rng, 150, 400)
        answer = _text(rng, int(answer_chars * 0.75), int(answer_chars * 1.25))
        calls = []
        for k in range(n_criteria):
            user = prompt.messages(query, answer, _text(rng, 15, 60))[-1][1]
            total = system + estimate_tokens(user) + 4
            shared_user = user[: user.index("<criterion>")]
            case_tokens = system + estimate_tokens(shared_user) - template
            calls.append(Call(case, k, template, case_tokens, total - template - case_tokens))
        cases.append(calls)
    return cases


class Window:
    """The run's issue order (clineval.benchmarks.judged_flow): at most `size` cases
    judged at once, in case order, the calls of the cases in the window taken in turn
    (gather_bounded's FIFO budget). A case leaves the window when all its calls answered."""

    def __init__(self, cases: list[list[Call]], size: int) -> None:
        self.waiting = iter(cases)
        self.size = size
        self.active: list[int] = []  # cases in the window, in turn order
        self.unsent: dict[int, list[Call]] = {}
        self.open: dict[int, int] = {}  # case -> calls sent and not answered
        self.turn = 0

    def next_call(self) -> Call | None:
        while len(self.active) < self.size and (calls := next(self.waiting, None)) is not None:
            case = calls[0].case
            self.active.append(case)
            self.unsent[case], self.open[case] = list(calls), 0
        for step in range(len(self.active)):
            index = (self.turn + step) % len(self.active)
            case = self.active[index]
            if not self.unsent[case]:
                continue
            call = self.unsent[case].pop(0)
            self.open[case] += 1
            self.turn = index + 1
            return call
        return None

    def answered(self, call: Call) -> None:
        case = call.case
        self.open[case] -= 1
        if not self.open[case] and not self.unsent[case]:
            index = self.active.index(case)
            self.active.pop(index)
            if index < self.turn:
                self.turn -= 1
            del self.unsent[case], self.open[case]


class PrefixCache:
    """A vLLM-like block cache of bounded size (see the module doc)."""

    def __init__(self, capacity_tokens: int | None) -> None:
        self.capacity = None if capacity_tokens is None else capacity_tokens // BLOCK
        self.pinned: dict[tuple[int, ...], int] = {}
        self.free: OrderedDict[tuple[int, ...], None] = OrderedDict()  # LRU first

    def admit(self, call: Call) -> tuple[int, list[tuple[int, ...]]]:
        """(prefill tokens, the blocks pinned for the call)."""
        blocks = call.blocks()
        hit = 0
        for block in blocks:
            if block in self.pinned or block in self.free:
                hit += 1
            else:
                break
        for block in blocks:
            if block in self.free:
                del self.free[block]
                self.pinned[block] = 1
            else:
                self.pinned[block] = self.pinned.get(block, 0) + 1
        self._evict()
        return call.prompt_tokens - hit * BLOCK, blocks

    def release(self, blocks: list[tuple[int, ...]]) -> None:
        for block in blocks:
            left = self.pinned[block] - 1
            if left:
                self.pinned[block] = left
            else:
                del self.pinned[block]
                self.free[block] = None
        self._evict()

    def _evict(self) -> None:
        if self.capacity is None:
            return
        while self.free and len(self.pinned) + len(self.free) > self.capacity:
            self.free.popitem(last=False)


@dataclass
class Outcome:
    prefill: int
    calls_per_replica: list[int]
    wall_s: float

    @property
    def spread(self) -> float:
        mean = sum(self.calls_per_replica) / len(self.calls_per_replica)
        return max(self.calls_per_replica) / mean

    @property
    def off_mean(self) -> float:
        """The largest distance of a replica's calls from the mean, relative to the mean."""
        mean = sum(self.calls_per_replica) / len(self.calls_per_replica)
        return max(abs(c - mean) for c in self.calls_per_replica) / mean


def simulate(
    cases: list[list[Call]],
    *,
    replicas: int,
    concurrency: int,
    cache_tokens: int | None,
    affinity: bool,
    window: int,
    jitter: random.Random | None = None,
) -> Outcome:
    fleet = ReplicaSet(tuple(f"http://replica-{i}.invalid:8000/v1" for i in range(replicas)))
    caches = {id(r): PrefixCache(cache_tokens) for r in fleet.replicas}
    served = {id(r): 0 for r in fleet.replicas}
    order = Window(cases, window)
    events: list[tuple[float, int, Call, Replica, list[tuple[int, ...]]]] = []
    now, prefill, seq = 0.0, 0, 0

    def fill() -> None:
        nonlocal prefill, seq
        while len(events) < concurrency and (call := order.next_call()) is not None:
            key = f"case-{call.case}" if affinity else None
            fleet.begin(key)  # the call enters the model (HTTPChatModel._complete)
            replica = fleet.pick(None, key)
            replica.in_flight += 1
            served[id(replica)] += 1
            computed, blocks = caches[id(replica)].admit(call)
            prefill += computed
            decode = REPLY_TOKENS * 0.015 * (1 + replica.in_flight / 64)
            seq += 1
            service = 0.02 + computed * 1e-4 + decode
            if jitter is not None:  # a run's own timing: servers are never exactly alike
                service *= jitter.uniform(0.5, 1.5)
            done_at = now + service
            heapq.heappush(events, (done_at, seq, call, replica, blocks))

    fill()
    while events:
        now, _, call, replica, blocks = heapq.heappop(events)
        replica.in_flight -= 1
        fleet.end(f"case-{call.case}" if affinity else None)
        caches[id(replica)].release(blocks)
        order.answered(call)
        fill()
    return Outcome(prefill, [served[id(r)] for r in fleet.replicas], now)


def minima(cases: list[list[Call]]) -> tuple[int, int]:
    """(one unbounded cache, the issue's minimum: each case's prefix once + every suffix)."""
    one = simulate(
        cases,
        replicas=1,
        concurrency=1,
        cache_tokens=None,
        affinity=False,
        window=1,
    ).prefill
    issue = sum(
        calls[0].template_tokens + calls[0].case_tokens + sum(c.own_tokens for c in calls)
        for calls in cases
    )
    return one, issue


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicas", type=int, default=16)
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--cases", type=int, default=900)
    parser.add_argument("--criteria", type=int, default=30)
    parser.add_argument("--answer-chars", type=int, default=2000)
    parser.add_argument("--cache-tokens", type=int, default=65536)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--runs", type=int, default=0, help="jittered runs (0: none)")
    args = parser.parse_args(argv)

    cases = make_calls(args.cases, args.criteria, args.answer_chars, args.seed)
    calls = sum(len(c) for c in cases)
    tokens = sum(c.prompt_tokens for cc in cases for c in cc)
    one, issue_min = minima(cases)
    print(
        f"{args.cases} cases x {args.criteria} criteria = {calls:,} judge calls, "
        f"{tokens:,} prompt tokens ({tokens / calls:,.0f} a call; case prefix "
        f"~{sum(cc[0].template_tokens + cc[0].case_tokens for cc in cases) / len(cases):,.0f}); "
        f"{args.replicas} replicas, concurrency {args.concurrency}, "
        f"cache {args.cache_tokens:,} tokens a replica"
    )
    print(f"minimum prefill: {one:,} (one unbounded cache), {issue_min:,} (issue's definition)")
    print(
        f"{'routing':<18} {'issue order':<24} {'prefill':>12} {'x min':>6} {'x issue min':>11} "
        f"{'max/mean calls':>14} {'wall (sim s)':>12}"
    )
    ok = True
    run_window = judging_window(args.concurrency)
    orders = {f"run order (window {run_window})": run_window, "all cases interleaved": len(cases)}
    for order, window in orders.items():
        for affinity in (False, True):
            out = simulate(
                cases,
                replicas=args.replicas,
                concurrency=args.concurrency,
                cache_tokens=args.cache_tokens,
                affinity=affinity,
                window=window,
            )
            routing = "prefix affinity" if affinity else "least-in-flight"
            print(
                f"{routing:<18} {order:<24} {out.prefill:>12,} {out.prefill / one:>6.2f} "
                f"{out.prefill / issue_min:>11.2f} {out.spread:>14.3f} {out.wall_s:>12.1f}"
            )
            if affinity and window == run_window:
                ok = out.prefill <= FLOOR_PREFILL * one and out.spread <= FLOOR_SPREAD
    print(
        f"floors (affinity, run order): prefill <= {FLOOR_PREFILL} x min, "
        f"max/mean <= {FLOOR_SPREAD}: {'met' if ok else 'NOT MET'}"
    )
    if args.runs:
        ok = jittered_runs(cases, args, one) and ok
    return 0 if ok else 1


def jittered_runs(cases: list[list[Call]], args: argparse.Namespace, one: int) -> bool:
    """--runs N: the run order again, each call's time drawn from 0.5-1.5x its own, a new
    draw per run (real servers never time alike): the placement must hold in every run."""
    print(f"{args.runs} runs with jittered call times (run order), the worst quoted:")
    print(f"{'routing':<18} {'x min (each run)':<40} {'worst':>6} {'calls off the mean':>18}")
    ok = True
    for affinity in (False, True):
        ratios, offs = [], []
        for run in range(args.runs):
            out = simulate(
                cases,
                replicas=args.replicas,
                concurrency=args.concurrency,
                cache_tokens=args.cache_tokens,
                affinity=affinity,
                window=judging_window(args.concurrency),
                jitter=random.Random(1000 + run),
            )
            ratios.append(out.prefill / one)
            offs.append(out.off_mean)
        routing = "prefix affinity" if affinity else "least-in-flight"
        each = " ".join(f"{r:.2f}" for r in ratios)
        print(f"{routing:<18} {each:<40} {max(ratios):>6.2f} {max(offs):>17.1%}")
        if affinity:
            ok = max(ratios) <= FLOOR_RUNS_PREFILL and max(offs) <= FLOOR_RUNS_OFF_MEAN
    print(
        f"floors (affinity, every run): prefill <= {FLOOR_RUNS_PREFILL} x min, every replica "
        f"within {FLOOR_RUNS_OFF_MEAN:.0%} of the mean calls: {'met' if ok else 'NOT MET'}"
    )
    return ok


if __name__ == "__main__":
    sys.exit(main())
