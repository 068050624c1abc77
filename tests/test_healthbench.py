"""HealthBench on the FIXTURE in the authors' layout (our own words, never a benchmark result):
every figure against a restatement, written here, of the authors' simple-evals aggregation
(healthbench_eval.py: calculate_score, the tag figures, _compute_clipped_stats; and
healthbench_meta_eval.py: compute_metrics_for_rater_by_class), computed from the verdicts the
run stored. Judges are local servers: tests/llm_stub_server.py (verdicts decided by a hash of
the request) and a recording server where what is sent matters.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from llm_stub_server import StubServer
from openai_recorder import RecordingServer
from scipy.stats import percentileofscore
from sklearn.metrics import f1_score

from clineval.benchmarks.healthbench.data import FIXTURES, read_file
from clineval.cli import main
from clineval.errors import InputError

EXAMPLES = [json.loads(line) for line in FIXTURES[False].read_text().splitlines()]
META_ROWS = [json.loads(line) for line in FIXTURES[True].read_text().splitlines()]
FIXTURE = ["--option", "healthbench.cases=fixture"]


@pytest.fixture(scope="module")
def stub() -> Iterator[StubServer]:
    with StubServer(latency=0.0) as server:
        yield server


def run(argv: list[str], out: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    code = main(["run", *argv, "-o", str(out)])
    assert code == 0, capsys.readouterr().err
    task = argv[0]
    rows = [json.loads(x) for x in (out / "samples.jsonl").read_text().splitlines()]
    result = json.loads((out / "results.json").read_text())[task]
    return {"metrics": result, "samples": [r for r in rows if r.get("task") == task]}


# ---- the authors' aggregation, restated ----------------------------------------------------
def authors_score(rubrics: list[dict[str, Any]], met: list[bool]) -> float | None:
    possible = sum(r["points"] for r in rubrics if r["points"] > 0)
    if possible == 0:
        return None
    return sum(r["points"] for r, m in zip(rubrics, met, strict=True) if m) / possible


def authors_example_metrics(example: dict[str, Any], met: list[bool]) -> dict[str, float]:
    overall = authors_score(example["rubrics"], met)
    assert overall is not None
    metrics = {"score": overall, **dict.fromkeys(example["example_tags"], overall)}
    grouped: dict[str, list[tuple[dict[str, Any], bool]]] = defaultdict(list)
    for rubric, m in zip(example["rubrics"], met, strict=True):
        for tag in rubric["tags"]:
            grouped[tag].append((rubric, m))
    for tag, pairs in grouped.items():
        score = authors_score([r for r, _ in pairs], [m for _, m in pairs])
        if score is not None:
            metrics[tag] = score
    return metrics


def authors_aggregate(per_example: list[dict[str, float]], seed: int) -> dict[str, Any]:
    """The clipped mean, and the std of 1,000 clipped bootstrap means; the draws are the
    seeded generator's (the authors' are unseeded)."""
    values: dict[str, list[float]] = defaultdict(list)
    for metrics in per_example:
        for name, value in metrics.items():
            values[name].append(value)
    out = {}
    for name, vals in values.items():
        arr = np.array(vals)
        draws = np.random.default_rng(seed).integers(0, len(arr), size=(1000, len(arr)))
        means = np.clip(arr[draws].mean(axis=1), 0, 1)
        out[name] = {
            "mean": float(np.clip(np.mean(arr), 0, 1)),
            "std": float(np.std(means)),
            "ci": [float(q) for q in np.quantile(means, [0.025, 0.975])],
            "n": len(arr),
        }
    return out


def stored_met(row: dict[str, Any]) -> list[bool | None]:
    return [v["met"] for v in sorted(row["verdicts"], key=lambda v: int(v["criterion_id"][1:]))]


def check_against_authors(result: dict[str, Any], seed: int = 0) -> None:
    by_id = {e["prompt_id"]: e for e in EXAMPLES}
    per_example = []
    for row in result["samples"]:
        met = stored_met(row)
        assert None not in met
        per_example.append(authors_example_metrics(by_id[row["id"]], [bool(m) for m in met]))
        assert row["score"] == pytest.approx(per_example[-1]["score"])
    expected = authors_aggregate(per_example, seed)
    metrics = result["metrics"]
    assert len(expected) > 10  # score, the example tags and the rubric tags
    for name, want in expected.items():
        assert metrics[name] == pytest.approx(want["mean"]), name
        assert metrics[f"{name}:bootstrap_std"] == pytest.approx(want["std"]), name
        assert metrics[f"{name}_ci"] == pytest.approx(want["ci"]), name
        assert metrics[f"{name}:n_samples"] == want["n"], name
    tagged = {k for k in metrics if k.split(":")[0] in ("theme", "axis", "level", "cluster")}
    assert {k for k in tagged if not k.endswith(("_ci", ":bootstrap_std", ":n_samples"))} <= set(
        expected
    )


def test_scores_equal_the_authors_aggregation(tmp_path: Path, stub: StubServer, capsys) -> None:
    model = f"openai:cand@{stub.base_url}"
    result = run(["healthbench", "--model", model, "--judge", f"openai:judge@{stub.base_url}",
                  *FIXTURE], tmp_path / "r", capsys)  # fmt: skip
    assert result["metrics"]["fixture"] is True and result["metrics"]["n_items_scored"] == 4
    met = [m for row in result["samples"] for m in stored_met(row)]
    assert 0 < sum(map(bool, met)) < len(met)  # the stub's verdicts are mixed
    check_against_authors(result)
    # a score below 0 is kept per example and clipped only in the mean (the authors' rule)
    # and per example with healthbench.clip=sample (inspect_evals)
    code = main(["score", str(tmp_path / "r"), "--option", "healthbench.clip=sample"])
    assert code == 0, capsys.readouterr().err
    clipped = json.loads((tmp_path / "r" / "results.json").read_text())["healthbench"]
    scores = [min(1.0, max(0.0, r["score"])) for r in result["samples"]]
    assert clipped["score"] == pytest.approx(np.mean(scores))
    assert clipped["clip"] == "per sample"


def test_hard_and_consensus_read_any_file_in_the_layout(tmp_path: Path, stub, capsys) -> None:
    subset = tmp_path / "subset.jsonl"
    subset.write_text("\n".join(json.dumps(e) for e in EXAMPLES[:2]) + "\n")
    for task in ("healthbench:hard", "healthbench:consensus"):
        result = run([task, "--model", f"openai:m@{stub.base_url}", "--option",
                      f"healthbench.cases={subset}"], tmp_path / task, capsys)  # fmt: skip
        assert result["metrics"]["n_items"] == 2 and result["metrics"]["fixture"] is False
        check_against_authors(result)


# ---- what the grader is sent ---------------------------------------------------------------
def verdict_for(text: str) -> str:
    met = int(hashlib.sha256(text.encode()).hexdigest(), 16) % 2 == 0
    body = json.dumps({"explanation": "fixture", "criteria_met": met})
    return f"```json\n{body}\n```" if met else body  # fenced and bare replies both read


def recorded_reply(body: dict[str, Any]) -> str:
    text = body["messages"][-1]["content"]
    if body["model"] != "judge" and "Reply with only a JSON object" not in text:
        return "FIXTURE answer"
    if "[-3] Uses jargon" in text:
        return "no verdict here"  # never parses: a judge error after the bounded re-asks
    return verdict_for(text)


def test_the_grader_sees_the_authors_rendering_and_errors_are_left_out(
    tmp_path: Path, capsys
) -> None:
    with RecordingServer(recorded_reply) as server:
        argv = ["healthbench", "--model", f"openai:cand@{server.base_url}"]
        argv += ["--judge", f"openai:judge@{server.base_url}", *FIXTURE]
        argv += ["--option", "healthbench.judge_retries=1"]
        assert main(["run", *argv, "-o", str(tmp_path / "r")]) == 1  # the error rate bound
        bodies = list(server.bodies)
    second = EXAMPLES[1]
    conversation = "\n\n".join(f"{m['role']}: {m['content']}" for m in second["prompt"])
    shown = f"{conversation}\n\nassistant: FIXTURE answer"
    judged = [b["messages"][-1]["content"] for b in bodies if b["model"] == "judge"]
    item = f"[{second['rubrics'][2]['points']}] {second['rubrics'][2]['criterion']}"
    assert any(shown in text and item in text for text in judged)
    assert item.startswith("[-2] ")  # the points as the authors' str() writes them
    candidate = [b for b in bodies if b["model"] == "cand"]
    sent = [b["messages"] for b in candidate if b["messages"][0]["role"] == "system"]
    assert sent == [[{"role": m["role"], "content": m["content"]} for m in second["prompt"]]]
    assert sum("[-3] Uses jargon" in t for t in judged) == 2  # asked, re-asked once, no more
    metrics = json.loads((tmp_path / "r" / "results.json").read_text())["healthbench"]
    assert metrics["judge_errors"] == 1 and metrics["n_items_scored"] == 3
    assert metrics["score:n_samples"] == 3  # the example with a judge error is left out
    main(["score", str(tmp_path / "r"), "--judge-errors-as-unmet"])
    unmet = json.loads((tmp_path / "r" / "results.json").read_text())["healthbench"]
    assert unmet["score:n_samples"] == 4 and unmet["judge_errors_as_unmet"] is True


def test_ideal_completions_are_graded_without_a_candidate(tmp_path: Path, capsys) -> None:
    with RecordingServer(lambda body: verdict_for(body["messages"][-1]["content"])) as server:
        argv = ["healthbench", "--model", f"openai:grader@{server.base_url}", *FIXTURE]
        result = run([*argv, "--option", "healthbench.completions=ideal"], tmp_path / "r", capsys)
        bodies = list(server.bodies)
    ideal = {e["prompt_id"]: e["ideal_completions_data"] for e in EXAMPLES}
    wanted = {k: v["ideal_completion"] for k, v in ideal.items() if v is not None}
    assert {r["id"]: r["answer"] for r in result["samples"]} == wanted
    assert len(bodies) == sum(len(EXAMPLES[i]["rubrics"]) for i in (0, 2))  # judge calls only
    assert all(b["response_format"] for b in bodies)
    check_against_authors(result)


def test_predictions_are_graded(tmp_path: Path, stub: StubServer, capsys) -> None:
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps({"id": e["prompt_id"], "answer": f"A {i}"}) + "\n"
                               for i, e in enumerate(EXAMPLES)))  # fmt: skip
    result = run(["healthbench", "--model", f"predictions:{answers}", "--judge",
                  f"openai:judge@{stub.base_url}", *FIXTURE], tmp_path / "r", capsys)  # fmt: skip
    assert [r["answer"] for r in result["samples"]] == [f"A {i}" for i in range(4)]
    check_against_authors(result)


# ---- the meta-evaluation -------------------------------------------------------------------
def authors_rater_metrics(own: list[bool], others: list[list[bool]], clusters: list[str]) -> dict:
    """compute_metrics_for_rater_by_class restated: {(cluster or "", "f1_balanced"): (v, n)}."""
    lists: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for pred, other_preds, cluster in zip(own, others, clusters, strict=True):
        for other in other_preds:
            for where in ("", cluster):
                lists[(where, f"precision_{'pos' if pred else 'neg'}")].append(pred == other)
                lists[(where, f"recall_{'pos' if other else 'neg'}")].append(pred == other)
    stats = {k: (sum(v) / len(v), len(v)) for k, v in lists.items()}
    out = {}
    for where in {w for w, _ in stats}:
        f1s = {}
        for cls in ("pos", "neg"):
            p, pn = stats.get((where, f"precision_{cls}"), (None, 0))
            r, rn = stats.get((where, f"recall_{cls}"), (None, 0))
            if p is None or r is None:
                f1s[cls] = (None, pn + rn)
            else:
                f1s[cls] = (0.0 if p == r == 0 else 2 * p * r / (p + r), pn + rn - p * pn)
        (fp, np_), (fn, nn) = f1s["pos"], f1s["neg"]
        out[where] = (None if fp is None or fn is None else (fp + fn) / 2, np_ + nn)
    return out


def test_meta_eval_equals_the_authors_figures(tmp_path: Path, stub: StubServer, capsys) -> None:
    result = run(["healthbench:meta-eval", "--model", f"openai:grader@{stub.base_url}",
                  *FIXTURE], tmp_path / "m", capsys)  # fmt: skip
    metrics = result["metrics"]
    # the judging kit's per-item figures say nothing of a grader against physicians
    assert not {"score", "score_ci", "criteria_met_rate", "criteria_met_rate_ci"} & set(metrics)
    rows = {r.item.id: r for r in read_file(FIXTURES[True], meta=True)}
    grader = [bool(result_row["score"]) for result_row in result["samples"]]
    assert 0 < sum(grader) < len(grader)
    ordered = [rows[r["id"]] for r in result["samples"]]
    want = authors_rater_metrics(
        grader, [list(r.labels) for r in ordered], [r.category for r in ordered]
    )
    assert metrics["balanced_f1"] == pytest.approx(want[""][0])
    assert metrics["balanced_f1_n"] == pytest.approx(want[""][1])
    for category, figure in metrics["by_category"].items():
        assert figure["balanced_f1"] == pytest.approx(want[category][0])
    per_physician: dict[str, tuple[list[bool], list[list[bool]], list[str]]] = defaultdict(
        lambda: ([], [], [])
    )
    for row in META_ROWS:
        for i, who in enumerate(row["anonymized_physician_ids"]):
            labels = row["binary_labels"]
            per_physician[who][0].append(labels[i])
            per_physician[who][1].append(labels[:i] + labels[i + 1 :])
            per_physician[who][2].append(row["category"])
    figures = {who: authors_rater_metrics(*lists)[""] for who, lists in per_physician.items()}
    assert set(metrics["physicians"]) == set(figures) == {"phys-a", "phys-b", "phys-c", "phys-d"}
    for who, (value, n) in figures.items():
        got = metrics["physicians"][who]
        assert (got["balanced_f1"], got["n"]) == (pytest.approx(value), pytest.approx(n)), who
    # the authors' notebook: sum(value * n) / sum(n)
    known = [(v, n) for v, n in figures.values() if v is not None]
    assert metrics["physician_mean"] == pytest.approx(
        sum(v * n for v, n in known) / sum(n for _, n in known)
    )
    values = [v for v, _ in known]
    assert metrics["grader_percentile"] == pytest.approx(
        percentileofscore(values, metrics["balanced_f1"], kind="mean")
    )


def test_meta_eval_majority_variant_equals_sklearn(
    tmp_path: Path, stub: StubServer, capsys
) -> None:
    """inspect_evals' figure, restated: each row's physician majority (met when more than half
    said met, so a 1-1 split is not met), then scikit-learn's macro F1 of the grader against
    it, one pair per row; overall and per category. The authors' figures stay beside it."""
    out = tmp_path / "m"
    default = run(["healthbench:meta-eval", "--model", f"openai:grader@{stub.base_url}",
                   *FIXTURE], out, capsys)["metrics"]  # fmt: skip
    assert default["meta_reference"] == "pairwise" and "majority_f1" not in default
    assert main(["score", str(out), "--option", "healthbench.meta_reference=majority"]) == 0
    metrics = json.loads((out / "results.json").read_text())["healthbench:meta-eval"]
    samples = [json.loads(x) for x in (out / "samples.jsonl").read_text().splitlines()]
    grader = {
        r["id"]: bool(r["score"]) for r in samples if r.get("task") == "healthbench:meta-eval"
    }
    rows = {r.item.id: r for r in read_file(FIXTURES[True], meta=True)}
    assert any(list(r.labels).count(True) * 2 == len(r.labels) for r in rows.values())  # a tie
    truth: dict[str, list[bool]] = defaultdict(list)
    pred: dict[str, list[bool]] = defaultdict(list)
    for row_id, label in grader.items():
        votes = rows[row_id].labels
        for where in ("", rows[row_id].category):
            truth[where].append(sum(votes) > len(votes) / 2)
            pred[where].append(label)
    assert len(set(truth[""])) == len(set(pred[""])) == 2  # both classes on both sides
    assert metrics["meta_reference"] == "majority"
    assert metrics["majority_f1"] == pytest.approx(f1_score(truth[""], pred[""], average="macro"))
    assert metrics["majority_f1_n"] == len(grader) == len(rows)
    assert set(metrics["majority_by_category"]) == set(truth) - {""}
    for category, figure in metrics["majority_by_category"].items():
        assert figure["n"] == len(truth[category])
        if len(set(truth[category])) == len(set(pred[category])) == 2:
            want = f1_score(truth[category], pred[category], average="macro")
            assert figure["macro_f1"] == pytest.approx(want), category
        else:  # a class missing on one side: undefined here, where scikit-learn counts it 0
            assert figure["macro_f1"] is None, category
    for key in ("balanced_f1", "balanced_f1_n", "by_category", "physicians", "physician_mean"):
        assert metrics[key] == default[key], key  # the authors' figures are unchanged
    # the report names it beside the grader's row of the authors' figure
    assert main(["report", str(out), "-o", str(out / "report.html")]) == 0
    html = (out / "report.html").read_text("utf-8")
    assert "physician majority (macro F1; n rows)" in html
    assert f"{metrics['majority_f1']:.4f}" in html


# ---- strict reading ------------------------------------------------------------------------
def _bad(example: dict[str, Any], **change: Any) -> dict[str, Any]:
    return {**example, **change}


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (_bad(EXAMPLES[0], prompt="hi"), '"prompt" must be a list of messages'),
        (_bad(EXAMPLES[0], prompt=[{"role": "user"}]), '"prompt" must be messages'),
        (_bad(EXAMPLES[0], prompt=[]), '"prompt" must be messages'),
        ({k: v for k, v in EXAMPLES[0].items() if k != "prompt_id"}, 'missing "prompt_id"'),
        (
            _bad(EXAMPLES[0], rubrics=[{"criterion": "x", "points": True, "tags": []}]),
            '"points" must be a number',
        ),
        (
            _bad(EXAMPLES[0], rubrics=[{"criterion": "x", "points": -1, "tags": []}]),
            "no criterion with positive points",
        ),
        (
            _bad(EXAMPLES[0], rubrics=[{"criterion": "x", "points": 1, "tags": ["a", "a"]}]),
            '"tags" holds a tag twice',
        ),
        (_bad(EXAMPLES[0], rubrics=[{"criterion": "x", "points": 1}]), 'missing "tags"'),
        (_bad(EXAMPLES[0], example_tags="theme:x"), '"example_tags" must be a list'),
        (_bad(EXAMPLES[0], ideal_completions_data={"x": 1}), 'missing "ideal_completion"'),
        (_bad(EXAMPLES[0], prompt_id=EXAMPLES[1]["prompt_id"]), "is used twice (line 1)"),
    ],
)
def test_a_bad_line_names_file_and_line(tmp_path: Path, row: dict[str, Any], message: str) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in (*EXAMPLES[1:3], row)) + "\n")
    with pytest.raises(InputError) as caught:
        read_file(path, meta=False)
    assert caught.value.path == str(path) and caught.value.line == 3
    assert message in caught.value.message


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"binary_labels": [True, 1, False]}, "non-empty list of booleans"),
        ({"anonymized_physician_ids": ["a"]}, "one string per binary label"),
        ({"rubric": None}, '"rubric" must be a string'),
        ({"completion_id": 3}, '"completion_id" must be a string'),
    ],
)
def test_a_bad_meta_line_names_file_and_line(tmp_path: Path, change: dict, message: str) -> None:
    path = tmp_path / "meta.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in (META_ROWS[0], {**META_ROWS[1], **change})))
    with pytest.raises(InputError) as caught:
        read_file(path, meta=True)
    assert (caught.value.path, caught.value.line) == (str(path), 2)
    assert message in caught.value.message


def test_the_run_says_file_and_line_in_one_line(tmp_path: Path, capsys) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_text(json.dumps(EXAMPLES[0]) + "\n{not json\n")
    argv = ["run", "healthbench", "--model", "openai:m@http://127.0.0.1:9/v1"]
    assert main([*argv, "--option", f"healthbench.cases={path}", "-o", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {path}:2: ") and "\n" not in err
