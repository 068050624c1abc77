"""The TCM-SD answer parser: a table of replies and what must come out of them."""

from __future__ import annotations

from pathlib import Path

import pytest

from clineval.benchmarks.tcm_sd.answer import AnswerParser, build_messages
from clineval.benchmarks.tcm_sd.dataset import TcmRecord, read_vocab
from clineval.benchmarks.tcm_sd.norm import NormTable, load_norm_table


@pytest.fixture(scope="module")
def labels(data_root: Path) -> list[str]:
    path = data_root / "tcm-sd" / "zy-bert" / "syndrome_vocab.txt"
    if not path.is_file():
        pytest.skip("TCM-SD label files not available")
    return read_vocab(path)


@pytest.fixture(scope="module")
def norm(data_root: Path) -> NormTable:
    return load_norm_table(data_root / "tcm-sd" / "zy-bert" / "syndrome.utf8.csv")


@pytest.fixture(scope="module")
def parser(labels: list[str], norm: NormTable) -> AnswerParser:
    return AnswerParser(labels, norm)


# (reply, disease, expected label or None, expected status)
CASES = [
    ("气虚血瘀证", None, "气虚血瘀证", "exact"),
    ("  气虚血瘀证\n", None, "气虚血瘀证", "exact"),
    ("气虚血瘀证。", None, "气虚血瘀证", "exact"),
    ("「气虚血瘀证」", None, "气虚血瘀证", "exact"),
    ("“气虚血瘀证”", None, "气虚血瘀证", "exact"),
    ("【气虚血瘀证】", None, "气虚血瘀证", "exact"),
    ("**气虚血瘀证**", None, "气虚血瘀证", "exact"),
    ("答案：气虚血瘀证", None, "气虚血瘀证", "exact"),
    ("答案: 气虚血瘀证", None, "气虚血瘀证", "exact"),
    ("证型：气虚血瘀证！", None, "气虚血瘀证", "exact"),
    ("Answer: 气虚血瘀证", None, "气虚血瘀证", "exact"),
    ("最终答案为：气虚血瘀证", None, "气虚血瘀证", "exact"),
    (
        "分析：患者乏力、舌暗，考虑气滞血瘀证或气虚血瘀证。\n答案：气虚血瘀证",
        None,
        "气虚血瘀证",
        "exact",
    ),
    ("<think>也许是气滞血瘀证</think>\n气虚血瘀证", None, "气虚血瘀证", "exact"),
    ("气虚血瘀证\n理由：乏力明显，不同于气滞血瘀证。", None, "气虚血瘀证", "exact"),
    ("风痰阻络证\n（即风痰瘀阻证）", None, "风痰瘀阻证", "normalized"),
    ("考虑：\n气虚血瘀证或气滞血瘀证", None, None, "invalid"),
    ("根据症状分析，该患者属于气虚血瘀证。", None, "气虚血瘀证", "found"),
    ('{"syndrome": "湿热下注证"}', None, "湿热下注证", "exact"),
    ("证型：气虚血瘀证（依据：舌紫暗，脉涩）", None, "气虚血瘀证", "found"),
    ("该患者为脾气虚证。", None, "脾气虚证", "found"),  # not the shorter 气虚证 inside it
    ("辨证为肺肾气虚证", None, "肺肾气虚证", "found"),  # not 肾气虚证 inside it
    # the normalization table
    ("风痰阻络证", None, "风痰瘀阻证", "normalized"),
    ("答案：风邪袭络证", None, "风痰瘀阻证", "normalized"),  # MERGE followed transitively
    ("患者证属风痰阻络证。", None, "风痰瘀阻证", "found"),
    ("脾虚证", "崩漏病", "脾气虚证", "normalized"),
    ("脾虚证", "带下病", "脾虚湿盛证", "normalized"),
    ("脾虚证", "眩晕病", None, "invalid"),  # SUB_MERGE: dropped for other diseases
    ("气滞证", None, "气滞证", "exact"),  # a label first, even though its table row is DELETE
    ("肺热津伤证", None, None, "invalid"),  # DELETE
    ("气虚血瘀", None, "气虚血瘀证", "normalized"),  # the whole answer without its 证
    # never guess
    ("不是气虚血瘀证，而是气滞血瘀证", None, None, "invalid"),
    ("气虚血瘀证或气滞血瘀证", None, None, "invalid"),
    ("答案：气虚血瘀证、气滞血瘀证", None, None, "invalid"),
    ("我无法判断。", None, None, "invalid"),
    ("", None, None, "invalid"),
    ("气虚", None, "气虚证", "normalized"),  # the same rule: the whole answer is 气虚(证)
    ("考虑气虚", None, None, "invalid"),  # ... but never inside prose
    ("血瘀证", None, None, "invalid"),  # not a label, not in the table
]


@pytest.mark.parametrize(("reply", "disease", "label", "status"), CASES)
def test_parse_answer_table(
    parser: AnswerParser, reply: str, disease: str | None, label: str | None, status: str
) -> None:
    answer = parser.parse(reply, disease)
    assert (answer.label, answer.status) == (label, status)
    if label is None:
        assert answer.reason


def test_full_width_forms_are_read(parser: AnswerParser) -> None:
    # full-width colon, space and letters around the label
    assert parser.parse("ＡＮＳＷＥＲ：　气虚血瘀证　").label == "气虚血瘀证"
    assert parser.parse("答案＝气虚血瘀证").label == "气虚血瘀证"


def test_without_a_table_only_labels_count(labels: list[str]) -> None:
    bare = AnswerParser(labels, None)
    assert bare.parse("风痰阻络证").label is None
    assert bare.parse("气虚血瘀证").label == "气虚血瘀证"


def test_prompt_lists_every_label_and_the_record(labels: list[str]) -> None:
    record = TcmRecord("1", "X", "眩晕病", "s", "头晕三天", "患者头晕", "舌暗", "气虚血瘀证")
    (system, sys_text), (user, text) = build_messages(
        record, labels, ("chief_complaint", "description")
    )
    assert (system, user) == ("system", "user") and sys_text
    assert all(label in text for label in labels)
    assert "主诉：头晕三天" in text and "现病史：患者头晕" in text
    assert "舌暗" not in text  # detection only when asked for


# --- tcm.answer_mapping=mrc: the authors' run_tcm_mrc.py rule ---------------------------------


def test_mrc_answer_hand_cases() -> None:
    from clineval.benchmarks.tcm_sd.scoring import mrc_answer

    labels = ["甲证", "乙证", "甲乙证"]
    # vocabulary order decides, not the position in the answer
    assert mrc_answer("乙证和甲证", labels) == ("甲证", "contained")
    # "甲乙证" is inside, but so is "乙证", which comes first in the vocabulary
    assert mrc_answer("证属甲乙证候", labels) == ("乙证", "contained")
    assert mrc_answer("证属甲乙证候", ["甲乙证", "乙证"]) == ("甲乙证", "contained")
    assert mrc_answer("乙证", labels) == ("乙证", "contained")
    assert mrc_answer("不知道", labels) == ("甲证", "label_0")  # nothing contained: label 0
    assert mrc_answer("", labels) == ("甲证", "label_0")
