"""`clineval data fetch healthbench` and `--judge-prompt official`, from local HTTP servers.

The data files served are the FIXTURE in the authors' layout; no public source states their
hash, so the first fetch records its digest and later fetches are checked against it. The
grader script served is synthetic (a GRADER_TEMPLATE of the authors' shape, in our own words);
the pin is stubbed to its sha256, as the authors' own file is never shipped or fetched here.
"""

from __future__ import annotations

import hashlib
import json
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from openai_recorder import RecordingServer
from route_mirror import Route, Serve

from clineval.benchmarks.healthbench import data, official
from clineval.benchmarks.healthbench.task import judge_prompt
from clineval.cli import main
from clineval.errors import InputError

EXAMPLES = data.FIXTURES[False].read_bytes()
META = data.FIXTURES[True].read_bytes()


def body(content: bytes) -> Route:
    def route(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Length", str(len(content)))
        handler.end_headers()
        handler.wfile.write(content)

    return route


def reply(request: dict[str, Any]) -> str:
    """Prose for the candidate; every criterion met, in a fence, for the grader."""
    text = request["messages"][-1]["content"]
    if "criteria_met" not in text:
        return "FIXTURE answer"
    return '```json\n{"explanation": "x", "criteria_met": true}\n```'


def files(examples: bytes = EXAMPLES, prefix: str = "/healthbench/") -> dict[str, Route]:
    return {
        f"{prefix}{name}": body(META if task == data.META else examples)
        for task, name in data.FILES.items()
    }


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("CLINEVAL_CACHE_DIR", str(root))
    return root


def fetch(cache: Path, *more: str) -> int:
    return main(["data", "fetch", "healthbench", "--cache-dir", str(cache), *more])


def test_first_fetch_records_the_digest_and_later_ones_check_it(
    serve: Serve, cache: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    url, seen = serve(files(prefix="/simple-evals/healthbench/"))
    monkeypatch.setattr(data, "BLOB", f"{url}/simple-evals/healthbench/")  # the official address
    assert fetch(cache) == 0, capsys.readouterr().err
    assert len(seen) == 4
    record = json.loads((cache / "cache_manifest.json").read_text())["files"]
    for task in data.FILES:
        got = record[data.relative(task)]
        content = META if task == data.META else EXAMPLES
        assert got["sha256"] == hashlib.sha256(content).hexdigest()
        assert got["pinned"].startswith("by its first fetch")
    # a run then finds the files in the cache (no healthbench.cases)
    with RecordingServer(reply) as server:
        argv = ["run", "healthbench", "--model", f"openai:m@{server.base_url}", "--limit", "1"]
        assert main([*argv, "-o", str(cache.parent / "run")]) == 0, capsys.readouterr().err
    results = json.loads((cache.parent / "run" / "results.json").read_text())["healthbench"]
    assert results["fixture"] is False and results["score"] == pytest.approx(10 / 18)
    # the mirror's file changes: refused against the first digest, the cached copy kept
    changed = EXAMPLES.replace(b"FIXTURE: my father", b"FIXTURE: my mother")
    mirror, _ = serve(files(changed))
    capsys.readouterr()
    (cache / data.relative("healthbench")).unlink()
    assert fetch(cache, "--base-url", mirror) == 2
    err = capsys.readouterr().err
    assert "sha256" in err and "is not the expected" in err and err.count("\n") == 1
    assert not (cache / data.relative("healthbench")).exists()


def test_a_bad_line_stops_the_fetch_and_nothing_is_kept(serve: Serve, cache: Path, capsys) -> None:
    lines = EXAMPLES.decode().splitlines()
    lines[2] = lines[2].replace('"points": 6', '"points": "six"')
    mirror, _ = serve(files("\n".join(lines).encode()))
    assert fetch(cache, "--base-url", mirror) == 2
    err = capsys.readouterr().err.strip()
    target = cache / data.relative("healthbench")
    assert err == f'error: {target}:3: "points" must be a number' and not target.exists()


# ---- --judge-prompt official --------------------------------------------------------------
SCRIPT = b'''"""Synthetic grader script of the authors' shape (a FIXTURE)."""

GRADER_TEMPLATE = """
Fixture grader.
# Conversation
<<conversation>>

# Rubric item
<<rubric_item>>

Reply in a ```json fence with "explanation" and "criteria_met".
""".strip()
'''
TEMPLATE = SCRIPT.decode().split('GRADER_TEMPLATE = """', 1)[1].split('""".strip()')[0].strip()


@pytest.fixture
def grader_script(serve: Serve, cache: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    url, _ = serve({"/healthbench_eval.py": body(SCRIPT)})
    monkeypatch.setattr(official, "URL", f"{url}/healthbench_eval.py")
    monkeypatch.setattr(official, "SHA256", hashlib.sha256(SCRIPT).hexdigest())
    monkeypatch.setattr(official, "SIZE", len(SCRIPT))
    return url


def test_the_official_template_is_fetched_at_use_and_filled_as_the_authors_do(
    grader_script: str, cache: Path
) -> None:
    prompt = judge_prompt("official")
    assert prompt.constrained is False and prompt.system is None
    assert prompt.version == "official-" + hashlib.sha256(SCRIPT).hexdigest()[:16]
    conversation, answer, item = "user: hi {criterion}", "A <<<x>>>", "[5] Says hello."
    ((role, text),) = prompt.messages(conversation, answer, item)
    want = TEMPLATE.replace("<<conversation>>", f"{conversation}\n\nassistant: {answer}")
    assert role == "user" and text == want.replace("<<rubric_item>>", item)
    assert (cache / official.RELATIVE).read_bytes() == SCRIPT


def test_a_script_that_is_not_the_pinned_one_is_refused(
    grader_script: str, cache: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys
) -> None:
    monkeypatch.setattr(official, "SHA256", "0" * 64)
    argv = ["run", "healthbench", "--model", "openai:m@http://127.0.0.1:9/v1"]
    argv += ["--option", "healthbench.cases=fixture", "--judge-prompt", "official"]
    assert main([*argv, "-o", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert "is not the expected" in err and "\n" not in err and not (tmp_path / "r").exists()


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ('GRADER_TEMPLATE = "<<conversation>>"\n', "must hold <<rubric_item>> once"),
        ('GRADER_TEMPLATE = "<<conversation>> <<rubric_item>> <<rubric_item>>"\n', "once"),
        ('TEMPLATE = "<<conversation>> <<rubric_item>>"\n', "expected one string"),
        ('GRADER_TEMPLATE = f"{x}"\n', "expected one string"),
        ('GRADER_TEMPLATE = "{query} <<conversation>> <<rubric_item>>"\n', "placeholder"),
        ("GRADER_TEMPLATE = (\n", "not Python source"),
    ],
)
def test_a_script_of_another_shape_is_refused(source: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        official.extract_template(source, "healthbench_eval.py")


def test_a_run_with_the_official_prompt(grader_script: str, tmp_path: Path, capsys) -> None:
    with RecordingServer(reply) as server:
        argv = ["run", "healthbench", "--model", f"openai:m@{server.base_url}", "--limit", "1"]
        argv += ["--option", "healthbench.cases=fixture", "--judge-prompt", "official"]
        assert main([*argv, "-o", str(tmp_path / "r")]) == 0, capsys.readouterr().err
        judged = [b for b in server.bodies if "Fixture grader." in b["messages"][-1]["content"]]
    assert judged and all("response_format" not in b for b in judged)
    results = json.loads((tmp_path / "r" / "results.json").read_text())["healthbench"]
    # every criterion met: (10 + 5 - 8 + 3) / 18, the penalty counted
    assert results["score"] == pytest.approx(10 / 18) and results["judge_errors"] == 0
