"""Credentials of a run in every form (a base URL's user:password as written and decoded, the
pair, its base64 Basic value, an API key) reach no file of the run, no export, no report and no
printed line, even when a server quotes the request's Authorization header back in its error
body (a real local server does so here: tests/llm_stub_server.py)."""

from __future__ import annotations

import base64
import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote

import pytest
from llm_stub_server import StubServer

from clineval import secrets
from clineval.rundir import write_json, write_jsonl
from clineval.secrets import (
    mask_known,
    mask_known_value,
    redact,
    register_environment,
    register_url,
)
from clineval.store import RunStore

# Every placeholder the stub fills: the header, the header without "Basic", the decoded pair.
QUOTING_BODY = json.dumps(
    {"error": {"message": "denied {authorization} | {credentials} | {userpass}"}}
)


def _forms(user: str, password_in_url: str) -> list[str]:
    """Every form of one URL credential that must appear nowhere."""
    password = unquote(password_in_url)
    pair = f"{user}:{password}"
    coded = base64.b64encode(pair.encode()).decode()
    return sorted(
        {password_in_url, password, pair, f"{user}:{password_in_url}", coded, coded.rstrip("=")}
    )


@pytest.fixture(autouse=True)
def _own_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """What these tests register stays out of the other tests of the session."""
    monkeypatch.setattr(secrets, "_registered", set())


@pytest.fixture
def stubs() -> Iterator[tuple[StubServer, StubServer]]:
    with StubServer() as candidate, StubServer() as judge:
        yield candidate, judge


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "clineval", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
        check=False,
    )


def _with_credentials(base_url: str, userinfo: str) -> str:
    return base_url.replace("http://", f"http://{userinfo}@", 1)


def test_url_credentials_in_no_run_file_export_report_or_line(
    tmp_path: Path, stubs: tuple[StubServer, StubServer]
) -> None:
    candidate, judge = stubs
    # The candidate's server refuses the first call quoting its credentials back; the judge's
    # server refuses every call so.
    candidate.script([{"do": "status", "status": 401, "body": QUOTING_BODY}], default={"do": "ok"})
    judge.script([], default={"do": "status", "status": 401, "body": QUOTING_BODY})
    model_info, judge_info = ("bob", "Pa55w0rd-fixture"), ("carol", "fixture%2Fs3cret%3Ax")
    run_dir = tmp_path / "run"
    env = {"OPENAI_API_KEY": ""}  # Basic auth from the URLs: no Bearer key besides
    ran = _cli(
        "run",
        "clinconsensus",
        "--model",
        "openai:cand@" + _with_credentials(candidate.base_url, ":".join(model_info)),
        "--judge",
        "openai:judge",
        "--judge-base-url",
        _with_credentials(judge.base_url, ":".join(judge_info)),
        "--option",
        "clinconsensus.cases=fixture",
        "--option",
        "clinconsensus.max_criteria=1",
        "--limit",
        "2",
        "--max-retries",
        "0",
        "--concurrency",
        "1",
        "-o",
        str(run_dir),
        env=env,
    )
    assert ran.returncode == 1, ran.stderr  # a failed call: results written, exit 1
    # The servers were sent the credentials (Basic) and quoted them back.
    sent = {**candidate.stats()["authorization"], **judge.stats()["authorization"]}
    for user, password in (model_info, judge_info):
        header = "Basic " + base64.b64encode(f"{user}:{unquote(password)}".encode()).decode()
        assert header in sent
    exported = _cli("export", str(run_dir), "--format", "samples-csv", "-o", str(tmp_path / "x"))
    reported = _cli("report", str(run_dir), "-o", str(run_dir / "report.html"))
    assert exported.returncode == 0 and reported.returncode == 0, exported.stderr + reported.stderr
    files = [p for p in [*run_dir.rglob("*"), *(tmp_path / "x").rglob("*")] if p.is_file()]
    assert {"samples.jsonl", "store.sqlite", "manifest.json", "report.html"} <= {
        p.name for p in files
    }
    assert any(p.suffix == ".csv" for p in files)
    # The refusals themselves are kept (masked), so the run says what happened.
    samples = (run_dir / "samples.jsonl").read_text(encoding="utf-8")
    assert "denied Basic ***" in samples
    printed = ran.stdout + ran.stderr + exported.stdout + exported.stderr + reported.stdout
    for form in _forms(*model_info) + _forms(*judge_info):
        for path in files:
            assert form.encode() not in path.read_bytes(), (form, path.name)
        assert form not in printed, form


def test_masking_keeps_stored_json_valid(tmp_path: Path) -> None:
    """Masking in the store and the JSON files replaces inside strings only: a record whose
    text holds a known credential is stored masked and still reads back; an all-digit
    password is masked inside strings and in messages but never inside a number."""
    register_url("http://dave:Fixture-Key-77@h/v1")
    register_url("http://erin:123456789@h/v1")
    record = {"text": 'said "Fixture-Key-77" and 123456789', "n": 123456789}
    with RunStore(tmp_path / "store.sqlite") as store:
        store.put_record("t", "out", "a", record)
        store.put_calls([("k", "m", json.dumps({"q": "dave:Fixture-Key-77"}), {"r": 1}, None)])
        assert store.records("t", "out") == {"a": {"text": 'said "***" and ***', "n": 123456789}}
        assert store.iter_calls()[0]["request"] == {"q": "***"}
    data = (tmp_path / "store.sqlite").read_bytes()
    assert b"Fixture-Key-77" not in data
    con = sqlite3.connect(tmp_path / "store.sqlite")
    assert "Fixture-Key-77" not in str(con.execute("SELECT * FROM records").fetchall())
    con.close()
    write_json(tmp_path / "r.json", record)
    write_jsonl(tmp_path / "r.jsonl", [record])
    for name in ("r.json", "r.jsonl"):
        text = (tmp_path / name).read_text(encoding="utf-8")
        assert json.loads(text) == {"text": 'said "***" and ***', "n": 123456789}, name
    assert "123456789" not in redact("the server said erin:123456789 and 123456789")
    assert mask_known('{"n": 123456789}') == '{"n": 123456789}'


def test_every_form_of_a_registered_url_credential() -> None:
    register_url("https://frank:p%40ss%2Fword-fixture@h/v1")
    pair = "frank:p@ss/word-fixture"
    coded = base64.b64encode(pair.encode()).decode()
    urlsafe = base64.urlsafe_b64encode(pair.encode()).decode()
    for form in (
        "p%40ss%2Fword-fixture",
        "p@ss/word-fixture",
        pair,
        "frank:p%40ss%2Fword-fixture",
        coded,
        coded.rstrip("="),
        urlsafe,
        json.dumps(pair)[1:-1],
    ):
        assert form not in mask_known(f"<{form}>"), form
        assert mask_known_value({"k": [f"x {form}"]}) == {"k": ["x ***"]}
    # a token as the whole userinfo is sent as Basic TOKEN: (an empty password)
    register_url("https://tok-fixture-123@h/v1")
    token_pair = base64.b64encode(b"tok-fixture-123:").decode()
    assert mask_known(f"a {token_pair} b tok-fixture-123") == "a *** b ***"
    # a short bare password is masked in its pair and base64 forms only
    register_url("http://gina:abc@h/v1")
    assert mask_known("abc gina:abc") == "abc ***"
    # the masked URL of a manifest registers nothing
    before = secrets.known_forms()
    register_url("http://***@h/v1")
    assert secrets.known_forms() == before


def test_basic_header_value_redacted_in_messages() -> None:
    assert redact("got Authorization: Basic dXNlcjpwYXNz") == "got Authorization: Basic ***"


@pytest.mark.parametrize("name", ["OPENAI_API_KEY", "HF_TOKEN"])
def test_api_key_from_the_environment_masked_in_its_forms(
    monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.setenv(name, "fixture-key-0a1b2c3d")
    assert mask_known("key fixture-key-0a1b2c3d") == "key fixture-key-0a1b2c3d"  # not read yet
    register_environment()  # as each command does when it starts
    assert mask_known("key fixture-key-0a1b2c3d") == "key ***"
    assert mask_known_value(["a\\fixture-key-0a1b2c3d"]) == ["a\\***"]


def test_the_command_line_prints_no_known_credential(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Whatever prints while a command runs (print, logging, rich) goes through the masked
    streams: a line that quotes a known credential is printed masked."""
    import logging

    from clineval.cli import _masked_console

    register_url("http://hal:Fixture-Console-9@h/v1")
    with _masked_console():
        print("said hal:Fixture-Console-9")
        logging.getLogger("clineval.test").addHandler(handler := logging.StreamHandler())
        try:
            logging.getLogger("clineval.test").warning("key Fixture-Console-9")
        finally:
            logging.getLogger("clineval.test").removeHandler(handler)
    out = capsys.readouterr()
    assert out.out == "said ***\n" and out.err == "key ***\n"
