"""The kit's one predictions reader with a row parser, and its one `pending`: what a benchmark
with richer lines (NER's spans) plugs in, and what every built-in asks of the store."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from clineval.benchmarks import PREDICTION, InputError, RunContext, pending, read_predictions
from clineval.store import RunStore


def _file(tmp_path: Path, rows: list[dict[str, Any]]) -> Path:
    path = tmp_path / "p.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _total(sample_id: str, row: dict[str, Any]) -> int:
    values = row.get("values")
    if not isinstance(values, list) or not all(isinstance(v, int) for v in values):
        raise InputError(f'"values" of {sample_id} must be a list of integers')
    return sum(values)


def test_a_row_parser_makes_each_value(tmp_path: Path) -> None:
    path = _file(tmp_path, [{"id": "a", "values": [1, 2]}, {"id": 7, "values": []}])
    assert read_predictions(path, {"a", "7"}, parse=_total) == {"a": 3, "7": 0}
    # the selected ids only, every line still checked
    assert read_predictions(path, {"a", "7"}, selected={"7"}, parse=_total) == {"7": 0}


def test_a_parser_refusal_names_the_file_and_line(tmp_path: Path) -> None:
    path = _file(tmp_path, [{"id": "a", "values": [1]}, {"id": "b", "values": "x"}])
    with pytest.raises(InputError) as info:
        read_predictions(path, {"a", "b"}, parse=_total)
    assert info.value.one_line() == f'{path}:2: "values" of b must be a list of integers'


def test_a_parser_error_with_its_own_place_keeps_it(tmp_path: Path) -> None:
    def reads_another_file(sample_id: str, row: dict[str, Any]) -> Any:
        raise InputError("not found", path=tmp_path / "other.txt")

    path = _file(tmp_path, [{"id": "a"}])
    with pytest.raises(InputError) as info:
        read_predictions(path, {"a"}, parse=reads_another_file)
    assert info.value.one_line() == f"{tmp_path / 'other.txt'}: not found"


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([{"values": []}], ':1: expected the key "id"'),
        ([{"id": True, "values": []}], ':1: "id" must be a string'),
        ([{"id": "z", "values": []}], ":1: unknown id 'z' (not a document)"),
        ([{"id": "a", "values": []}, {"id": "a", "values": []}], ":2: id 'a' given twice"),
    ],
)
def test_the_id_checks_come_before_the_parser(
    tmp_path: Path, rows: list[dict[str, Any]], message: str
) -> None:
    calls: list[str] = []

    def parse(sample_id: str, row: dict[str, Any]) -> int:
        calls.append(sample_id)
        return 0

    path = _file(tmp_path, rows)
    with pytest.raises(InputError) as info:
        read_predictions(path, {"a"}, parse=parse, noun="document")
    assert message in info.value.one_line()
    assert calls == (["a"] if len(rows) == 2 else [])  # a refused id never reaches the parser


def test_one_of_field_and_parse(tmp_path: Path) -> None:
    path = _file(tmp_path, [])
    with pytest.raises(TypeError):
        read_predictions(path, {"a"})
    with pytest.raises(TypeError):
        read_predictions(path, {"a"}, "answer", parse=_total)


def test_pending_takes_ids_or_samples_with_their_id(tmp_path: Path) -> None:
    with RunStore(tmp_path / "store.sqlite") as store:
        store.put_records("t", PREDICTION, [("b", {"pred": 1})])
        store.put_records("t", "answer", [("c", "x")])
        ctx = cast(RunContext, SimpleNamespace(store=store))
        assert pending(ctx, "t", ["a", "b", "c"]) == ["a", "c"]
        samples = [{"id": "c"}, {"id": "b"}, {"id": "a"}]
        assert pending(ctx, "t", samples, lambda s: s["id"]) == [{"id": "c"}, {"id": "a"}]
        assert pending(ctx, "t", ["a", "b", "c"], kind="answer") == ["a", "b"]
        assert pending(ctx, "other", ["b"]) == ["b"]
