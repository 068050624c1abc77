"""The end of a judged run says what was asked for: its cost, each judge's figures and their
agreement, and the answers cut at max_tokens, empty or repeating (also in results.json and
the report). Against the real stub server (tests/llm_stub_server.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from llm_stub_server import StubServer

from clineval.benchmarks.answer_checks import answer_checks, answers_note, is_repeating
from clineval.benchmarks.clinconsensus.cases import fixture_path
from clineval.cli import main
from clineval.judge.verdict import AnswerRecord

LOOP = "患者应多休息，注意饮食。" * 12  # what a small model that loops writes
PROSE = (
    "The patient reports three days of fever and a productive cough. Examine the chest, "
    "order a blood count and a chest radiograph, and start fluids. 若症状加重，应及时复诊，"
    "并根据药敏结果调整抗生素的使用。"
)


def test_repeating_by_hand() -> None:
    assert is_repeating(LOOP)
    assert not is_repeating(PROSE)
    assert not is_repeating("好。" * 20)  # 40 characters: too short to call
    # distinct 8-character sequences / all: 12 of 137 in the loop (144 characters)
    grams = [LOOP[i : i + 8] for i in range(len(LOOP) - 7)]
    assert (len(set(grams)), len(grams)) == (12, 137)


def test_answer_checks_by_hand() -> None:
    records = [
        AnswerRecord("m", LOOP, None, True, {}, "length"),  # cut and repeating
        AnswerRecord("m", PROSE, None, True, {}, "stop"),
        AnswerRecord("m", "  \n", None, True, {}, "stop"),  # empty
        AnswerRecord("m", None, "timeout"),  # no answer: not counted here
        None,
    ]
    counts = answer_checks(records)
    assert counts == {"answers": 3, "cut_at_max_tokens": 1, "empty": 1, "repeating": 1}
    note = answers_note(counts)
    assert note is not None and note.startswith("of 3 answers, 1 cut at max_tokens")
    assert answers_note({"answers": 2, "cut_at_max_tokens": 0, "empty": 0, "repeating": 0}) is None


@pytest.fixture(scope="module")
def stub() -> Iterator[StubServer]:
    with StubServer() as server:
        yield server


def test_a_judged_run_ends_with_cost_judges_agreement_and_flagged_answers(
    stub: StubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(
        json.dumps({m: {"input_per_1m": 1.0, "output_per_1m": 2.0} for m in ("cand", "j1", "j2")})
    )
    stub.reset()
    # the two answers come first (every judge call needs its answer): both loop, cut at the cap
    cut = {"do": "ok", "content": LOOP, "finish_reason": "length"}
    stub.script([cut, cut], default={"do": "ok"})
    out = tmp_path / "run"
    argv = ["run", "clinconsensus", "--model", f"openai:cand@{stub.base_url}"]
    argv += ["--judge", f"openai:j1@{stub.base_url}", "--judge", f"openai:j2@{stub.base_url}"]
    argv += ["--cases", str(fixture_path()), "--limit", "2", "--concurrency", "4"]
    argv += ["--option", "clinconsensus.max_criteria=3", "--price-table", str(prices)]
    assert main([*argv, "--max-judge-error-rate", "1", "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    flat = " ".join(printed.split())
    results = json.loads((out / "results.json").read_text())["clinconsensus"]
    usage = json.loads((out / "manifest.json").read_text())["llm_usage"]

    checks = results["answer_checks"]
    assert checks == {"answers": 2, "cut_at_max_tokens": 2, "empty": 0, "repeating": 2}
    assert 'of 2 answers, 2 cut at max_tokens (finish_reason "length"), 2 repeating' in flat

    # each judge's figures, as results.json holds them, and their agreement
    for label in ("openai:j1", "openai:j2"):
        figure = results["per_judge"][label]["rubric_accuracy"]
        assert f"clinconsensus: judge {label}: " in printed
        line = next(x for x in printed.splitlines() if f"judge {label}:" in x)
        assert f"rubric_accuracy {figure:.4f}" in line
    agreement = results["agreement"]["mean_percent_agreement"]
    assert f"judges agree on {agreement:.1%} of verdicts" in flat

    # the cost, as the manifest computed it from the stored calls
    assert usage["calls"] == 2 + 2 * 2 * 3
    assert (
        f"model calls: {usage['calls']:,} ({usage['prompt_tokens']:,} prompt + "
        f"{usage['completion_tokens']:,} completion tokens); estimated cost "
        f"{usage['estimated_cost']:,.4f}" in flat
    )
    assert usage["estimated_cost"] > 0

    # the report shows the flagged answers too
    report = tmp_path / "report.html"
    assert main(["report", str(out), "-o", str(report)]) == 0
    assert "2 cut at max_tokens" in report.read_text(encoding="utf-8")
