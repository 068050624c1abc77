"""Where input enters (clineval.jsonio, clineval.errors): text that is not valid Unicode and
JSON the parser cannot take, in files and in model replies, end the same way everywhere.

- A lone surrogate escape ("\\ud800": valid JSON, not valid text) in a reply or an input file is
  replaced by U+FFFD and counted in the manifest; the run finishes and resumes. Before, storing
  the reply raised UnicodeEncodeError and every resume crashed again.
- 10,000-level nesting and integers past the interpreter's digit limit in an input file are the
  one-line exit-2 `error: FILE:LINE: invalid JSON: ...`; in a reply, a retryable bad_response.
  Before, RecursionError / ValueError escaped as internal errors.
- An error line quotes at most ~200 characters of an offending value (a 5 MB id made a 5 MB line).

The files are fixture/synthetic; the server is the real stub process on 127.0.0.1.
"""

from __future__ import annotations

import ast
import asyncio
import json
import os
import re
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_inprocess import Done, clineval_inprocess
from llm_stub_server import StubServer

from clineval.benchmarks.base import RunContext
from clineval.benchmarks.tcm_sd.dataset import EXPECTED_LABELS, VOCAB_NAME
from clineval.config import RunConfig
from clineval.errors import InputError
from clineval.jsonio import (
    REPLIES,
    TALLY_KEY,
    JsonProblem,
    count_replacements,
    decode_prefix,
    loads_input,
    parse_json,
)
from clineval.messages import clip
from clineval.models.llm import RetryPolicy, open_chat_model
from clineval.models.llm_base import ChatError, ChatRequest
from clineval.models.spec import ModelSpec
from clineval.store import STORE_FILENAME, RunStore

DEEP = "[" * 10_000 + "]" * 10_000
HUGE_INT = "1" * 5_000
BAD = "\ufffd"


# ---- the decoding rules ---------------------------------------------------------------------
def test_lone_surrogates_are_replaced_and_counted_pairs_are_kept() -> None:
    text = '{"id\\ud800": ["a\\udfffb", {"k": "\\ud83d\\ude00 \\uD800"}], "n": 1}'
    record: dict[str, Any] = {}
    with count_replacements(record):
        value = parse_json(text, "f.jsonl")
    assert value == {f"id{BAD}": [f"a{BAD}b", {"k": f"\U0001f600 {BAD}"}], "n": 1}
    assert record == {TALLY_KEY: {"f.jsonl": 3}}
    json.dumps(value, ensure_ascii=False).encode("utf-8")  # writable as UTF-8 now
    assert parse_json('"\\ud800"') == BAD  # a bare string value too
    # a reply body with the surrogate encoded as UTF-8 bytes (the json module lets it through)
    assert parse_json(b'{"a": "x\xed\xa0\x80y"}') == {"a": f"x{BAD}y"}
    assert parse_json('"\ud800"'.encode("utf-16", "surrogatepass")) == BAD


def test_the_surrogate_check_agrees_with_a_plain_scan() -> None:
    # parse_json walks a decoded value only when its text may hold a lone surrogate; the check
    # runs in C-speed steps, so it is held to the one regex it replaced, on random texts made
    # of escapes' pieces, CJK, ASCII and lone surrogates of both halves
    import random

    from clineval.jsonio import _may_hold_surrogates

    scan = re.compile(r"\\u[dD][89abcdefABCDEF]|[\ud800-\udfff]")
    pieces = ["\\", "u", "d", "D", "8", "b", "F", "0", "x", "中", "\ud800", "\udfff", "é"]
    rng = random.Random(7)
    texts = ["".join(rng.choices(pieces, k=rng.randint(0, 12))) for _ in range(20_000)]
    found = [t for t in texts if scan.search(t)]
    assert 1_000 < len(found) < len(texts) - 1_000  # both answers are well represented
    assert [t for t in texts if _may_hold_surrogates(t)] == found


def test_the_count_is_per_command() -> None:
    record: dict[str, Any] = {TALLY_KEY: {"old": 5}}
    with count_replacements(record):
        parse_json('["ok"]')
    assert TALLY_KEY not in record  # no replacement now: nothing claimed
    parse_json('"\\ud800"')  # outside any command: replaced, counted nowhere
    assert TALLY_KEY not in record


@pytest.mark.parametrize(
    ("text", "reason", "line"),
    [
        ('{"a": 1,\n "b": ' + DEEP + "}", "nested too deeply (10,001 levels)", 2),
        ('{"a": "' + HUGE_INT + '",\n "b": [1,\n ' + HUGE_INT + "]}", "more than 4,300 digits", 3),
        ('{"a": 1,\n "b": }\n\n', "Expecting value", 2),
        ('{"a": 1\n', "Expecting ',' delimiter", 1),  # cut short: its last line, not beyond
    ],
    ids=["deep", "huge-int", "syntax", "cut-short"],
)
def test_json_the_parser_cannot_take_is_a_file_line_error(
    text: str, reason: str, line: int
) -> None:
    with pytest.raises(InputError) as info:
        loads_input(text, "in.json")
    assert info.value.line == line and reason in info.value.message
    with pytest.raises(InputError) as info:  # part of a file starting at line 10
        loads_input(text, "in.jsonl", line=10)
    assert info.value.one_line().startswith(f"in.jsonl:{line + 9}: invalid JSON: ")


def test_json_inside_a_reply_never_raises() -> None:
    for text in (DEEP, f'{{"n": {HUGE_INT}}}'):
        assert decode_prefix(text, 0) is None
        with pytest.raises(JsonProblem):
            parse_json(text)
    assert decode_prefix('xx {"e": "\\ud800"} yy', 3) == ({"e": BAD}, 18)


def test_an_error_line_quotes_a_bounded_piece_of_a_value() -> None:
    huge = "x" * 5_000_000
    line = InputError(f"unknown id {huge!r} (not in the split)", path="p.jsonl", line=3).one_line()
    assert len(line) < 300 and line.startswith("p.jsonl:3: unknown id 'xxx")
    assert line.endswith("(not in the split)")
    spaced = InputError("value: " + "word " * 1_000_000).one_line()
    assert len(spaced) < 1_100
    assert len(clip(huge)) < 250 and "5,000,000 characters" in clip(huge)
    assert len(clip([[[[[[[[["deep"]]]]]]]]] * 1000)) < 250
    # a message listing choices (short words) is kept whole
    listing = "valid keys: " + ", ".join(f"group.option_{i}" for i in range(30))
    assert InputError(listing).one_line() == listing
    # whatever the caller quoted, the line can be printed as UTF-8
    InputError("bad \ud800 id", path="p").one_line().encode("utf-8")


# ---- no JSON reader outside the boundary ----------------------------------------------------
PACKAGE = Path(__file__).resolve().parents[1] / "clineval"
# Modules that may decode JSON themselves: the boundary, and the run store reading back the
# values it wrote (clineval writes them; the reply fast path (orjson) refuses lone surrogates,
# deep nesting and long integers, and falls back to the boundary).
ALLOWED = {"jsonio.py", "store_json.py", "store.py", "models/http_errors.py"}
_DECODERS = {"loads", "load", "raw_decode", "JSONDecoder"}


def _json_decodes(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    lines = []
    for node in ast.walk(tree):
        if (
            (
                isinstance(node, ast.Attribute)
                and node.attr in _DECODERS
                and isinstance(node.value, ast.Name)
                and node.value.id in ("json", "orjson")
            )
            or (isinstance(node, ast.Attribute) and node.attr == "raw_decode")
            or (
                isinstance(node, ast.ImportFrom)
                and node.module in ("json", "orjson")
                and any(alias.name in _DECODERS for alias in node.names)
            )
        ):
            lines.append(node.lineno)
    return lines


def test_json_is_decoded_only_at_the_boundary() -> None:
    found = {
        f"{path.relative_to(PACKAGE)}:{line}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if str(path.relative_to(PACKAGE)) not in ALLOWED
        for line in _json_decodes(path)
    }
    assert found == set(), (
        "these modules decode JSON themselves: use clineval.jsonio (read_json_file, "
        "loads_input, parse_json, decode_prefix; see docs/input-boundary.md)"
    )
    assert _json_decodes(PACKAGE / "jsonio.py")  # the check finds what it looks for


# ---- replies from a real server -------------------------------------------------------------
@pytest.fixture(scope="module")
def stub() -> Iterator[StubServer]:
    with StubServer(latency=0.0) as server:
        yield server


@pytest.fixture(autouse=True)
def _fresh_stub(request: pytest.FixtureRequest) -> None:
    if "stub" in request.fixturenames:
        request.getfixturevalue("stub").reset()


@pytest.mark.parametrize("transport", ["aiohttp", "openai"])
@pytest.mark.parametrize("body", [DEEP, f'{{"choices": {HUGE_INT}}}'], ids=["deep", "huge-int"])
def test_a_reply_the_parser_cannot_take_is_a_retried_bad_response(
    tmp_path: Path, stub: StubServer, transport: str, body: str
) -> None:
    stub.script([], default={"do": "status", "status": 200, "body": body})
    model = f"openai:m@{stub.base_url}"
    ctx = RunContext(
        config=RunConfig(tasks=["fixture"], model=model),
        store=RunStore.in_dir(tmp_path),
        output_dir=tmp_path,
        data_root=None,
        model=ModelSpec.parse(model),
    )

    async def ask() -> None:
        retry = RetryPolicy(max_retries=1, base_delay_s=0.01, max_delay_s=0.02)
        async with open_chat_model(ctx.model, ctx.runtime, retry=retry, transport=transport) as m:
            await m.chat(ChatRequest(messages=(("user", "q"),), seed=1, template_version="t"))

    with pytest.raises(ChatError) as info:
        asyncio.run(ask())
    assert info.value.kind == "bad_response"
    assert stub.stats()["requests"] == 2  # retried within the budget
    assert ctx.store.count_calls() == 0


def _clinconsensus(stub: StubServer, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    command = [
        *(sys.executable, "-m", "clineval", "--quiet", "run", "clinconsensus"),
        *("--model", f"openai:cand@{stub.base_url}"),
        *("--option", "clinconsensus.cases=fixture", "--limit", "1"),
        *("--option", "clinconsensus.max_criteria=1"),  # one answer and one verdict
        *("--max-retries", "1", "--max-judge-error-rate", "1"),
        *("--option", "llm.backoff_base_s=0.01", "--option", "llm.backoff_max_s=0.02"),
        *("--output-dir", str(out), *extra),
    ]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)


def _stored_texts(out: Path) -> list[str]:
    conn = sqlite3.connect(f"file:{out / STORE_FILENAME}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT response FROM calls").fetchall()
    finally:
        conn.close()
    return sorted(json.loads(raw)["text"] for (raw,) in rows)


def _manifest(out: Path) -> dict[str, Any]:
    return json.loads((out / "manifest.json").read_text("utf-8"))  # type: ignore[no-any-return]


@pytest.mark.parametrize("transport", ["aiohttp", "openai"])
def test_a_reply_with_a_lone_surrogate_is_stored_repaired_and_resumes(
    tmp_path: Path, stub: StubServer, transport: str
) -> None:
    answer = {"do": "ok", "content": "the answer \ud800 here"}  # sent as the escape \ud800
    # the judge's verdict is JSON text in its reply: the escape is inside that text
    verdict = {"do": "ok", "content": '{"explanation": "met \\ud800", "criteria_met": true}'}
    stub.script([answer], default=verdict)
    out = tmp_path / "run"
    done = _clinconsensus(stub, out, "--option", f"llm.transport={transport}")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr and "never retrieved" not in done.stderr
    assert _stored_texts(out) == sorted(
        [f"the answer {BAD} here", '{"explanation": "met \\ud800", "criteria_met": true}']
    )
    manifest = _manifest(out)
    assert manifest["status"] == "finished"
    # the answer's surrogate once; the verdict's each time its JSON is read
    replaced = manifest[TALLY_KEY][REPLIES]
    assert replaced >= 2, manifest[TALLY_KEY]
    results = json.loads((out / "results.json").read_text("utf-8"))["clinconsensus"]
    assert results["judge_errors"] == 0
    sent = stub.stats()["requests"]
    assert sent == 2

    rerun = _clinconsensus(stub, out, "--option", f"llm.transport={transport}")
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert stub.stats()["requests"] == sent  # all answered from the store
    again = json.loads((out / "results.json").read_text("utf-8"))["clinconsensus"]
    assert again == results


def test_a_run_whose_replies_cannot_be_parsed_fails_those_calls_only(
    tmp_path: Path, stub: StubServer
) -> None:
    stub.script([], default={"do": "status", "status": 200, "body": DEEP})
    out = tmp_path / "run"
    done = _clinconsensus(stub, out)
    assert done.returncode == 1, done.stderr[-3000:]  # a failed call, reported as such
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr
    results = json.loads((out / "results.json").read_text("utf-8"))["clinconsensus"]
    assert results["candidate_errors"] == 1
    assert _manifest(out)["llm_calls"]["totals"]["errors"] == {"bad_response": 1}


# ---- input files through the command line ---------------------------------------------------
# In process: what is checked is the command's answer to a file, not how a process starts
# (the runs above are the subprocess ones).
def _clineval(*args: str) -> Done:
    return clineval_inprocess(*args)


def _one_error_line(done: Done) -> str:
    assert done.returncode == 2, done.stderr[-3000:]
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: "), done.stderr[-3000:]
    return done.stderr.rstrip("\n")


def _tcm_root(tmp_path: Path, records: list[str]) -> Path:
    """A fixture/synthetic TCM-SD data root: 148 labels and a test split of the given lines."""
    root = tmp_path / "data"
    (root / "tcm-sd").mkdir(parents=True)
    labels = [f"synthetic-syndrome-{i:03d}" for i in range(EXPECTED_LABELS)]
    (root / "tcm-sd" / VOCAB_NAME).write_text("\r\n".join(labels) + "\r\n", "utf-8")
    (root / "tcm-sd" / "test.json").write_text("\n".join(records) + "\n", "utf-8")
    return root


def _tcm_record(user_id: str, label: int) -> str:
    """A JSON line whose user_id is written as given (so it may hold a raw escape)."""
    fields = {
        "lcd_id": "1",
        "lcd_name": "fixture",
        "syndrome": "fixture",
        "chief_complaint": "synthetic complaint",
        "description": "synthetic description",
        "detection": "synthetic detection",
        "norm_syndrome": f"synthetic-syndrome-{label:03d}",
    }
    return '{"user_id": "' + user_id + '", ' + json.dumps(fields)[1:]


def test_a_tcm_user_id_with_a_lone_surrogate_runs_and_is_counted(tmp_path: Path) -> None:
    root = _tcm_root(tmp_path, [_tcm_record("p\\ud800-1", 0), _tcm_record("p-2", 1)])
    preds = tmp_path / "preds.jsonl"
    preds.write_text(
        '{"id": "p\\ud800-1", "label": "synthetic-syndrome-000"}\n'
        '{"id": "p-2", "label": "synthetic-syndrome-000"}\n',
        "utf-8",
    )
    out = tmp_path / "run"
    args = ["run", "tcm-sd", "--model", f"predictions:{preds}", "--data-dir", str(root)]
    done = _clineval(*args, "--output-dir", str(out))
    assert done.returncode == 0, done.stderr[-3000:]
    samples = [json.loads(s) for s in (out / "samples.jsonl").read_text("utf-8").splitlines()]
    assert {s["id"] for s in samples} == {f"p{BAD}-1", "p-2"}
    assert sum(s["correct"] for s in samples) == 1  # the repaired ids still match
    assert _manifest(out)[TALLY_KEY] == {str(root / "tcm-sd" / "test.json"): 1, str(preds): 1}
    rescored = _clineval("score", str(out))
    assert rescored.returncode == 0, rescored.stderr[-3000:]


_BAD_VALUES = {"deep": DEEP, "huge-int": HUGE_INT}


@pytest.mark.parametrize("bad", sorted(_BAD_VALUES))
def test_a_bad_json_value_in_a_predictions_file(tmp_path: Path, bad: str) -> None:
    root = _tcm_root(tmp_path, [_tcm_record("p-1", 0)])
    preds = tmp_path / "preds.jsonl"
    value = _BAD_VALUES[bad]
    preds.write_text(f'{{"id": "p-1", "label": "synthetic-syndrome-000"}}\n{{"id": {value}}}\n')
    args = ["run", "tcm-sd", "--model", f"predictions:{preds}", "--data-dir", str(root)]
    line = _one_error_line(_clineval(*args, "--output-dir", str(tmp_path / "run")))
    assert line.startswith(f"error: {preds}:2: invalid JSON: ")
    assert len(line) < 300 + len(str(preds))


@pytest.mark.parametrize("bad", sorted(_BAD_VALUES))
def test_a_bad_json_value_in_a_cases_file(tmp_path: Path, bad: str) -> None:
    cases = tmp_path / "cases.jsonl"
    cases.write_text(f'\n{{"case_id": "c1", "rubrics": {_BAD_VALUES[bad]}}}\n', "utf-8")
    args = ["run", "clinconsensus", "--model", "openai:m@http://127.0.0.1:9/v1"]
    done = _clineval(*args, "--cases", str(cases), "--output-dir", str(tmp_path / "run"))
    assert _one_error_line(done).startswith(f"error: {cases}:2: invalid JSON: ")


@pytest.mark.parametrize("bad", sorted(_BAD_VALUES))
def test_a_bad_json_value_in_a_price_table(tmp_path: Path, bad: str) -> None:
    table = tmp_path / "prices.json"
    table.write_text(f'{{"m": {{"input_per_1m": 1,\n "output_per_1m": {_BAD_VALUES[bad]}}}}}\n')
    args = ["run", "clinconsensus", "--model", "openai:m@http://127.0.0.1:9/v1", "--dry-run"]
    done = _clineval(*args, "--price-table", str(table), "-o", str(tmp_path / "run"))
    assert _one_error_line(done).startswith(f"error: {table}:2: invalid JSON: ")


@pytest.mark.parametrize("bad", sorted(_BAD_VALUES))
def test_a_bad_json_value_in_a_run_manifest(tmp_path: Path, bad: str) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "manifest.json").write_text(f'{{\n"config": {_BAD_VALUES[bad]}}}\n', "utf-8")
    line = _one_error_line(_clineval("score", str(run)))
    assert line.startswith(f"error: {run / 'manifest.json'}:2: ")
    assert "invalid JSON: " in line


def test_a_5_mb_id_makes_a_short_error_line(tmp_path: Path) -> None:
    root = _tcm_root(tmp_path, [_tcm_record("p-1", 0)])
    preds = tmp_path / "preds.jsonl"
    huge = "x" * 5_000_000
    preds.write_text(json.dumps({"id": huge, "label": "synthetic-syndrome-000"}) + "\n")
    args = ["run", "tcm-sd", "--model", f"predictions:{preds}", "--data-dir", str(root)]
    line = _one_error_line(_clineval(*args, "--output-dir", str(tmp_path / "run")))
    assert line.startswith(f"error: {preds}:1: ")
    longest_quote = max(len(m) for m in re.findall("x+", line.replace(str(preds), "")))
    assert 50 <= longest_quote <= 200
    assert len(line) < 300 + len(str(preds))


def test_a_price_table_that_is_a_directory_or_not_utf8(tmp_path: Path) -> None:
    args = ["run", "clinconsensus", "--model", "openai:m@http://127.0.0.1:9/v1", "--dry-run"]
    args += ["--option", "clinconsensus.cases=fixture", "-o", str(tmp_path / "run")]
    folder = tmp_path / "prices"
    folder.mkdir()
    line = _one_error_line(_clineval(*args, "--price-table", str(folder)))
    assert str(folder) in line and "directory" in line
    latin1 = tmp_path / "latin1.json"
    latin1.write_bytes(b'{"m":\n {"input_per_1m": 1, "output_per_1m": 2, "note": "\xe9"}}\n')
    line = _one_error_line(_clineval(*args, "--price-table", str(latin1)))
    assert str(latin1) in line and "UTF-8" in line
    bom = tmp_path / "bom.json"
    bom.write_bytes(b'\xef\xbb\xbf{"m": {"input_per_1m": 1, "output_per_1m": 2}}\n')
    done = _clineval(*args, "--price-table", str(bom))
    assert done.returncode == 0, done.stderr[-3000:]
