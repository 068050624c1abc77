"""TCM-SD readers and the normalization table, on the real label files and samples in place."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clineval.benchmarks.tcm_sd.dataset import (
    duplicate_report,
    read_knowledge,
    read_records,
    read_vocab,
    sample_keys,
)
from clineval.benchmarks.tcm_sd.norm import load_norm_table, parse_norm_table
from clineval.errors import InputError


@pytest.fixture(scope="module")
def zy(data_root: Path) -> Path:
    folder = data_root / "tcm-sd" / "zy-bert"
    if not (folder / "syndrome_vocab.txt").is_file():
        pytest.skip("TCM-SD label files not available")
    return folder


@pytest.fixture(scope="module")
def labels(zy: Path) -> list[str]:
    return read_vocab(zy / "syndrome_vocab.txt")


def test_vocab_is_148_labels_in_file_order(zy: Path, labels: list[str]) -> None:
    assert b"\r\n" in (zy / "syndrome_vocab.txt").read_bytes()  # CRLF (docs/data-sources.md)
    assert len(labels) == 148 == len(set(labels))
    assert labels[:3] == ["气虚不摄证", "气虚血瘀证", "湿热下注证"]
    assert labels[-1] == "气虚血溢证"
    assert all(label == label.strip() and label.endswith("证") for label in labels)


def test_norm_table_counts_and_encodings_agree(zy: Path) -> None:
    gbk = load_norm_table(zy / "syndrome.txt")
    utf8 = load_norm_table(zy / "syndrome.utf8.csv")
    assert gbk.rules == utf8.rules
    actions = [rule.action for rule in gbk.rules.values()]
    counts = {a: actions.count(a) for a in ("KEEP", "MERGE", "DELETE", "SUB_MERGE")}
    # the table's action counts as the data's curators counted them (docs/data-sources.md)
    assert counts == {"KEEP": 246, "MERGE": 187, "DELETE": 114, "SUB_MERGE": 1}


def test_norm_table_rules(zy: Path, labels: list[str]) -> None:
    table = load_norm_table(zy / "syndrome.utf8.csv")
    # KEEP, including a KEEP row whose normalized column adds the missing 证
    assert table.normalize("气虚血瘀证") == "气虚血瘀证"
    assert table.normalize("卫气同病") == "卫气同病证"
    # MERGE followed transitively: 风邪袭络证 -> 风痰阻络证 -> 风痰瘀阻证
    assert table.rules["风邪袭络证"].target == "风痰阻络证"
    assert table.normalize("风邪袭络证") == "风痰瘀阻证"
    assert table.normalize("肝郁证") == "肝郁气滞证"  # via 肝气郁结证
    # DELETE drops; a MERGE chain stops at a non-MERGE row even if that row is DELETE
    assert table.normalize("气滞证") is None
    assert table.normalize("气机阻滞证") == "气滞证"
    # SUB_MERGE depends on the disease
    assert table.normalize("脾虚证", lcd_name="崩漏病") == "脾气虚证"
    assert table.normalize("脾虚证", lcd_name="带下病") == "脾虚湿盛证"
    assert table.normalize("脾虚证", lcd_name="眩晕病") is None
    assert table.normalize("脾虚证") is None
    # a name the table does not know passes through for the caller to check
    assert table.normalize(" 不在表中证 ") == "不在表中证"
    # every one of the 148 labels is the outcome of some row
    outcomes = {table.normalize(name, "崩漏病") for name in table.names()}
    outcomes |= {table.normalize(name, "带下病") for name in table.names()}
    assert set(labels) <= outcomes


def test_norm_table_rejects_bad_rows() -> None:
    with pytest.raises(InputError, match=r"t\.csv:2: unknown action"):
        parse_norm_table("甲证,甲证,KEEP,\n乙证,甲证,MAYBE,\n", path="t.csv")
    with pytest.raises(InputError, match=r"^t\.csv: MERGE cycle .*甲证 -> 乙证"):
        parse_norm_table("甲证,乙证,MERGE,\n乙证,甲证,MERGE,\n", path="t.csv")
    with pytest.raises(InputError, match=r":2: duplicate row"):
        parse_norm_table("甲证,甲证,KEEP,\n甲证,NULL,DELETE,\n", path="t.csv")


def test_the_five_sample_records_load_through_the_same_path(zy: Path, labels: list[str]) -> None:
    table = load_norm_table(zy / "syndrome.utf8.csv")
    for name in ("TCM-SD_data_sample.json", "TCM-SD_data_sample_with_knowledge.json"):
        records = read_records(zy / "sample" / name, labels)
        assert len(records) == 5
        for r in records:
            assert r.user_id and r.description and r.detection and r.chief_complaint
            assert r.label in labels and not r.synthetic
            # the release's labels are the table applied to the doctor's syndrome
            assert table.normalize(r.syndrome, r.lcd_name) == r.label
        assert records[0].user_id == "440793" and records[0].lcd_name == "眩晕病"
    merged = [r for r in records if r.syndrome != r.label]
    assert [(r.syndrome, r.label) for r in merged] == [("风痰阻络证", "风痰瘀阻证")]


def _row(**over: object) -> dict[str, object]:
    row: dict[str, object] = {
        "user_id": "1",
        "lcd_id": "BNG070",
        "lcd_name": "眩晕病",
        "syndrome": "气虚血瘀证",
        "chief_complaint": "头晕",
        "description": "头晕十天",
        "detection": "舌暗",
        "norm_syndrome": "气虚血瘀证",
    }
    row.update(over)
    return row


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_record_errors_name_file_and_line(tmp_path: Path, labels: list[str]) -> None:
    good = json.dumps(_row(), ensure_ascii=False)
    cases = {
        "bad json": ([good, "{not json"], r"bad\.json:2: invalid JSON"),
        "missing": ([good, good, json.dumps({"user_id": "2"})], r":3: missing field 'lcd_id'"),
        "outside": (
            [json.dumps(_row(norm_syndrome="感冒证"), ensure_ascii=False)],
            r":1: norm_syndrome '感冒证' is not one of the 148 labels",
        ),
        "array": ([good, "[1, 2]"], r":2: expected a JSON object"),
    }
    for name, (lines, pattern) in cases.items():
        path = _write(tmp_path / ("bad.json" if name == "bad json" else f"{name}.json"), lines)
        with pytest.raises(InputError, match=pattern):
            read_records(path, labels)
    with pytest.raises(InputError, match="data file not found"):
        read_records(tmp_path / "nope.json", labels)


def test_test_no_answer_loads_without_labels(tmp_path: Path, labels: list[str]) -> None:
    row = _row()
    del row["norm_syndrome"], row["syndrome"]
    row["syndrome"] = ""
    path = _write(tmp_path / "test_no_answer.json", [json.dumps(row, ensure_ascii=False)])
    (record,) = read_records(path, labels, require_label=False)
    assert record.label is None
    with pytest.raises(InputError, match="missing field 'norm_syndrome'"):
        read_records(path, labels)


def test_duplicates_are_counted_and_keyed(tmp_path: Path, labels: list[str]) -> None:
    train = read_records(
        _write(
            tmp_path / "train.json",
            [
                json.dumps(_row(user_id="a"), ensure_ascii=False),
                json.dumps(_row(user_id="b", description="别的"), ensure_ascii=False),
            ],
        ),
        labels,
    )
    dev_rows = [
        _row(user_id="a", description="新的"),  # shares an id with train
        _row(user_id="c"),  # same text as train "a"
        _row(user_id="d", description="独有"),
        _row(user_id="d", description="独有"),  # exact repeat inside dev
    ]
    dev = read_records(
        _write(tmp_path / "dev.json", [json.dumps(r, ensure_ascii=False) for r in dev_rows]),
        labels,
    )
    report = duplicate_report(dev, train)
    assert report.as_dict() == {
        "shared_ids_with_train": 1,
        "shared_content_with_train": 1,
        "overlapping_with_train": 2,
        "repeated_ids_within": 1,
        "repeated_content_within": 1,
    }
    assert sample_keys(dev) == ["a", "c", "d", "d#2"]


def test_knowledge_corpus_covers_the_labels(data_root: Path, labels: list[str]) -> None:
    path = data_root / "tcm-sd" / "knowledge" / "syndrome_knowledge_fixed.json.gz"
    if not path.is_file():
        pytest.skip("knowledge corpus not available")
    knowledge = read_knowledge(path)
    assert len(knowledge) == 1027  # entries, per docs/data-sources.md
    assert all(label in knowledge for label in labels)
    assert knowledge["风寒袭肺证"].typical_performance.startswith("咳嗽")


def test_knowledge_reads_json_lines_with_the_original_key(tmp_path: Path) -> None:
    rows = [
        {"Name": "甲证", "Definition": "定义", "Typical_performance": "症", "Common_isease": "病"}
    ]
    path = _write(tmp_path / "syndrome_knowledge.json", [json.dumps(r) for r in rows])
    entry = read_knowledge(path)["甲证"]
    assert (entry.definition, entry.common_disease) == ("定义", "病")


def test_unreadable_label_and_knowledge_files_are_input_errors(tmp_path: Path) -> None:
    vocab = tmp_path / "syndrome_vocab.txt"
    vocab.write_bytes("气虚证\r\n".encode("gbk"))
    with pytest.raises(InputError, match=r"syndrome_vocab\.txt: label vocabulary is not UTF-8"):
        read_vocab(vocab)
    with pytest.raises(InputError, match="cannot read the label vocabulary: Is a directory"):
        read_vocab(tmp_path)
    not_gzip = tmp_path / "syndrome_knowledge_fixed.json.gz"
    not_gzip.write_text("[]", encoding="utf-8")
    with pytest.raises(InputError, match=r"json\.gz: cannot read the knowledge corpus"):
        read_knowledge(not_gzip)
    gbk = tmp_path / "gbk.json"
    gbk.write_bytes(json.dumps({"Name": "甲证"}, ensure_ascii=False).encode("gbk"))
    with pytest.raises(InputError, match="knowledge corpus is not UTF-8"):
        read_knowledge(gbk)
    # an entry without a Name: JSON Lines name the line, an array the entry
    lines = _write(tmp_path / "k.json", [json.dumps({"Name": "甲证"}), "", json.dumps({})])
    with pytest.raises(InputError, match=r"k\.json:3: entry has no Name"):
        read_knowledge(lines)
    array = tmp_path / "a.json"
    array.write_text(json.dumps([{"Name": "甲证"}, {"Definition": "x"}]), encoding="utf-8")
    with pytest.raises(InputError, match=r"a\.json: entry 2 of the array has no Name"):
        read_knowledge(array)
