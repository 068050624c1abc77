"""The judging kit's parts on their own: the stored verdict record keeps the exact shape runs
have always stored (an older run directory resumes and re-scores the same), verdict rows,
reply bounds per judge, matrices of ragged items, the error-rate bound, and a benchmark's own
verdict schema reaching the request. Whole runs through the kit are in test_plugin_judged.py
and the ClinConsensus tests."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

from clineval.benchmarks.judged import (
    Criterion,
    JudgedItem,
    ReplyBounds,
    error_rate_failures,
    verdict_matrix,
)
from clineval.judge.prompt import JudgePrompt
from clineval.judge.run import JudgeOutcome, judge_request
from clineval.judge.verdict import (
    AnswerRecord,
    VerdictRecord,
    VerdictRow,
    judge_of_kind,
    read_verdict_rows,
    verdict_key,
    verdict_kind,
)
from clineval.models.spec import ModelSpec

# What a judge's verdict record and an imported one held before the kit, field for field.
JUDGED = {
    "met": True,
    "explanation": "names the dose",
    "error": None,
    "method": "json",
    "attempts": 2,
    "format": "json_object",
    "usage": {"prompt_tokens": 40, "completion_tokens": 9},
    "judge": "openai:j1",
    "prompt": "clinconsensus-judge-v1",
}
IMPORTED = {"met": None, "explanation": "", "error": "no row", "source": "/x/verdicts.jsonl"}


def test_stored_records_keep_their_shape_both_ways() -> None:
    outcome = JudgeOutcome(
        met=True, explanation="names the dose", method="json", attempts=2, format="json_object"
    )
    outcome.usage.update(prompt_tokens=40, completion_tokens=9)
    written = outcome.record("openai:j1", "clinconsensus-judge-v1").to_stored()
    assert json.dumps(written) == json.dumps(JUDGED)  # the same keys in the same order
    imported = VerdictRecord.imported(None, "", "no row", "/x/verdicts.jsonl").to_stored()
    assert json.dumps(imported) == json.dumps(IMPORTED)
    for stored in (JUDGED, IMPORTED):
        record = VerdictRecord.from_stored(stored)
        assert record is not None and record.to_stored() == stored


def test_answer_records_keep_their_three_shapes() -> None:
    usage = {"prompt_tokens": 3, "prompt_tokens_details": {"cached_tokens": 0}}
    shapes = [
        (AnswerRecord("openai:c", "text", None, True, usage, "stop"),
         {"model": "openai:c", "text": "text", "error": None, "usage": usage,
          "finish_reason": "stop"}),
        (AnswerRecord("openai:c", None, "server: 500"),
         {"model": "openai:c", "text": None, "error": "server: 500"}),
        (AnswerRecord("predictions:a.jsonl", "given"),
         {"model": "predictions:a.jsonl", "text": "given", "error": None}),
    ]  # fmt: skip
    for record, stored in shapes:
        assert json.dumps(record.to_stored()) == json.dumps(stored)
        assert AnswerRecord.from_stored(stored) == record


def test_usable_value_and_foreign_records() -> None:
    record = VerdictRecord.from_stored(JUDGED)
    assert record is not None and record.value == 1.0
    assert record.usable("clinconsensus-judge-v1") and not record.usable("custom-abc")
    error = VerdictRecord.from_stored({**JUDGED, "met": None, "error": "unparseable"})
    assert error is not None and math.isnan(error.value)
    assert not error.usable("clinconsensus-judge-v1")  # no verdict: asked again
    assert VerdictRecord.from_stored("not a record") is None
    odd = VerdictRecord.from_stored({"met": "yes", "usage": {"a": 1, "b": True, "c": "x"}})
    assert odd is not None and odd.met is None and odd.usage == {"a": 1}


def test_keys_and_kinds() -> None:
    assert verdict_key("c|1", "r,2") == '["c|1", "r,2"]'  # JSON: no separator collides
    assert judge_of_kind(verdict_kind("openai:j1")) == "openai:j1"
    assert judge_of_kind("answer") is None


def test_verdict_rows_written_and_read_back() -> None:
    record = VerdictRecord.from_stored({**JUDGED, "met": None, "error": "timeout"})
    row = VerdictRow.row_of("r1", "criterion text", "openai:j1", record)
    assert list(row) == ["criterion_id", "criterion", "met", "explanation", "judge", "error"]
    weighted = VerdictRow("r2", "t", True, "", "j", points=-3.0).to_row()
    assert list(weighted)[:3] == ["criterion_id", "criterion", "points"]
    # an older row spelling "criteria_met", a row without an id, and one that is no object
    rows = read_verdict_rows(
        {"verdicts": [{"criteria_met": True, "judge": "j"}, "junk", {"met": "maybe"}]}
    )
    assert [(r.criterion_id, r.met) for r in rows] == [("0", True), ("2", None)]
    assert read_verdict_rows({"verdicts": None}) == []


@pytest.mark.parametrize(
    ("spec", "max_tokens", "chars", "want"),
    [
        ("llamacpp:/m.gguf", None, None, (664, 200)),  # 3 x 200 + 64
        ("llamacpp:/m.gguf", None, 0, (256, None)),  # 0 = unbounded: the local cap
        ("llamacpp:/m.gguf", 64, 50, (64, 50)),
        ("openai:m@http://127.0.0.1:1/v1", None, None, (1024, None)),
        ("openai:m@http://127.0.0.1:1/v1", None, 50, (1024, 50)),
        ("hf:/ckpt", None, 50, (1024, None)),  # ignores response_format: never bounded
    ],
)
def test_reply_bounds_per_judge(
    spec: str, max_tokens: int | None, chars: int | None, want: tuple[int, int | None]
) -> None:
    bounds = ReplyBounds.of(ModelSpec.parse(spec), max_tokens, chars)
    assert (bounds.max_tokens, bounds.explanation_chars) == want


def test_matrix_of_ragged_items() -> None:
    items = [
        JudgedItem("a", "q", (Criterion("1", "x"), Criterion("2", "y"))),
        JudgedItem("b", "q", (Criterion("1", "x"),)),
    ]
    records = {
        verdict_key("a", "1"): VerdictRecord(True),
        verdict_key("a", "2"): VerdictRecord(None, error="x"),
        verdict_key("b", "1"): VerdictRecord(False),
    }
    got = verdict_matrix(records, items)
    want = np.array([[1.0, np.nan], [0.0, np.nan]])
    assert np.array_equal(got, want, equal_nan=True)
    assert items[1].candidate_messages() == (("user", "q"),)


def test_error_rate_bound_names_the_judge() -> None:
    figures = {
        "": {"judge_error_rate": 0.01, "judge_errors": 1},
        " of openai:j2": {"judge_error_rate": 0.25, "judge_errors": 25},
    }
    assert error_rate_failures(0.05, figures) == [
        "judge error rate of openai:j2 25.00% (25 criteria without a verdict) exceeds "
        "--max-judge-error-rate 5.00%"
    ]
    assert error_rate_failures(0.25, figures) == []


def test_a_benchmarks_own_verdict_schema_reaches_the_request() -> None:
    schema = {
        "type": "object",
        "properties": {
            "criteria_met": {"type": "boolean"},
            "confidence": {"type": "number"},
        },
        "required": ["criteria_met", "confidence"],
    }
    prompt = JudgePrompt(
        "{query} {response} {criterion}", "x-v1", None, False, schema=json.dumps(schema)
    )
    request = judge_request(prompt.messages("q", "a", "c"), prompt.version, "json_schema", 0, 64,
                            schema=prompt.schema)  # fmt: skip
    assert request.response_format is not None
    assert request.response_format["json_schema"]["schema"] == schema
    plain = judge_request(prompt.messages("q", "a", "c"), prompt.version, "json_object", 0, 64,
                          schema=prompt.schema)  # fmt: skip
    assert plain.response_format == {"type": "json_object"}
    with pytest.raises(ValueError, match="criteria_met"):
        JudgePrompt("t", "bad-v1", None, False, schema=json.dumps({"type": "object"}))


def _row_through_object(
    record: VerdictRecord | None, points: float | None, tags: tuple[str, ...]
) -> dict[str, object]:
    if record is None:
        return VerdictRow("c1", "[7] text", None, "", "openai:j", None, points, tags).to_row()
    fields = (record.met, record.explanation, "openai:j", record.error, points, tags)
    return VerdictRow("c1", "[7] text", *fields, record.grade).to_row()


def test_a_verdict_row_made_directly_equals_the_row_object_s() -> None:
    # row_of skips the VerdictRow between (it runs per criterion): every combination of a
    # stored record's fields and of points and tags gives the same keys in the same order
    records: list[VerdictRecord | None] = [None]
    for met, grade, error, explanation in itertools.product(
        (True, False, None), (None, "A>B", 3.0), (None, "", "unparseable reply"), ("", "why")
    ):
        records.append(VerdictRecord(met=met, grade=grade, error=error, explanation=explanation))
    for record, points, tags in itertools.product(
        records, (None, 0.0, -3.0, 7.0), ((), ("axis:accuracy", "level:example"))
    ):
        made = VerdictRow.row_of("c1", "[7] text", "openai:j", record, points, tags)
        expected = _row_through_object(record, points, tags)
        assert list(made.items()) == list(expected.items())
