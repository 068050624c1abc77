"""`clineval head-to-head`: finished runs of one generative task judged against each other.

The input runs are ClinConsensus FIXTURE runs (4 synthetic cases) whose candidates are stub
models with fixed answers of different lengths ("ALPHA ...", "BETA ...", "GAMMA ..."). The
head-to-head judge is the stub's rules on the prompt it receives: each rule names the item
(by its question's start) and which run's answer stands in position A and in B, so every
verdict is set by the test and the expected figures are worked out from that table alone.
Bradley-Terry strengths are checked against a statsmodels binomial GLM (logit link, no
intercept) fitted on the same table.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from llm_stub_server import StubServer
from run_probe import kill_once_stored

from clineval.benchmarks.clinconsensus.cases import fixture_path
from clineval.cli import main
from clineval.store import STORE_FILENAME

TASK = "head-to-head"
ANSWERS = {
    "alpha": "ALPHA: go to the emergency department now.",
    "beta": "BETA: " + "a much longer answer that says the same thing in many more words. " * 6,
    "gamma": "GAMMA: see a doctor today, this needs checking.",
}
FAST_POLL = ["--option", "llm.batch_poll_s=0.01", "--option", "llm.batch_poll_max_s=0.05"]
Table = Callable[[int, str, str], str]  # (item index, run in A, run in B) -> "A" / "B" / "C"


@pytest.fixture(scope="module")
def stub() -> Iterator[StubServer]:
    with StubServer(latency=0.0) as server:
        yield server


@pytest.fixture(scope="module")
def runs(stub: StubServer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Three finished FIXTURE runs of ClinConsensus, one per candidate."""
    root = tmp_path_factory.mktemp("h2h-inputs")
    rules = [{"model": m, "content": text} for m, text in ANSWERS.items()]
    stub.reset()
    stub.script([], default={"do": "ok", "rules": rules})
    out = {}
    for name in ANSWERS:
        out[name] = root / name
        argv = ["--quiet", "run", "clinconsensus", "--model", f"openai:{name}@{stub.base_url}"]
        argv += ["--judge", f"openai:cc-judge@{stub.base_url}", "--cases", str(fixture_path())]
        assert main([*argv, "--limit", "4", "--output-dir", str(out[name])]) == 0
    return out


def questions(run: Path) -> list[str]:
    rows = map(json.loads, (run / "samples.jsonl").read_text().splitlines())
    return [row["query"] for row in rows]


def rules_of(table: Table, queries: list[str]) -> list[dict[str, Any]]:
    """A stub rule per (item, run in A, run in B): the judge's verdict from the table."""
    out = []
    for k, query in enumerate(queries):
        head = re.escape(query[:24])
        for a in ANSWERS:
            for b in ANSWERS:
                if a == b:
                    continue
                prompt = (
                    rf"{head}[\s\S]*Assistant A's Answer\]\s*{a.upper()}:"
                    rf"[\s\S]*Assistant B's Answer\]\s*{b.upper()}:"
                )
                out.append({"prompt": prompt, "content": f"Reasons.\n[[{table(k, a, b)}]]"})
    return out


def judge_with(stub: StubServer, table: Table, queries: list[str], **behaviour: Any) -> None:
    stub.reset()
    stub.script([], default={"do": "ok", "rules": rules_of(table, queries), **behaviour})


def h2h(*args: str) -> int:
    return main(["--quiet", "head-to-head", *args])


def results(run: Path) -> dict[str, Any]:
    return dict(json.loads((run / "results.json").read_text())[TASK])


def outcome(table: Table, k: int, x: str, y: str) -> tuple[float, float]:
    """x's score in the game with x in A, then in the game with x in B (1 win, .5 tie)."""
    first = {"A": 1.0, "B": 0.0, "C": 0.5}[table(k, x, y)]
    second = {"A": 0.0, "B": 1.0, "C": 0.5}[table(k, y, x)]
    return first, second


def statsmodels_strengths(
    table: Table, runs: list[str], items: int, controlled: bool
) -> tuple[dict[str, float], float | None]:
    """The Bradley-Terry fit as a binomial GLM on every game: +1 for the run in `a`, -1 for
    the other, a tie y = 0.5; optionally the standardised normalised length difference."""
    import statsmodels.api as sm

    x_rows, y, diff = [], [], []
    for i, a in enumerate(runs):
        for b in runs[i + 1 :]:
            for k in range(items):
                for score in outcome(table, k, a, b):
                    row = np.zeros(len(runs))
                    row[runs.index(a)], row[runs.index(b)] = 1.0, -1.0
                    x_rows.append(row[1:])
                    y.append(score)
                    la, lb = len(ANSWERS[a]), len(ANSWERS[b])
                    diff.append((la - lb) / (la + lb))
    x = np.array(x_rows)
    if controlled:
        d = np.array(diff)
        x = np.column_stack([x, (d - d.mean()) / d.std()])
    fit = sm.GLM(np.array(y), x, family=sm.families.Binomial()).fit(tol=1e-12)
    strengths = np.concatenate([[0.0], fit.params[: len(runs) - 1]])
    strengths -= strengths.mean()
    return dict(zip(runs, strengths, strict=True)), float(fit.params[-1]) if controlled else None


def prefers(run: str) -> Table:
    """A judge that prefers `run` wherever it stands, and ties the other games."""
    return lambda k, a, b: "A" if a == run else "B" if b == run else "C"


def test_a_judge_preferring_a_run_wherever_it_stands(
    runs: dict[str, Path], stub: StubServer, tmp_path: Path
) -> None:
    queries = questions(runs["alpha"])
    judge_with(stub, prefers("alpha"), queries)
    out = tmp_path / "h2h"
    args = [str(runs["alpha"]), str(runs["beta"]), "--judge", f"openai:jj@{stub.base_url}"]
    assert h2h(*args, "-o", str(out), "--dry-run") == 0
    assert not out.exists() and stub.stats()["requests"] == 0
    assert h2h(*args, "-o", str(out)) == 0
    # no candidate call: 4 items, two orders each, all to the judge
    assert stub.stats()["by_model"] == {"jj": 8}
    got = results(out)
    assert got["win_rate"] == 1.0 and got["position_consistency"] == 1.0
    assert got["win_rate_ci"] == [1.0, 1.0] and got["tie_rate"] == 0.0
    assert list(got["pairs"]) == ["alpha vs beta"] and got["n_items"] == 4
    # the compared runs are fixture runs: so is their comparison
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["tasks"][TASK]["fixture"] is True
    rows = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert {r["item"] for r in rows} == {f"fixture-00{i}" for i in range(1, 5)}
    assert all(r["answer"] == ANSWERS["alpha"] and r["reference"] == ANSWERS["beta"] for r in rows)
    # rerunning the same command asks nothing; report and score work on the run
    assert h2h(*args, "-o", str(out)) == 0
    assert stub.stats()["requests"] == 8
    assert main(["--quiet", "score", str(out)]) == 0
    assert results(out)["win_rate"] == 1.0
    assert main(["--quiet", "report", str(out), "-o", str(tmp_path / "r.html")]) == 0
    page = (tmp_path / "r.html").read_text()
    assert "Every pair of runs" in page and "Ranking" in page

    # --reuse: another judge over the same pairs, nothing asked of the first one again
    judge_with(stub, lambda k, a, b: "A", queries)
    always = tmp_path / "always-a"
    again = [str(runs["alpha"]), str(runs["beta"]), "--judge", f"openai:ja@{stub.base_url}"]
    assert h2h(*again, "-o", str(always), "--reuse", str(out)) == 0
    assert stub.stats()["by_model"] == {"ja": 8}
    got = results(always)
    # always [[A]]: every item a win then a loss; the two orders disagree: a tie
    assert got["win_rate"] == 0.5 and got["position_consistency"] == 0.0


@pytest.mark.slow
def test_three_runs_bradley_terry_against_statsmodels(
    runs: dict[str, Path], stub: StubServer, tmp_path: Path
) -> None:
    queries = questions(runs["alpha"])
    strength = {"alpha": 2, "gamma": 1, "beta": 0}

    def table(k: int, a: str, b: str) -> str:
        better = "A" if strength[a] > strength[b] else "B"
        return [better, better if better == "A" else "C", "A", "C"][k]

    judge_with(stub, table, queries)
    out = tmp_path / "three"
    names = list(ANSWERS)
    assert h2h(*(str(runs[n]) for n in names), "--judge", f"openai:jj@{stub.base_url}",
               "-o", str(out)) == 0  # fmt: skip
    assert stub.stats()["by_model"] == {"jj": 3 * 4 * 2}
    got = results(out)
    for pair, figures in got["pairs"].items():
        a, b = figures["run"], figures["other"]
        games = [outcome(table, k, a, b) for k in range(4)]
        # MT-bench: two orders that disagree are a tie
        expected = np.mean([f if f == s else 0.5 for f, s in games])
        assert figures["win_rate"] == pytest.approx(expected), pair
        assert figures["position_consistency"] == np.mean([f == s for f, s in games])
    for key, controlled in (("bradley_terry", False), ("bradley_terry_length_controlled", True)):
        oracle, coefficient = statsmodels_strengths(table, names, 4, controlled)
        fitted = got[key]["strengths"]
        for name in names:
            assert fitted[name]["strength"] == pytest.approx(oracle[name], abs=1e-6)
            low, high = fitted[name]["ci"]
            assert low <= fitted[name]["strength"] <= high
        if controlled:
            assert got["length_effect"] == pytest.approx(coefficient, abs=1e-6)
    order = list(got["bradley_terry"]["strengths"])
    assert order == sorted(names, key=lambda n: -strength[n])


def test_a_longer_run_judged_equal_gains_nothing_from_length(
    runs: dict[str, Path], stub: StubServer, tmp_path: Path
) -> None:
    """beta's answers are the longest by far; the judge ties every game beta plays and
    splits alpha vs gamma: no strength for beta and a length coefficient of 0."""
    queries = questions(runs["alpha"])

    def table(k: int, a: str, b: str) -> str:
        if "beta" in (a, b):
            return "C"
        return ["A", "B", "A", "B"][k] if a == "alpha" else ["B", "A", "B", "A"][k]

    judge_with(stub, table, queries)
    out = tmp_path / "equal"
    names = list(ANSWERS)
    assert h2h(*(str(runs[n]) for n in names), "--judge", f"openai:jj@{stub.base_url}",
               "-o", str(out)) == 0  # fmt: skip
    got = results(out)
    controlled = got["bradley_terry_length_controlled"]["strengths"]
    oracle, coefficient = statsmodels_strengths(table, names, 4, True)
    assert got["length_effect"] == pytest.approx(coefficient, abs=1e-6)
    assert got["length_effect"] == pytest.approx(0.0, abs=1e-6)
    for name in names:
        assert controlled[name]["strength"] == pytest.approx(0.0, abs=1e-6)
        assert controlled[name]["strength"] == pytest.approx(oracle[name], abs=1e-6)
    assert got["pairs"]["alpha vs beta"]["win_rate"] == 0.5


def test_batch_mode(runs: dict[str, Path], stub: StubServer, tmp_path: Path) -> None:
    judge_with(stub, prefers("beta"), questions(runs["alpha"]))
    out = tmp_path / "batch"
    assert h2h(str(runs["alpha"]), str(runs["beta"]), "--judge", f"openai:jj@{stub.base_url}",
               "-o", str(out), "--batch", *FAST_POLL) == 0  # fmt: skip
    assert stub.stats()["batches"] == 1  # both orders of every item in one round
    got = results(out)
    assert got["win_rate"] == 0.0 and got["position_consistency"] == 1.0


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONUNBUFFERED": "1"}


@pytest.mark.slow
def test_kill_and_resume_asks_no_call_twice(
    runs: dict[str, Path], stub: StubServer, tmp_path: Path
) -> None:
    queries = questions(runs["alpha"])
    out = tmp_path / "killed"
    argv = [sys.executable, "-m", "clineval", "--quiet", "head-to-head"]
    argv += [str(runs[n]) for n in ANSWERS]
    argv += ["--judge", f"openai:jj@{stub.base_url}", "-o", str(out), "--concurrency", "2"]
    judge_with(stub, prefers("gamma"), queries, latency=0.2)
    finished = kill_once_stored(argv, _env(), out / STORE_FILENAME, 5)
    assert 5 <= len(finished) < 24

    judge_with(stub, prefers("gamma"), queries)
    resumed = subprocess.run(argv, env=_env(), capture_output=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr.decode()[-2000:]
    by_key = stub.stats()["by_key"]
    assert {k for k in finished if by_key.get(k, 0) != 0} == set()  # nothing asked twice
    assert len(by_key) + len(finished) >= 24 and set(stub.stats()["by_model"]) == {"jj"}
    got = results(out)
    assert got["pairs"]["beta vs gamma"]["win_rate"] == 0.0
    assert got["pairs"]["alpha vs gamma"]["position_consistency"] == 1.0


def test_refusals_are_one_line(
    runs: dict[str, Path], stub: StubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    judge = ["--judge", f"openai:jj@{stub.base_url}"]
    a, b = str(runs["alpha"]), str(runs["beta"])

    def refused(*args: str) -> str:
        capsys.readouterr()
        assert h2h(*args) == 2
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), lines
        return lines[0]

    assert "two or more" in refused(a, *judge, "-o", str(tmp_path / "x"))
    assert "--output-dir" in refused(a, b, *judge)
    assert "-o: must not be empty" in refused(a, b, *judge, "-o", " ")
    assert "RUN_DIR: must not be empty" in refused(a, "", *judge, "-o", str(tmp_path / "x"))
    assert "--judge" in refused(a, b, "-o", str(tmp_path / "x"))
    assert "no candidate call" in refused(a, b, *judge, "-m", "openai:x", "-o", str(tmp_path / "x"))
    assert "no run store" in refused(a, str(tmp_path), *judge, "-o", str(tmp_path / "x"))
    # a head-to-head run stores answers too, of another task: not comparable with a run
    judge_with(stub, prefers("alpha"), questions(runs["alpha"]))
    first = tmp_path / "first"
    assert h2h(a, b, *judge, "-o", str(first)) == 0
    line = refused(a, str(first), *judge, "-o", str(tmp_path / "x"))
    assert "different tasks" in line and "clinconsensus" in line
    assert "no answers for task 'nope'" in refused(a, b, *judge, "--task", "nope", "-o", "y")
    # the output directory holds a comparison of other runs: not mixed with this one
    line = refused(a, str(runs["gamma"]), *judge, "-o", str(first))
    assert "other runs" in line and str(first) in line
    # a finished run whose store holds no answer: not a generative task's run
    bare = tmp_path / "bare"
    shutil.copytree(runs["gamma"], bare)
    with sqlite3.connect(bare / STORE_FILENAME) as db:
        db.execute("DELETE FROM records WHERE kind = 'answer'")
    line = refused(a, str(bare), *judge, "-o", str(tmp_path / "x"))
    assert "stored no candidate answers" in line and str(bare) in line
    assert not (tmp_path / "x").exists()


def test_json_prints_the_results(
    runs: dict[str, Path], stub: StubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    judge_with(stub, prefers("beta"), questions(runs["alpha"]))
    capsys.readouterr()
    out = tmp_path / "json"
    assert h2h(str(runs["beta"]), str(runs["alpha"]), "--judge", f"openai:jj@{stub.base_url}",
               "-o", str(out), "--json") == 0  # fmt: skip
    printed = capsys.readouterr().out
    assert printed.lstrip().startswith("{")  # JSON on stdout, nothing else
    text = json.dumps(json.loads(printed))
    assert '"beta vs alpha"' in text and results(out)["pairs"]["beta vs alpha"]["win_rate"] == 1.0
