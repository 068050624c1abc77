"""NER by extraction: the reply parser and mention locator (tables of hand cases), the whole
path over HTTP against the scripted stub server, and the real llama.cpp server (plumbing)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from llm_stub_server import StubServer

from clineval.benchmarks.ner.corpora import load_ner_split
from clineval.benchmarks.ner.llm import locate_mentions, parse_reply
from clineval.benchmarks.ner.records import Span
from clineval.cli import main
from clineval.store import RunStore

TYPES = ("drug", "condition")
C, D = "condition", "drug"


def ents(*pairs: tuple[str, str]) -> str:
    """A reply in the asked-for shape."""
    return json.dumps({"entities": [{"text": t, "type": k} for t, k in pairs]})


PARSE_CASES: list[tuple[str, str, list[tuple[str, str]], str]] = [
    # (name, reply, mentions, status)
    ("bare object", ents(("asthma", C)), [("asthma", C)], "ok"),
    ("empty list", '{"entities": []}', [], "ok"),
    ("fenced, prose around", f"Here:\n```json\n{ents(('aspirin', D))}\n```\nDone.",
     [("aspirin", D)], "ok"),
    ("fence not closed", f"```json\n{ents(('a', D))}", [("a", D)], "ok"),
    ("prose then object", f"Entities: {ents(('gout', C))}", [("gout", C)], "ok"),
    ("bare list", '[{"text": "x", "type": "drug"}, {"text": "y", "type": "condition"}]',
     [("x", D), ("y", C)], "ok"),
    ("type-keyed object", '{"condition": ["flu", "gout"], "drug": ["aspirin"]}',
     [("flu", C), ("gout", C), ("aspirin", D)], "ok"),
    ("type case-insensitive", ents(("flu", "Condition")), [("flu", C)], "ok"),
    ("corpus type alias", ents(("flu", "Disease"), ("dopamine", "Chemical")),
     [("flu", C), ("dopamine", D)], "ok"),
    ("mention/label keys", '{"entities": [{"mention": "flu", "label": "condition"}]}',
     [("flu", C)], "ok"),
    ("unknown type dropped", ents(("BRCA1", "gene"), ("flu", C)), [("flu", C)], "ok"),
    ("blank text dropped", ents((" ", C)), [], "ok"),
    ("small list first", f"See [1]. {ents(('flu', C))}", [("flu", C)], "ok"),
    ("truncated: salvage", ents(("flu", C), ("aspirin", D))[:-20], [("flu", C)], "salvaged"),
    ("not JSON", "The entities are flu and aspirin.", [], "invalid"),
    ("empty reply", "", [], "invalid"),
    ("JSON of another shape", '{"answer": 42}', [], "invalid"),
    ("a string, not an object", '"flu"', [], "invalid"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "reply", "mentions", "status"), PARSE_CASES)
def test_parse_reply(name: str, reply: str, mentions: list[tuple[str, str]], status: str) -> None:
    parsed = parse_reply(reply, TYPES)
    assert (parsed.mentions, parsed.status) == (mentions, status), name


def test_bare_strings_count_only_for_a_one_type_dataset() -> None:
    assert parse_reply('["flu", "gout"]', ("condition",)).mentions == [("flu", C), ("gout", C)]
    assert parse_reply('["flu", "gout"]', TYPES).mentions == []
    untyped = '{"entities": [{"text": "flu"}]}'
    assert parse_reply(untyped, ("condition",)).mentions == [("flu", C)]
    assert parse_reply(untyped, TYPES).dropped == 1


TEXT = "Flu and flu-like illness; influenza (flu). Aspirin, aspirin-induced asthma, Asthma."

LOCATE_CASES: list[tuple[str, list[tuple[str, str]], list[tuple[int, int, str]], list[str]]] = [
    # every whole-word, case-sensitive occurrence; "flu-like" is one word (the regex joins -)
    ("all occurrences, case-sensitive", [("flu", C)], [(37, 40, C)], []),
    ("capitalised", [("Flu", C)], [(0, 3, C)], []),
    ("inside a longer word: no", [("influenz", C)], [], ["influenz"]),
    ("hyphenated word", [("flu-like illness", C)], [(8, 24, C)], []),
    ("punctuation inside the mention", [("influenza (flu)", C)], [(26, 41, C)], []),
    ("not in the text", [("gout", C)], [], ["gout"]),
    ("two types, one text", [("Aspirin", D), ("Aspirin", C)], [(43, 50, D), (43, 50, C)], []),
    ("duplicate pair located once", [("asthma", C), ("asthma", C)], [(68, 74, C)], []),
    ("surrounding spaces ignored", [(" Asthma ", C)], [(76, 82, C)], []),
]  # fmt: skip


@pytest.mark.parametrize(("name", "mentions", "spans", "missing"), LOCATE_CASES)
def test_locate_mentions(
    name: str,
    mentions: list[tuple[str, str]],
    spans: list[tuple[int, int, str]],
    missing: list[str],
) -> None:
    got, not_found = locate_mentions(TEXT, mentions)
    assert [(s.start, s.end, s.type) for s in got] == spans, name
    assert not_found == missing
    stripped = {m.strip() for m, _ in mentions}
    assert all(TEXT[s.start : s.end] in stripped for s in got)


def test_several_occurrences_each_become_a_span() -> None:
    text = "MS, ms and MS again; DMS, MS-like."
    spans, _ = locate_mentions(text, [("MS", C)])
    assert spans == [Span(0, 2, C), Span(11, 13, C)]


# ---- over HTTP, against the scripted stub ---------------------------------------------------
def _results(out: Path) -> dict[str, Any]:
    return json.loads((out / "results.json").read_text())["ner:ncbi"]


@pytest.fixture(scope="module")
def stub() -> Any:
    with StubServer(latency=0.0) as server:
        yield server


@pytest.mark.slow
def test_extraction_over_http_stores_located_spans(
    tmp_path: Path, data_root: Path, stub: Any
) -> None:
    doc = load_ner_split("ncbi", "test", data_root).documents[0]
    gold = doc.entities[0]
    mention = doc.text[gold.start : gold.end]
    reply = json.dumps({"entities": [{"text": mention, "type": "condition"}]})
    stub.reset()
    # the first call is refused as a bad request (as a server without json_schema would):
    # the backend asks again without a response_format
    stub.script([{"do": "status", "status": 400}], default={"do": "ok", "content": reply})
    out = tmp_path / "run"
    argv = ["run", "ner:ncbi", "--model", f"openai:stub@{stub.base_url}", "--output-dir"]
    argv += [str(out), "--data-dir", str(data_root), "--limit", "1", "--max-retries", "0"]
    assert main(argv) == 0
    with RunStore.in_dir(out) as store:
        record = store.records("ner:ncbi", "prediction")[doc.id]
        calls = store.count_calls()
    expected, _ = locate_mentions(doc.text, [(mention, "condition")])
    assert record["entities"] == [[s.start, s.end, s.type] for s in expected]
    assert [gold.start, gold.end, "condition"] in record["entities"]
    assert record["parse"] == "ok" and record["raw_output"] == reply
    notes = json.loads((out / "manifest.json").read_text())["tasks"]["ner:ncbi"]["llm"]
    assert notes["format_fallbacks"] == 1
    assert notes["parse_status"] == {"ok": 1}
    results = _results(out)
    assert results["invalid_outputs"] == 0
    sample = json.loads((out / "samples.jsonl").read_text().splitlines()[0])
    assert sample["model_output"] == {"raw_output": reply, "parse": "ok", "not_found": []}
    assert results["span_partial_precision"] == 1.0
    assert results["n_pred_spans"] == len(expected)
    # rerun: everything comes from the store, the stub sees no request
    requests_before = stub.stats()["requests"]
    assert main(argv) == 0
    assert stub.stats()["requests"] == requests_before
    with RunStore.in_dir(out) as store:
        assert store.count_calls() == calls
    assert _results(out) == results


@pytest.mark.slow
def test_failed_calls_leave_documents_missing_then_resume(
    tmp_path: Path, data_root: Path, stub: Any
) -> None:
    stub.reset()
    stub.script([], default={"do": "status", "status": 500})
    out = tmp_path / "run"
    argv = ["run", "ner:ncbi", "--model", f"openai:stub@{stub.base_url}", "--output-dir"]
    argv += [str(out), "--data-dir", str(data_root), "--limit", "2", "--max-retries", "0"]
    assert main(argv) == 1  # results written; documents without a prediction fail the run
    assert _results(out)["missing_predictions"] == 2
    notes = json.loads((out / "manifest.json").read_text())["tasks"]["ner:ncbi"]["llm"]
    assert notes["call_errors"] == {"server": 2}
    stub.script([], default={"do": "ok", "content": '{"entities": []}'})
    assert main(argv) == 0
    results = _results(out)
    assert results["missing_predictions"] == 0
    assert results["n_pred_spans"] == 0


# ---- the real llama.cpp server (SmolLM2-135M: plumbing, not quality) -------------------------
@pytest.mark.llm
@pytest.mark.slow
def test_llamacpp_extraction_end_to_end(tmp_path: Path, data_root: Path, gguf: Path) -> None:
    out = tmp_path / "run"
    argv = ["run", "ner:ncbi", "--model", f"llamacpp:{gguf}", "--output-dir", str(out)]
    argv += ["--data-dir", str(data_root), "--limit", "1", "--max-tokens", "96"]
    assert main(argv) == 0
    results = _results(out)
    assert results["n_documents"] == 1 and results["missing_predictions"] == 0
    for key in ("token_macro_f1", "span_partial_f1", "span_exact_f1"):
        assert 0.0 <= results[key] <= 1.0
    with RunStore.in_dir(out) as store:
        (record,) = store.records("ner:ncbi", "prediction").values()
        calls = store.count_calls()
    assert isinstance(record["raw_output"], str) and record["raw_output"]
    assert record["parse"] in ("ok", "salvaged", "invalid")
    text = load_ner_split("ncbi", "test", data_root).documents[0].text
    for start, end, kind in record["entities"]:
        assert kind == "condition" and 0 <= start < end <= len(text)
    assert calls >= 1
    # a rerun asks the model nothing
    assert main(argv) == 0
    with RunStore.in_dir(out) as store:
        assert store.count_calls() == calls
    assert _results(out) == results


def test_dry_run_plans_exactly_the_calls_the_run_makes(
    tmp_path: Path, data_root: Path, stub: Any
) -> None:
    from clineval.config import RunConfig
    from clineval.planner import plan

    config = RunConfig(
        tasks=["ner:ncbi"],
        model=f"openai:stub@{stub.base_url}",
        data_dir=str(data_root),
        limit=2,
        max_retries=0,
    )
    stub.reset()
    stub.script([], default={"do": "ok", "content": '{"entities": []}'})
    out = tmp_path / "run"
    (before,) = plan(config, out)["rows"]
    assert (before["to_send"], before["stored"]) == (2, 0) and not out.exists()
    argv = ["run", "ner:ncbi", "--model", f"openai:stub@{stub.base_url}", "--output-dir"]
    argv += [str(out), "--data-dir", str(data_root), "--limit", "2", "--max-retries", "0"]
    assert main(argv) == 0
    assert stub.stats()["requests"] == 2
    # the run sent the planned requests: each is now found in the store by its key
    with sqlite3.connect(out / "store.sqlite") as conn:
        conn.execute("DELETE FROM records WHERE kind = 'prediction'")
    (after,) = plan(config, out)["rows"]
    assert (after["to_send"], after["stored"]) == (0, 2)
