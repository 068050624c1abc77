"""Batch mode vs synchronous: the ClinConsensus fixture against the same local server.

    .venv/bin/python -m perf.bench_batch [--criteria 30] [--concurrency 32] [--repeats 3]

One stub server (tests/llm_stub_server.py, its own process) answers /v1/chat/completions and
the Batch API (/v1/files + /v1/batches) with the same reply function. The 12 fixture cases x
--criteria run three ways, each into a fresh run directory, --repeats times in turns:
  1. synchronous: `clineval run clinconsensus` as it ships;
  2. --batch: two rounds (answers, then judge calls), polls every 0.05-0.2 s (the stub moves
     a batch one status further at each look);
  3. offline files: --batch-file-out, then the outputs written as `vllm run-batch` would
     write them (the stub's reply function), imported with --batch-file-in (two rounds).
Reported: whether the results (metrics, samples and every stored answer) are equal to the
synchronous run's; the HTTP requests the server received and the request bytes (bodies) it
read; the cost of the stored calls at list prices and at batch prices (an illustrative price
table: 2.50 / 10.00 per million input / output tokens, batch_discount 0.5); the client's CPU
seconds (this process: the run in-process, the server apart). Wall time is shown but means
little: a real batch takes minutes to hours, and here the polls set it.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from llm_stub_server import StubServer, completion, request_key

from clineval.benchmarks.clinconsensus.cases import fixture_path
from clineval.cli import main as cli_main
from clineval.store import RunStore

PRICES = {
    "cand": {"input_per_1m": 2.5, "output_per_1m": 10.0, "batch_discount": 0.5},
    "judge": {"input_per_1m": 2.5, "output_per_1m": 10.0, "batch_discount": 0.5},
}
POLL = ["--option", "llm.batch_poll_s=0.05", "--option", "llm.batch_poll_max_s=0.2"]


def _argv(stub: StubServer, out: Path, args: argparse.Namespace, prices: Path) -> list[str]:
    return [
        "--quiet",
        "run",
        "clinconsensus",
        "--model",
        f"openai:cand@{stub.base_url}",
        "--judge",
        f"openai:judge@{stub.base_url}",
        "--cases",
        str(fixture_path()),
        "--option",
        f"clinconsensus.max_criteria={args.criteria}",
        "--concurrency",
        str(args.concurrency),
        "--price-table",
        str(prices),
        "--output-dir",
        str(out),
    ]


def vllm_run_batch(request_file: Path, output_file: Path) -> None:
    """The output `vllm run-batch -i REQUEST -o OUTPUT` writes, with the stub's replies."""
    rows = []
    for n, raw in enumerate(request_file.read_text().splitlines(), start=1):
        line = json.loads(raw)
        body = line["body"]
        reply = completion(body, request_key(body), None)
        response = {"status_code": 200, "request_id": f"vllm-batch-{n}", "body": reply}
        rows.append({"id": f"vllm-{n}", "custom_id": line["custom_id"], "response": response})
    output_file.write_text("".join(json.dumps({**r, "error": None}) + "\n" for r in rows))


def _call(argv: list[str]) -> int:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return cli_main(argv)


def run_once(
    way: str, stub: StubServer, out: Path, args: argparse.Namespace, prices: Path
) -> dict[str, Any]:
    stub.reset()
    argv = _argv(stub, out, args, prices)
    cpu, wall = time.process_time(), time.perf_counter()
    if way == "synchronous":
        code = _call(argv)
    elif way == "--batch":
        code = _call([*argv, "--batch", *POLL])
    else:
        requests, outputs = out.parent / f"{out.name}-req", out.parent / f"{out.name}-out"
        outputs.mkdir()
        imported: list[tuple[Path, Path]] = []
        code = _call([*argv, "--batch-file-out", str(requests)])
        for _ in range(4):  # rounds: answers, judge calls (and re-asks, if any)
            new = sorted(set(requests.glob("*.jsonl")) - {p for p, _ in imported})
            if not new:
                break
            for path in new:
                output = outputs / path.name
                vllm_run_batch(path, output)
                imported.append((path, output))
            files = [arg for _, o in imported for arg in ("--batch-file-in", str(o))]
            code = _call([*argv, *files, "--batch-file-out", str(requests)])
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    if code != 0:
        raise SystemExit(f"{way}: exit {code}")
    stats = stub.stats()
    usage = json.loads((out / "manifest.json").read_text())["llm_usage"]
    return {
        "http_requests": stats["requests"] + stats["batch_api_requests"],
        "bytes_in": stats["bytes_in"],
        "calls": usage["calls"],
        "batch_calls": usage["batch_calls"],
        "cost": usage["estimated_cost"],
        "cost_list": usage["estimated_cost_list"],
        "cpu_s": cpu,
        "wall_s": wall,
    }


def _results(out: Path) -> tuple[Any, ...]:
    metrics = json.loads((out / "results.json").read_text())["clinconsensus"]
    metrics.pop("usage")
    samples = sorted((out / "samples.jsonl").read_text().splitlines())
    with RunStore.in_dir(out) as store:
        answers = {c["key"]: c["response"]["text"] for c in store.iter_calls()}
    return metrics, samples, answers


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--criteria", type=int, default=30)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    ways = ("synchronous", "--batch", "offline files")
    rows: dict[str, list[dict[str, Any]]] = {w: [] for w in ways}
    equal = True
    with tempfile.TemporaryDirectory(prefix="bench-batch-") as tmp, StubServer() as stub:
        prices = Path(tmp) / "prices.json"
        prices.write_text(json.dumps(PRICES))
        for repeat in range(args.repeats):
            outs = {}
            for way in ways:
                out = Path(tmp) / f"{way.strip('-').replace(' ', '-')}-{repeat}"
                rows[way].append(run_once(way, stub, out, args, prices))
                outs[way] = out
            reference = _results(outs["synchronous"])
            equal = equal and all(_results(outs[w]) == reference for w in ways[1:])
    first = rows["synchronous"][0]
    print(
        f"ClinConsensus fixture: 12 cases x {args.criteria} criteria = {first['calls']} calls, "
        f"concurrency {args.concurrency}, {args.repeats} repeats (medians)"
    )
    print(
        f"{'way':<14} {'HTTP requests':>13} {'bytes sent':>11} {'batch calls':>11} "
        f"{'cost (list)':>11} {'cost (batch)':>12} {'client CPU s':>12} {'wall s':>7}"
    )

    def median(way: str, key: str) -> float:
        values = sorted(r[key] for r in rows[way])
        return float(values[len(values) // 2])

    for way in ways:
        print(
            f"{way:<14} {median(way, 'http_requests'):>13,.0f} {median(way, 'bytes_in'):>11,.0f} "
            f"{median(way, 'batch_calls'):>11,.0f} {median(way, 'cost_list'):>11.4f} "
            f"{median(way, 'cost'):>12.4f} {median(way, 'cpu_s'):>12.2f} "
            f"{median(way, 'wall_s'):>7.2f}"
        )
    print(f"results equal to the synchronous run's (metrics, samples, stored answers): {equal}")
    return 0 if equal else 1


if __name__ == "__main__":
    sys.exit(main())
