"""Real TCM-SD text must not spread from a model's reply into samples.jsonl and reports."""

from __future__ import annotations

from clineval.benchmarks.tcm_sd.scoring import RAW_OUTPUT_SHOWN, _clip_raw_output


def test_short_replies_are_kept_whole() -> None:
    assert _clip_raw_output("答案：气虚血瘀证") == "答案：气虚血瘀证"


def test_long_replies_are_clipped_and_say_where_the_rest_is() -> None:
    echoed_record = "患者" * 200  # 400 characters, as if the model repeated the record
    clipped = _clip_raw_output(echoed_record)
    assert clipped.startswith(echoed_record[:RAW_OUTPUT_SHOWN])
    assert echoed_record[: RAW_OUTPUT_SHOWN + 1] not in clipped
    assert clipped.endswith(f"[{400 - RAW_OUTPUT_SHOWN} more characters in the run store]")
