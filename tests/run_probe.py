"""Reading a run directory from a test while (or after) a real `clineval run` writes it, and
making the small input files several tests need. Shared so each test states only its point."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

from llm_stub_server import request_key

from clineval.benchmarks.clinconsensus.cases import fixture_path
from clineval.models.spec import ModelSpec


def count_stored_calls(store_path: Path) -> int:
    """Model calls in a run store, read-only beside a live writer; 0 before it has a schema."""
    if not store_path.exists():
        return 0
    try:
        conn = sqlite3.connect(f"file:{store_path}?mode=ro", uri=True, timeout=5)
        try:
            return int(conn.execute("SELECT COUNT(*) FROM calls").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.OperationalError:  # the schema is not there yet
        return 0


def stored_stub_keys(store_path: Path) -> list[str]:
    """The stub server's key (tests/llm_stub_server.py) of every call in a run store."""
    conn = sqlite3.connect(f"file:{store_path}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT request FROM calls").fetchall()
    finally:
        conn.close()
    keys = []
    for (raw,) in rows:
        request = json.loads(raw)
        body = {
            "model": ModelSpec.parse(request["model"]).name,
            "messages": [{"role": r, "content": c} for r, c in request["messages"]],
            "response_format": request["response_format"],
        }
        keys.append(request_key(body))
    return keys


def kill_once_stored(
    argv: list[str], env: dict[str, str], store_path: Path, calls: int
) -> list[str]:
    """Start the command `argv`, SIGKILL it once its run store holds `calls` model calls (it
    must still be running then), and return the stub keys of the calls it had stored."""
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while count_stored_calls(store_path) < calls and time.monotonic() < deadline:
        assert proc.poll() is None, "the run finished before it could be stopped"
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)  # reaps it and closes the stderr pipe
    return stored_stub_keys(store_path)


def write_fixture_verdicts(path: Path, cases: int, met: bool = True) -> Path:
    """A verdicts file for the first `cases` ClinConsensus fixture cases, every criterion
    `met` (so rubric accuracy is 1.0 or 0.0: known without running clineval)."""
    lines = fixture_path().read_text(encoding="utf-8").splitlines()[:cases]
    rows = []
    for line in lines:
        case = json.loads(line)
        for criterion in case["rubrics"]:
            row = {"case_id": case["case_id"], "criterion_id": criterion["criterion_id"]}
            rows.append(json.dumps({**row, "criteria_met": met}) + "\n")
    path.write_text("".join(rows), encoding="utf-8")
    return path
