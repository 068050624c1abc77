"""examples/plugin-pairwise (an MT-bench-style pairwise benchmark on clineval's judging kit),
installed the way a user installs it, then run against the local stub server: a judge that
always answers [[A]], one that prefers the candidate wherever it stands, a panel, re-asks
after replies without a verdict, --dry-run, kill and resume, --reuse, --batch, the items
option, --judge-prompt, and the one-line refusals.

The stub's judges are rules on the prompt it receives (tests/llm_stub_server.py "rules"): the
stub's candidate answers read "stub answer ...", so "Assistant A's Answer] stub answer" means
the candidate stands in position A. Expected figures are worked out by hand from what each
judge says (win rate = (wins + ties / 2) / items; disagreeing orders are a tie).
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

from cli_inprocess import Done
from llm_stub_server import StubServer
from plugin_fixtures import example_cli, process_env
from run_probe import kill_once_stored

from clineval.store import STORE_FILENAME

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "plugin-pairwise"
PACKAGE = EXAMPLE / "clineval_example_pairwise"
TASK = "example-pairwise"
FAST_POLL = ["--option", "llm.batch_poll_s=0.01", "--option", "llm.batch_poll_max_s=0.05"]
CANDIDATE_IN_A = r"Assistant A's Answer\]\s*stub answer"
CANDIDATE_IN_B = r"Assistant B's Answer\]\s*stub answer"
IS_JUDGE = r"Assistant A's Answer"
ALWAYS_A = [{"prompt": IS_JUDGE, "content": "Both are fine; the first reads better. [[A]]"}]
PREFERS_CANDIDATE = [
    {"prompt": CANDIDATE_IN_A, "content": "A is more complete.\n[[A]]"},
    {"prompt": CANDIDATE_IN_B, "content": "B is more complete.\n[[B]]"},
]


def cli(site: Path, *args: str) -> Done:
    """`clineval --quiet ARGS` in this process, in the example's folder (the `site` fixture
    has put the installed plugin on the import path)."""
    return example_cli(EXAMPLE, *args)


def judge_rules(stub: StubServer, rules: list[dict[str, Any]], **behaviour: Any) -> None:
    stub.reset()
    stub.script([], default={"do": "ok", "rules": rules, **behaviour})


def run_args(out: Path, *extra: str) -> list[str]:
    return ["run", TASK, *extra, "--output-dir", str(out)]


def results(run: Path) -> dict[str, Any]:
    return dict(json.loads((run / "results.json").read_text())[TASK])


def samples(run: Path) -> list[dict[str, Any]]:
    rows = map(json.loads, (run / "samples.jsonl").read_text().splitlines())
    return [row for row in rows if row.get("task") == TASK]


def oracle(run: Path) -> tuple[float, float]:
    """(win rate, position consistency) from the stored games: "A" in the candidate-first
    game and "B" in the candidate-second game are wins; "C" a tie; orders that disagree a
    tie (MT-bench)."""
    outcome = {"A": 1.0, "B": 0.0, "C": 0.5}
    scores, agree = [], []
    for row in samples(run):
        first = outcome[row["games"]["candidate-first"]]
        second = 1.0 - outcome[row["games"]["candidate-second"]]
        agree.append(first == second)
        scores.append(first if first == second else 0.5)
    return sum(scores) / len(scores), sum(agree) / len(agree)


def test_the_template_stays_small() -> None:
    # that it imports only the public surface (names included) is test_architecture's rule
    lines = sum(len(p.read_text().splitlines()) for p in PACKAGE.glob("*.py"))
    assert lines <= 150


def test_always_a_and_a_judge_preferring_the_candidate_then_reuse(
    site: Path, stub: StubServer, tmp_path: Path
) -> None:
    model = ["--model", f"openai:cand@{stub.base_url}"]
    always = tmp_path / "always-a"
    judge_rules(stub, ALWAYS_A)
    plan = cli(
        site, *run_args(always, *model, "--judge", f"openai:ja@{stub.base_url}", "--dry-run")
    )
    assert plan.returncode == 0, plan.stderr
    assert "total: 12 calls to send, 0 already stored" in " ".join(plan.stdout.split())
    assert not always.exists() and stub.stats()["requests"] == 0

    done = cli(site, *run_args(always, *model, "--judge", f"openai:ja@{stub.base_url}"))
    assert done.returncode == 0, done.stderr
    assert stub.stats()["requests"] == 4 + 4 * 2  # the answers, then two games an item
    got = results(always)
    assert got["position_consistency"] == 0.0 and got["win_rate"] == 0.5
    assert (got["win_rate"], got["position_consistency"]) == oracle(always)
    # no game is a tie (a win, then a loss): the tie rate counts tied games
    assert got["tie_rate"] == 0.0 and got["judge_errors"] == 0 and got["n_items_scored"] == 4
    with sqlite3.connect(always / STORE_FILENAME) as db:
        sent = [json.loads(r) for (r,) in db.execute("SELECT request FROM calls")]
    assert all(r.get("response_format") is None for r in sent)  # a pattern: plain text calls
    row = samples(always)[0]
    assert row["reference"] and row["answer"].startswith("stub answer")
    assert {v["grade"] for v in row["verdicts"]} == {"A"}
    again = cli(site, *run_args(always, *model, "--judge", f"openai:ja@{stub.base_url}",
                                "--dry-run"))  # fmt: skip
    assert "total: 0 calls to send, 12 already stored" in " ".join(again.stdout.split())

    # --reuse: the same answers judged by another judge: no candidate call at all
    judge_rules(stub, PREFERS_CANDIDATE)
    better = tmp_path / "prefers"
    reused = cli(site, *run_args(better, *model, "--judge", f"openai:jb@{stub.base_url}",
                                 "--reuse", str(always)))  # fmt: skip
    assert reused.returncode == 0, reused.stderr
    by_model = stub.stats()["by_model"]
    assert by_model.get("cand", 0) == 0 and by_model["jb"] == 8
    got = results(better)
    assert got["win_rate"] == 1.0 and got["position_consistency"] == 1.0
    assert (got["win_rate"], got["position_consistency"]) == oracle(better)
    assert got["win_rate_ci"] == [1.0, 1.0] and got["tie_rate"] == 0.0
    assert [r["answer"] for r in samples(better)] == [r["answer"] for r in samples(always)]


def test_a_panel_and_re_asks_that_reach_the_server(
    site: Path, stub: StubServer, tmp_path: Path
) -> None:
    model = ["--model", f"openai:cand@{stub.base_url}"]
    # jp prefers the candidate, ja always says A: game 1 both A; game 2 split -> tie (C)
    rules = [{"model": "ja", **ALWAYS_A[0]}, *PREFERS_CANDIDATE]
    judge_rules(stub, rules)
    panel = tmp_path / "panel"
    judges = ["--judge", f"openai:jp@{stub.base_url}", "--judge", f"openai:ja@{stub.base_url}"]
    done = cli(site, *run_args(panel, *model, *judges))
    assert done.returncode == 0, done.stderr
    got = results(panel)
    assert got["aggregate_ties"] == 4 and got["aggregate"] == "majority"
    assert {row["games"]["candidate-second"] for row in samples(panel)} == {"C"}
    # a win (game 1) and a tie (game 2) disagree: a tie for every item
    assert got["win_rate"] == 0.5 and got["position_consistency"] == 0.0
    assert got["per_judge"]["openai:jp"]["win_rate"] == 1.0
    assert got["per_judge"]["openai:ja"]["position_consistency"] == 0.0

    # two replies without a verdict, then verdicts: re-asked, each re-ask a new request
    stub.reset()
    no_verdict = {"do": "ok", "rules": [{"prompt": IS_JUDGE, "content": "They are similar."}]}
    stub.script(
        [{"do": "ok"}] * 4 + [no_verdict] * 2, default={"do": "ok", "rules": PREFERS_CANDIDATE}
    )
    asked = tmp_path / "asked"
    one = ["--judge", f"openai:jp@{stub.base_url}", "--concurrency", "1"]
    done = cli(site, *run_args(asked, *model, *one))
    assert done.returncode == 0, done.stderr
    assert stub.stats()["requests"] == 4 + 8 + 2
    with sqlite3.connect(asked / STORE_FILENAME) as db:
        sent = [json.loads(r) for (r,) in db.execute("SELECT request FROM calls")]
    # each re-ask is a request of its own (another seed, a non-zero temperature), so a
    # reply without a verdict is never served again from the store
    seeds = sorted(r["seed"] for r in sent if r["model"] == "openai:jp")
    assert len(sent) == 14 and seeds[:8] == [0] * 8 and set(seeds[8:]) <= {1, 2}
    assert results(asked)["judge_errors"] == 0 and results(asked)["win_rate"] == 1.0

    # no verdict ever and no re-asks: judge errors, counted and held to the bound
    judge_rules(stub, [{"prompt": IS_JUDGE, "content": "I cannot decide."}])
    failed = tmp_path / "failed"
    args = [*one, "--option", f"{TASK}.judge_retries=0", "--max-judge-error-rate", "0.1"]
    done = cli(site, *run_args(failed, *model, *args))
    assert done.returncode == 1
    assert "judge error rate 100.00% (8 criteria without a verdict)" in done.stderr
    got = results(failed)
    assert got["judge_errors"] == 8 and got["win_rate"] is None and got["n_items_scored"] == 0


def test_kill_and_resume_asks_no_call_twice(site: Path, stub: StubServer, tmp_path: Path) -> None:
    out = tmp_path / "killed"
    args = run_args(out, "--model", f"openai:cand@{stub.base_url}", "--concurrency", "2")
    argv = [sys.executable, "-m", "clineval", "--quiet", *args]
    judge_rules(stub, PREFERS_CANDIDATE, latency=0.2)
    finished = kill_once_stored(argv, process_env(site), out / STORE_FILENAME, 5)
    assert 5 <= len(finished) < 12

    stub.script([], default={"do": "ok", "rules": PREFERS_CANDIDATE})
    resumed = cli(site, *args)  # the same command again (here in process): it resumes
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    by_key = stub.stats()["by_key"]
    assert {k for k in finished if by_key[k] != 1} == set()  # nothing stored was asked again
    assert len(by_key) == 12 and sum(by_key.values()) - 12 <= 2  # only calls on the wire
    got = results(out)
    assert got["win_rate"] == 1.0 and got["position_consistency"] == 1.0


def test_batch_mode_gives_the_same_results(site: Path, stub: StubServer, tmp_path: Path) -> None:
    model = ["--model", f"openai:cand@{stub.base_url}"]
    judge_rules(stub, PREFERS_CANDIDATE)
    batched = cli(site, *run_args(tmp_path / "batch", *model, "--batch", *FAST_POLL))
    assert batched.returncode == 0, batched.stderr
    assert stub.stats()["batches"] == 2  # the answers' round, then both games of every item
    got = results(tmp_path / "batch")
    assert got["win_rate"] == 1.0 and got["position_consistency"] == 1.0
    assert got["n_items_scored"] == 4


def test_items_option_judge_prompt_and_refusals(
    site: Path, stub: StubServer, tmp_path: Path
) -> None:
    judge_rules(stub, PREFERS_CANDIDATE)
    items = tmp_path / "items.jsonl"
    items.write_text(
        '{"id": "q1", "question": "Is a fever of 38 C in an adult dangerous?", '
        '"reference": "Usually not on its own; seek care if it lasts or other signs appear."}\n'
        '{"id": "q2", "question": "Can I stop antibiotics early?", '
        '"reference": "Finish the course your prescriber set unless they tell you otherwise."}\n'
    )
    model = ["--model", f"openai:cand@{stub.base_url}"]
    option = ["--option", f"{TASK}.items={items}"]
    # a user's own wording: the same slots, its own verdict words kept as [[A]]/[[B]]/[[C]]
    wording = tmp_path / "judge.txt"
    wording.write_text(
        "Question: {question}\n\n[The Start of Assistant A's Answer]\n{answer_a}\n"
        "[The End of Assistant A's Answer]\n\n[The Start of Assistant B's Answer]\n{answer_b}\n"
        '[The End of Assistant B\'s Answer]\n\nReply {"note": "braces stay"} then [[A]], [[B]] '
        "or [[C]]."
    )
    out = tmp_path / "own"
    done = cli(site, *run_args(out, *model, *option, "--judge-prompt", str(wording)))
    assert done.returncode == 0, done.stderr
    got = results(out)
    assert got["n_items"] == 2 and got["win_rate"] == 1.0
    assert "fixture data" not in done.stdout
    with sqlite3.connect(out / STORE_FILENAME) as db:
        sent = [json.loads(r) for (r,) in db.execute("SELECT request FROM calls")]
    prompts = [text for r in sent for _, text in r["messages"] if "Question: " in text]
    assert len(prompts) == 4 and all('{"note": "braces stay"}' in p for p in prompts)

    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"id": "q1", "question": "q", "reference": "r"}\n{"id": "q2", "question": "q"}\n'
    )
    refused = cli(site, *run_args(tmp_path / "bad", *model, "--option", f"{TASK}.items={bad}"))
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines() == [
        f'error: {bad}:2: expected a non-empty string "reference"'
    ]
    missing = tmp_path / "missing.txt"
    missing.write_text("{question} {answer_a} and no second answer")
    refused = cli(site, *run_args(tmp_path / "bad", *model, "--judge-prompt", str(missing)))
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines() == [
        f"error: {missing}: judge prompt lacks placeholder(s) {{answer_b}}"
    ]
    # a game has no "not met": the flag would be ignored, so it is refused
    refused = cli(site, *run_args(tmp_path / "bad", *model, "--judge-errors-as-unmet"))
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines() == [
        f"error: --judge-errors-as-unmet applies to none of this run's tasks ({TASK}): it "
        "would be ignored"
    ]
    bad_run = tmp_path / "bad"  # nothing written (the lock's directory at most)
    assert not bad_run.exists() or {p.name for p in bad_run.iterdir()} <= {".lock"}
