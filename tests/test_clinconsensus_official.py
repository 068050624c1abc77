"""The authors' judgements file (`<model>_judge.json`) read by the official rules, and the
official label slices (subject_labels, task_labels).

Cases: the fixture cases renamed CC-0001.. (the official id scheme, which the official
positional and prompt_id rules rely on), in a file whose name keeps it a fixture.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from clineval.benchmarks.clinconsensus.cases import fixture_path, load_cases
from clineval.benchmarks.clinconsensus.judgements import (
    FORMAT_OFFICIAL,
    load_official_judgements,
    read_criteria_met,
    read_verdicts,
)
from clineval.cli import main
from clineval.errors import InputError
from clineval.judge.verdict import verdict_key


def _fixture_rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in fixture_path().read_text("utf-8").splitlines()]


def cc_cases(tmp_path: Path, n: int = 4, labels: list[tuple[list[str], list[str]]] | None = None):
    """The first n fixture cases as CC-0001.. (criterion ids kept), optionally relabelled with
    (subject_labels, task_labels) per case."""
    rows = _fixture_rows()[:n]
    for i, row in enumerate(rows):
        row["case_id"] = f"CC-{i + 1:04d}"
        if labels is not None:
            row["subject_labels"], row["task_labels"] = labels[i]
    path = tmp_path / "fixture_cc_cases.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return path, load_cases(path)


def items_for(cases, s: list[int], **extra: Any) -> list[dict[str, Any]]:
    """One official item per case: case_id, and 30 entries of which the first s_i are met."""
    return [
        {
            "case_id": case.case_id,
            "criteria_results": [
                {"criterion_id": r.criterion_id, "criteria_met": j < s_i, "explanation": "x"}
                for j, r in enumerate(case.rubrics)
            ],
            **extra,
        }
        for case, s_i in zip(cases, s, strict=True)
    ]


def write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data, ensure_ascii=False), "utf-8")
    return path


def met_counts(read, cases) -> list[int]:
    return [
        sum(read.met.get(verdict_key(c.case_id, r.criterion_id)) is True for r in c.rubrics)
        for c in cases
    ]


# ---- ids: case_id, id, numeric prompt_id, position ----------------------------------------
@pytest.mark.parametrize(
    ("identify", "why"),
    [
        (lambda i, case: {"case_id": case.case_id}, "case_id"),
        (lambda i, case: {"case_id": f"  {case.case_id} "}, "case_id, stripped"),
        (lambda i, case: {"id": case.case_id}, "id"),
        (lambda i, case: {"case_id": "", "id": case.case_id}, "an empty case_id falls to id"),
        (lambda i, case: {"prompt_id": i + 1}, "numeric prompt_id"),
        (lambda i, case: {"prompt_id": f"{i + 1:03d}"}, "prompt_id written as digits"),
        (lambda i, case: {}, "position"),
        (lambda i, case: {"prompt_id": "p-1"}, "a non-numeric prompt_id falls to position"),
    ],
)
def test_every_id_variant_resolves_its_case(tmp_path: Path, identify, why: str) -> None:
    _, cases = cc_cases(tmp_path)
    s = [30, 7, 6, 10]
    items = items_for(cases, s)
    for i, (item, case) in enumerate(zip(items, cases, strict=True)):
        del item["case_id"]
        item.update(identify(i, case))
    read = load_official_judgements(write(tmp_path / "m_judge.json", items), cases)
    assert read.format == FORMAT_OFFICIAL
    assert met_counts(read, cases) == s, why


def test_ids_resolve_out_of_order_and_numbers_as_text(tmp_path: Path) -> None:
    rows = _fixture_rows()[:3]
    for i, row in enumerate(rows):
        row["case_id"] = 101 + i  # integer ids in the cases file
    path = tmp_path / "fixture_int_ids.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    cases = load_cases(path)
    items = items_for(cases, [1, 2, 3])
    items[0]["case_id"], items[2]["case_id"] = 103, "101"  # swapped, one as a number
    items[0]["criteria_results"], items[2]["criteria_results"] = (
        items[2]["criteria_results"],
        items[0]["criteria_results"],
    )
    read = load_official_judgements(write(tmp_path / "m_judge.json", items), cases)
    assert met_counts(read, cases) == [1, 2, 3]


def test_verdict_list_keys_and_positional_entries(tmp_path: Path) -> None:
    _, cases = cc_cases(tmp_path, n=3)
    items = items_for(cases, [5, 6, 7])
    items[1]["rubric_results"] = items[1].pop("criteria_results")
    items[2]["rubric_judgments"] = items[2].pop("criteria_results")
    items[2]["criteria_results"] = "not a list: the next key is read, as the official script does"
    for entry in items[0]["criteria_results"]:
        del entry["criterion_id"]  # no ids: entry j is criterion j
    items[0]["criteria_results"] = items[0]["criteria_results"][:20]  # 10 criteria missing
    read = load_official_judgements(write(tmp_path / "m_judge.json", items), cases)
    assert met_counts(read, cases) == [5, 6, 7]
    c0 = cases[0]
    assert verdict_key(c0.case_id, c0.rubrics[4].criterion_id) in read.met
    assert verdict_key(c0.case_id, c0.rubrics[25].criterion_id) not in read.met  # absent
    assert read.explanations[verdict_key(c0.case_id, c0.rubrics[0].criterion_id)] == "x"


# ---- criteria_met: the official truthiness, and clineval's judge errors -------------------
def official_truthy(value: Any) -> bool:
    """The official script's reading, restated from its documented behaviour (the oracle)."""
    if value is True:
        return True
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes", "met")
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value != 0
    return False


VALUES: list[tuple[Any, bool | None]] = [
    (True, True),
    (False, False),
    ("true", True),
    (" TRUE ", True),
    ("1", True),
    ("yes", True),
    ("Met", True),
    (1, True),
    (2.5, True),
    (-1, True),
    (0, False),
    (0.0, False),
    ("false", False),
    ("No", False),
    ("0", False),
    ("not met", False),
    ("unmet", False),
    (None, None),
    ("maybe", None),
    ("", None),
    ([True], None),
    ({"met": True}, None),
]


@pytest.mark.parametrize(("value", "expected"), VALUES)
def test_criteria_met_reading(value: Any, expected: bool | None) -> None:
    met, problem = read_criteria_met(value)
    assert met is expected
    assert (problem is None) == (expected is not None)
    if expected is not None:  # a verdict is the official reading, exactly
        assert expected == official_truthy(value)
    else:  # no verdict where the official script silently says "not met"
        assert official_truthy(value) is False


def test_missing_and_non_finite_criteria_met_are_judge_errors() -> None:
    assert read_criteria_met(None, present=False) == (None, "no criteria_met")
    assert read_criteria_met(math.nan)[0] is None
    assert read_criteria_met(math.inf)[0] is None


def test_truthy_strings_end_to_end_with_judge_errors(tmp_path: Path, capsys) -> None:
    """A run on a judgements file counts what the official script counts as met; its lossy
    "not met" for missing / unreadable values is a judge error, unless
    --judge-errors-as-unmet (then the figures are the official ones)."""
    cases_path, cases = cc_cases(tmp_path, n=2)
    values = [v for v, _ in VALUES]  # 22 values, then 8 more criteria: "yes" 4, false 4
    values += ["yes"] * 4 + [False] * 4
    items = items_for(cases, [0, 12])
    for entry, value in zip(items[0]["criteria_results"], values, strict=True):
        entry["criteria_met"] = value
    del items[0]["criteria_results"][17]["criteria_met"]  # the None entry: field absent
    judged = write(tmp_path / "m_judge.json", items)
    met0 = sum(official_truthy(v) for v in values)  # None and the absent field: not met
    errors0 = sum(1 for _, e in VALUES if e is None)
    out = tmp_path / "run"
    base = ["run", "clinconsensus", "--model", f"predictions:{judged}", "--cases", str(cases_path)]
    code = main([*base, "-o", str(out), "--max-judge-error-rate", "1"])
    assert code == 0, capsys.readouterr().err
    res = json.loads((out / "results.json").read_text())["clinconsensus"]
    assert res["judge_errors"] == errors0
    assert res["rubric_accuracy"] == pytest.approx((met0 + 12) / (60 - errors0))
    assert res["n_cases_scored"] == 1  # case 1 has errors: its s is unknown
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["tasks"]["clinconsensus"]["verdicts_format"] == FORMAT_OFFICIAL
    samples = [json.loads(x) for x in (out / "samples.jsonl").read_text().splitlines()]
    errors = [v["error"] for v in samples[0]["verdicts"] if v.get("error")]
    assert any("unreadable criteria_met 'maybe'" in e for e in errors)
    assert any("no criteria_met" in e for e in errors)

    out2 = tmp_path / "run-unmet"
    code = main([*base, "-o", str(out2), "--max-judge-error-rate", "1", "--judge-errors-as-unmet"])
    assert code == 0
    res = json.loads((out2 / "results.json").read_text())["clinconsensus"]
    # the official figures: met counted as the official script counts them, over 30 each
    assert res["rubric_accuracy"] == pytest.approx((met0 + 12) / 60)
    terms = [max(0, s - 6) / 24 for s in (met0, 12)]
    assert res["cacs@7"] == pytest.approx(100 * sum(terms) / 2)


# ---- misaligned lists and bad shapes: one line, the file and the item -----------------------
def _bad(mutate) -> Any:
    def build(cases) -> Any:
        items = items_for(cases, [1, 2, 3, 4])
        return mutate(items)

    return build


BAD: list[tuple[str, Any, str]] = [
    ("short list", _bad(lambda items: items[:3]), "3 item(s) for 4 case(s)"),
    ("long list", _bad(lambda items: [*items, items[0]]), "5 item(s) for 4 case(s)"),
    ("an object", _bad(lambda items: {"items": items}), "one JSON list"),
    (
        "unknown case",
        _bad(lambda items: [*items[:2], {**items[2], "case_id": "CC-0099"}, items[3]]),
        "item 3: case 'CC-0099' (from its case_id) is not in the cases file",
    ),
    (
        "twice the same case",
        _bad(lambda items: [items[0], items[1], {**items[2], "case_id": "CC-0001"}, items[3]]),
        "item 3: case 'CC-0001' again (first in item 1)",
    ),
    ("item not an object", _bad(lambda items: [*items[:3], [1, 2]]), "item 4 is not a JSON"),
    (
        "no verdict list",
        _bad(lambda items: [*items[:1], {"case_id": "CC-0002"}, *items[2:]]),
        "item 2: no verdict list",
    ),
    (
        "entry not an object",
        _bad(
            lambda items: [
                {**items[0], "criteria_results": [*items[0]["criteria_results"][:4], True]},
                *items[1:],
            ]
        ),
        "item 1: verdict entry 5 is not an object",
    ),
    (
        "case_id of a wrong type",
        _bad(lambda items: [{**items[0], "case_id": 1.5}, *items[1:]]),
        "item 1: 'case_id' is not an id",
    ),
    (
        "unknown criterion",
        _bad(
            lambda items: [
                {
                    **items[0],
                    "criteria_results": [
                        {"criterion_id": "zz", "criteria_met": True},
                        *items[0]["criteria_results"][1:],
                    ],
                },
                *items[1:],
            ]
        ),
        "item 1: verdict entry 1: case 'CC-0001' has no criterion_id 'zz'",
    ),
    (
        "criterion twice",
        _bad(
            lambda items: [
                {
                    **items[0],
                    "criteria_results": [
                        *items[0]["criteria_results"],
                        items[0]["criteria_results"][0],
                    ],
                },
                *items[1:],
            ]
        ),
        "item 1: verdict entry 31: second verdict for criterion",
    ),
    (
        "some entries with ids",
        _bad(
            lambda items: [
                {
                    **items[0],
                    "criteria_results": [
                        {"criteria_met": True},
                        *items[0]["criteria_results"][1:],
                    ],
                },
                *items[1:],
            ]
        ),
        "item 1: some verdict entries have a criterion_id and some do not",
    ),
    (
        "too many positional entries",
        _bad(
            lambda items: [
                {**items[0], "criteria_results": [{"criteria_met": True}] * 31},
                *items[1:],
            ]
        ),
        "item 1: 31 verdict entries for 30 criteria",
    ),
]


@pytest.mark.parametrize(("name", "build", "message"), BAD, ids=[b[0] for b in BAD])
def test_bad_shapes_exit_2_naming_file_and_item(
    tmp_path: Path, capsys, name: str, build, message: str
) -> None:
    cases_path, cases = cc_cases(tmp_path)
    judged = write(tmp_path / "m_judge.json", build(cases))
    argv = ["run", "clinconsensus", "--model", f"predictions:{judged}", "--cases", str(cases_path)]
    assert main([*argv, "-o", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {judged}: "), err
    assert message in err and "\n" not in err and "Traceback" not in err
    assert not (tmp_path / "run" / "results.json").exists()


def test_positional_ids_need_the_official_id_scheme(tmp_path: Path) -> None:
    """The official rules derive CC-<position> for an item without ids: with other case ids
    (here the fixture's) such an item resolves to no case, as in the official script."""
    cases = load_cases(fixture_path())[:2]
    items = items_for(cases, [1, 2])
    del items[1]["case_id"]
    with pytest.raises(InputError, match="item 2: case 'CC-0002' \\(from its position\\)"):
        load_official_judgements(write(tmp_path / "m_judge.json", items), cases)


def test_invalid_json_names_its_line_and_jsonl_still_reads(tmp_path: Path) -> None:
    _, cases = cc_cases(tmp_path, n=1)
    broken = tmp_path / "m_judge.json"
    broken.write_text('[\n  {"case_id": "CC-0001",\n  "criteria_results": [}\n]', "utf-8")
    with pytest.raises(InputError) as info:
        read_verdicts(broken, cases)
    assert info.value.line == 3
    rows = [
        {"case_id": "CC-0001", "criterion_id": r.criterion_id, "criteria_met": True}
        for r in cases[0].rubrics
    ]
    jsonl = tmp_path / "verdicts.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    assert read_verdicts(jsonl, cases).format == "verdicts-jsonl"


# ---- official slices: subject_labels and task_labels -------------------------------------
def test_label_slices_hand_computed(tmp_path: Path) -> None:
    labels = [
        (["心内科", "急诊", "心内科"], ["诊断"]),  # a label written twice counts once
        (["心内科"], ["诊断", "用药"]),
        (["急诊"], ["用药"]),
        (["儿科"], []),  # no task label: in no task_labels slice
    ]
    cases_path, cases = cc_cases(tmp_path, labels=labels)
    s = [30, 7, 6, 10]
    judged = write(tmp_path / "m_judge.json", items_for(cases, s))
    out = tmp_path / "run"
    argv = ["run", "clinconsensus", "--model", f"predictions:{judged}", "--cases", str(cases_path)]
    assert main([*argv, "-o", str(out)]) == 0
    slices = json.loads((out / "results.json").read_text())["clinconsensus"]["slices"]
    subject = slices["subject_labels"]
    assert sorted(subject) == ["儿科", "心内科", "急诊"]
    # CACS@7 terms max(0, s - 6) / 24: 30 -> 1, 7 -> 1/24, 6 -> 0, 10 -> 4/24
    assert subject["心内科"]["n_cases"] == 2
    assert subject["心内科"]["cacs@7"] == pytest.approx(100 * (1 + 1 / 24) / 2)
    assert subject["心内科"]["pass@7"] == 1.0
    assert subject["心内科"]["rubric_accuracy"] == pytest.approx(37 / 60)
    assert subject["急诊"]["cacs@7"] == pytest.approx(50.0)
    assert subject["急诊"]["pass@7"] == 0.5
    assert subject["儿科"]["cacs@7"] == pytest.approx(100 * 4 / 24)
    # CACS@10 terms max(0, s - 9) / 21: 30 -> 1, 7 -> 0, 6 -> 0, 10 -> 1/21
    assert subject["儿科"]["cacs@10"] == pytest.approx(100 / 21)
    task = slices["task_labels"]
    assert {k: v["n_cases"] for k, v in task.items()} == {"诊断": 2, "用药": 2}
    assert task["用药"]["cacs@7"] == pytest.approx(100 * (1 / 24) / 2)
    assert task["用药"]["rubric_accuracy"] == pytest.approx(13 / 60)
    # the single-field slices are still there
    assert {"difficulty", "subject", "task", "user_role"} <= set(slices)
    samples = [json.loads(x) for x in (out / "samples.jsonl").read_text().splitlines()]
    assert samples[1]["subject_labels"] == ["心内科"] and samples[1]["task_labels"] == [
        "诊断",
        "用药",
    ]
    assert main(["report", str(out)]) == 0
    html = (out / "report.html").read_text("utf-8")
    assert "By subject label" in html and "Every task label (official slice)" in html


def test_entries_that_say_their_judge_failed_are_judge_errors(tmp_path: Path) -> None:
    """`clineval export` writes a judge error as criteria_met false plus an error; the official
    local judge marks an unparsed reply parse_ok false: no verdict either way."""
    _, cases = cc_cases(tmp_path, n=1)
    items = items_for(cases, [3])
    entries = items[0]["criteria_results"]
    entries[0].update(criteria_met=False, error="unparseable judge reply")
    entries[1].update(criteria_met=None, parse_ok=False)
    entries[2].update(criteria_met=True, parse_ok=True)
    entries[3].update(error="")  # an empty error is no error
    read = load_official_judgements(write(tmp_path / "m_judge.json", items), cases)
    keys = [verdict_key("CC-0001", r.criterion_id) for r in cases[0].rubrics]
    assert [read.met[k] for k in keys[:4]] == [None, None, True, False]
    assert "judge error: unparseable judge reply" in read.problems[keys[0]]
    assert "parse_ok false" in read.problems[keys[1]]
