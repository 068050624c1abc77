"""The run store is a real SQLite file: writes survive reopening; keys are canonical."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from clineval.errors import InputError
from clineval.store import RunStore, stable_hash


def test_records_calls_and_artifacts_survive_reopen(tmp_path: Path) -> None:
    with RunStore.in_dir(tmp_path) as store:
        store.put_record("ner:ncbi", "prediction", "123", {"entities": [[0, 3, "condition"]]})
        store.put_records("ner:ncbi", "prediction", [("124", {"entities": []}), ("125", None)])
        store.put_call("k1", "openai:m", {"messages": ["hi"]}, {"text": "ok"}, {"total": 3})
        store.put_artifact("crf", b"\x00\x01", {"n": 1})
    with RunStore.in_dir(tmp_path) as store:
        assert store.records("ner:ncbi", "prediction") == {
            "123": {"entities": [[0, 3, "condition"]]},
            "124": {"entities": []},
            "125": None,
        }
        assert store.get_call("k1") == {"response": {"text": "ok"}, "usage": {"total": 3}}
        assert store.get_call("missing") is None
        assert store.get_artifact("crf") == b"\x00\x01"
        assert store.count_calls() == 1
    mode = sqlite3.connect(tmp_path / "store.sqlite").execute("PRAGMA journal_mode").fetchone()
    assert mode[0] == "wal"


def test_stable_hash_ignores_key_order_but_not_values() -> None:
    assert stable_hash({"a": 1, "b": [1, 2]}) == stable_hash({"b": [1, 2], "a": 1})
    assert stable_hash({"a": 1}) != stable_hash({"a": 2})


def test_jsonl_reader_names_file_and_line_for_each_fault(tmp_path: Path) -> None:
    import pytest

    from clineval.errors import InputError
    from clineval.jsonl import iter_json_objects

    path = tmp_path / "x.jsonl"
    path.write_bytes('\ufeff{"a": 1}\n\n{"b": 2}\n'.encode())
    assert list(iter_json_objects(path)) == [(1, {"a": 1}), (3, {"b": 2})]
    cases = {
        b'{"a": 1}\n{"a": \n': ":2: invalid JSON",
        b'{"a": 1}\n[1, 2]\n': ":2: expected a JSON object",
        b'{"a": 1}\n{"a": "\xff"}\n': ":2: not UTF-8 text",
    }
    for content, expected in cases.items():
        path.write_bytes(content)
        with pytest.raises(InputError) as info:
            list(iter_json_objects(path))
        assert expected in info.value.one_line() and str(path) in info.value.one_line()
    with pytest.raises(InputError, match="not found"):
        list(iter_json_objects(tmp_path / "missing.jsonl"))
    with pytest.raises(InputError, match="directory"):
        list(iter_json_objects(tmp_path))


def _full_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every store connection opened from now on can grow by no page: SQLite's own
    SQLITE_FULL ("database or disk is full"), as on a full disk, with its automatic rollback."""
    connect = RunStore._connect

    def capped(self: RunStore) -> sqlite3.Connection:
        conn = connect(self)
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count={pages}")
        return conn

    monkeypatch.setattr(RunStore, "_connect", capped)


def test_a_full_disk_is_reported_not_hidden_by_the_rollback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with RunStore(tmp_path / "s.sqlite"):
        pass  # the schema, before the disk fills
    _full_disk(monkeypatch)
    big = "x" * 100_000
    with RunStore(tmp_path / "s.sqlite") as store:
        with pytest.raises(InputError, match="disk is full"):
            store.put_calls([("k", "m", "{}", {"text": big}, None)])
        with pytest.raises(InputError, match="disk is full"):
            store.put_records("t", "answer", [("a", big)])
        assert store.count_calls() == 0  # rolled back, the store still works
