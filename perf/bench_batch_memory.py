"""Peak memory of reading a large batch output file: the `--batch-file-in` path (a file on
disk, clineval.models.batch.read_outputs) and the `--batch` path (a finished batch's output
file downloaded from the server, BatchChatModel._lines_of).

    .venv/bin/python -m perf.bench_batch_memory [--mb 300] [--content-chars 2000]

A synthetic output file (fixture data: `vllm run-batch`'s line format, one chat completion of
--content-chars ASCII characters per line, unique custom_ids) of about --mb MB is written to a
temporary directory; for the server path the stub server (tests/llm_stub_server.py, its own
process) holds it as an uploaded file. Each path is measured in a fresh child process: the
peak resident set size once the file is read (VmHWM, reset just before: Linux's clear_refs)
minus the resident set size just before (after the imports and the set of known request keys
were made). So the figure is what reading the file added at its peak, the parsed answers
included.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))


def _line(n: int, content: str) -> bytes:
    key = f"{n:064x}"
    reply = {
        "id": f"chatcmpl-fixture-{n}",
        "object": "chat.completion",
        "created": 0,
        "model": "fixture",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 500, "completion_tokens": 400, "total_tokens": 900},
    }
    row = {
        "id": f"batch_req_{n}",
        "custom_id": key,
        "response": {"status_code": 200, "request_id": f"req_{n}", "body": reply},
        "error": None,
    }
    return json.dumps(row).encode() + b"\n"


def write_output_file(path: Path, megabytes: float, content_chars: int) -> int:
    """A synthetic output file of about `megabytes` MB; returns its number of lines."""
    words = "synthetic fixture answer about a patient with chest pain and a normal ECG "
    content = (words * (content_chars // len(words) + 1))[:content_chars]
    target = int(megabytes * 1024 * 1024)
    size = lines = 0
    with open(path, "wb") as fh:
        while size < target:
            raw = _line(lines, content)
            fh.write(raw)
            size += len(raw)
            lines += 1
    return lines


def _status_kb(field: str) -> int:
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def _start_measure() -> int:
    """The resident set size now, with the peak reset to it (Linux: clear_refs 5), so that
    the peak read later is this step's own, not an earlier one's (the imports')."""
    with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
        fh.write("5")
    return _status_kb("VmRSS")


def _added_mb(start_kb: int) -> float:
    return (_status_kb("VmHWM") - start_kb) / 1024


def child_file(path: str, lines: int) -> None:
    from clineval.models.batch_lines import read_outputs

    known = {f"{n:064x}" for n in range(lines)}
    start = _start_measure()
    started = time.perf_counter()
    outcomes = read_outputs([path], known)
    seconds = time.perf_counter() - started
    added = _added_mb(start)
    assert len(outcomes) == lines, len(outcomes)
    print(json.dumps({"added_mb": added, "seconds": seconds}))


def child_server(base_url: str, file_id: str, lines: int, store_dir: str) -> None:
    from clineval.concurrency import RunCallState
    from clineval.models.batch import BatchChatModel, BatchSettings
    from clineval.models.batch_client import BatchClient
    from clineval.retry import RetryPolicy
    from clineval.store import RunStore

    keys = [f"{n:064x}" for n in range(lines)]

    async def main() -> tuple[int, float, float]:
        policy = RetryPolicy(0, 0.1, 0.1)
        client = BatchClient(base_url, None, policy, 600.0)
        store = RunStore.in_dir(store_dir)
        model = BatchChatModel(
            label="openai:fixture",
            model_name="fixture",
            role="candidate",
            store=store,
            state=RunCallState(1),
            body_of=lambda request: {},
            client=client,
            settings=BatchSettings(),
            policy=policy,
        )
        batch = {"id": "batch_fixture", "status": "completed", "output_file_id": file_id}
        # the keys of the batch's record, where this revision's reader takes them
        takes_keys = len(inspect.signature(model._lines_of).parameters) > 1
        args = (batch, set(keys)) if takes_keys else (batch,)
        start = _start_measure()
        started = time.perf_counter()
        outcomes = await model._lines_of(*args)  # type: ignore[arg-type]
        seconds = time.perf_counter() - started
        added = _added_mb(start)
        await client.aclose()
        store.close()
        return len(outcomes), added, seconds

    count, added, seconds = asyncio.run(main())
    assert count == lines, count
    print(json.dumps({"added_mb": added, "seconds": seconds}))


def _upload(base_url: str, path: Path) -> str:
    boundary = "fixture-boundary"
    body = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n'
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="out.jsonl"\r\n'
        "Content-Type: application/jsonl\r\n\r\n"
    ).encode()
    body += path.read_bytes() + f"\r\n--{boundary}--\r\n".encode()
    request = urllib.request.Request(
        base_url + "/files",
        data=body,
        headers={"Content-Type": f"multipart/form-data; boundary={boundary}"},
    )
    with urllib.request.urlopen(request, timeout=600) as reply:
        return str(json.loads(reply.read())["id"])


def _run_child(*args: str) -> dict[str, float]:
    import clineval

    # the child imports the clineval this process imported (and the stub beside its tests)
    paths = [str(Path(clineval.__file__).resolve().parent.parent), *sys.path]
    out = subprocess.run(
        [sys.executable, __file__, "--child", *args],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": os.pathsep.join(paths)},
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=float, default=300.0)
    parser.add_argument("--content-chars", type=int, default=2000)
    parser.add_argument("--child", nargs="+")
    args = parser.parse_args()
    if args.child:
        kind, *rest = args.child
        if kind == "file":
            child_file(rest[0], int(rest[1]))
        else:
            child_server(rest[0], rest[1], int(rest[2]), rest[3])
        return
    from llm_stub_server import StubServer

    import clineval

    print("clineval from", clineval.__file__)
    with tempfile.TemporaryDirectory(prefix="bench-batch-memory-") as tmp:
        path = Path(tmp) / "output.jsonl"
        lines = write_output_file(path, args.mb, args.content_chars)
        size_mb = path.stat().st_size / 1024 / 1024
        print(f"synthetic output file: {size_mb:.1f} MB, {lines:,} lines")
        found = _run_child("file", str(path), str(lines))
        print(
            f"--batch-file-in (read_outputs): +{found['added_mb']:.0f} MB peak, "
            f"{found['seconds']:.1f} s"
        )
        with StubServer() as stub:
            file_id = _upload(stub.base_url, path)
            found = _run_child("server", stub.base_url, file_id, str(lines), tmp)
        print(
            f"--batch (BatchChatModel._lines_of, download + parse): "
            f"+{found['added_mb']:.0f} MB peak, {found['seconds']:.1f} s"
        )


if __name__ == "__main__":
    main()
