"""The Python API (`import clineval`) against the command line's own outputs: the same run made
both ways writes the same results.json and samples.jsonl; bad input is an InputError, never
an exit; `import clineval` stays light."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import clineval
from clineval.api import RunFailed
from clineval.benchmarks.clinconsensus.cases import fixture_path
from clineval.cli import main

HEAVY = ("typer", "rich", "pydantic", "numpy")


def _json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _same_run_outputs(a: Path, b: Path) -> None:
    assert _json(a / "results.json") == _json(b / "results.json")
    assert (a / "samples.jsonl").read_text(encoding="utf-8") == (b / "samples.jsonl").read_text(
        encoding="utf-8"
    )


# ---- the package -----------------------------------------------------------------------------


def test_import_clineval_imports_nothing_heavy() -> None:
    """The executable imports the package first and must be quick to reach its Ctrl-C
    handling (clineval/entry.py): no typer, rich, pydantic or numpy at import time, nor on
    looking up the API's names."""
    code = (
        "import clineval, sys; clineval.run; clineval.RunResult; clineval.InputError; "
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_public_names_resolve_and_others_do_not() -> None:
    for name in clineval.__all__:
        assert getattr(clineval, name) is not None, name
    assert set(clineval.__all__) <= set(dir(clineval))
    assert clineval.InputError is __import__("clineval.errors").errors.InputError
    with pytest.raises(AttributeError, match="no attribute 'nonsense'"):
        clineval.nonsense  # noqa: B018
    assert (Path(clineval.__file__).parent / "py.typed").is_file()


# The primary metric of each family as the benchmarks define them (the DESIGN's table).
PRIMARY_METRIC = {
    **{"ner": "token_macro_f1", "tcm-sd": "macro_f1", "clinconsensus": "cacs@7"},
    **{"healthbench": "score", "healthbench-meta": "balanced_f1", "head-to-head": "win_rate"},
}


def test_primary_metric_is_the_one_each_benchmark_declares() -> None:
    from clineval.benchmarks.registry import benchmark_of, task_names
    from clineval.run_result import _task_metrics

    for name in task_names():
        metrics = _task_metrics(name, {})
        bench = benchmark_of(name)
        assert bench is not None
        assert metrics.family == bench.family, name
        assert metrics.primary_metric == PRIMARY_METRIC[bench.family], name
        assert metrics.higher_is_better


# ---- ClinConsensus: a verdicts file, no model (runs without the data root) --------------------


def _verdicts(path: Path) -> Path:
    """Verdicts for every fixture case: a mix of met and not met, and two judge errors (null),
    under the default 2% bound."""
    with path.open("w", encoding="utf-8") as fh:
        lines = fixture_path().read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            case = json.loads(line)
            for j, criterion in enumerate(case["rubrics"]):
                met: bool | None = (i * 7 + j * 3) % 5 < 3
                if (i, j) in ((1, 4), (5, 0)):
                    met = None
                row = {"case_id": case["case_id"], "criterion_id": criterion["criterion_id"]}
                fh.write(json.dumps({**row, "criteria_met": met}) + "\n")
    return path


def test_clinconsensus_verdicts_run_matches_the_cli(tmp_path: Path) -> None:
    verdicts = _verdicts(tmp_path / "verdicts.jsonl")
    cases = fixture_path()
    by_cli, by_api = tmp_path / "cli", tmp_path / "api"
    argv = ["run", "clinconsensus", "--cases", str(cases), "--verdicts", str(verdicts)]
    assert main([*argv, "-o", str(by_cli)]) == 0

    result = clineval.run("clinconsensus", cases=cases, verdicts=verdicts, output_dir=by_api)
    _same_run_outputs(by_cli, by_api)

    assert result.path == by_api and result.tasks == ["clinconsensus"]
    metrics = result["clinconsensus"]
    assert isinstance(metrics, clineval.TaskMetrics)
    raw = _json(by_api / "results.json")["clinconsensus"]
    assert metrics.cacs_at_7 == raw["cacs@7"] and metrics.primary == raw["cacs@7"]
    assert metrics.primary_metric == "cacs@7" and 0.0 <= metrics.primary <= 100.0
    assert metrics.judge_errors == 2 and metrics.n_cases_scored == raw["n_cases_scored"] == 10
    assert metrics.fixture is True and "FIXTURE" in result.table()
    samples = result.samples("clinconsensus")
    assert len(samples) == metrics.n_cases == 12
    assert {s["id"] for s in samples} == {json.loads(x)["case_id"] for x in cases.open()}
    # re-scoring from the store gives the same results (the CLI's score path)
    assert clineval.score(by_api).results == result.results


def test_bad_input_is_an_input_error_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "run"
    cases = dict(cases=fixture_path(), output_dir=out)
    problems: list[tuple[dict[str, Any], str]] = [
        ({"tasks": "no-such-task", "model": "baseline:tfidf"}, "unknown task 'no-such-task'"),
        ({"tasks": "tcm-sd", "model": "baseline:tfidf", "limit": 0}, "--limit 0: must be >= 1"),
        ({"tasks": "tcm-sd", "model": "baseline:tfidf", "colour": "red"}, "unknown setting"),
        ({"tasks": "clinconsensus", "model": "nonsense"}, "nonsense"),
        ({"tasks": "clinconsensus"}, "model= is missing (or verdicts=FILE, which stands in"),
        (
            {"tasks": "clinconsensus", "model": "baseline:tfidf", "options": {"tcm.nope": 1}},
            "tcm.nope",
        ),
        (
            {"tasks": "clinconsensus", "verdicts": tmp_path / "absent.jsonl"},
            "absent.jsonl",
        ),
    ]
    for settings, message in problems:
        tasks = settings.pop("tasks")
        with pytest.raises(clineval.InputError) as caught:
            clineval.run(tasks, **cases, **settings)
        assert message in str(caught.value), (settings, str(caught.value))
        assert "\n" not in str(caught.value)
    assert not out.exists()
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    with pytest.raises(clineval.InputError, match="--output-dir is a file"):
        clineval.run("clinconsensus", verdicts=_verdicts(tmp_path / "v.jsonl"), output_dir=a_file)
    with pytest.raises(clineval.InputError, match=r"no such run directory|not a run directory"):
        clineval.RunResult.load(tmp_path / "nowhere")


def test_dry_run_counts_calls_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "planned"
    summary = clineval.dry_run(
        "clinconsensus",
        model="openai:m@http://127.0.0.1:9/v1",
        options={"clinconsensus.cases": "fixture", "clinconsensus.max_criteria": 2},
        output_dir=out,
    )
    # 12 fixture cases: 12 answers, then 2 criteria judged each by the candidate itself
    assert summary["to_send"] == 12 + 12 * 2 and summary["stored"] == 0
    assert not out.exists()


def test_dataframes_need_pandas_and_say_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "run"
    result = clineval.run(
        "clinconsensus",
        verdicts=_verdicts(tmp_path / "v.jsonl"),
        cases=fixture_path(),
        output_dir=out,
    )
    monkeypatch.setitem(sys.modules, "pandas", None)  # fault injection: pandas not installed
    with pytest.raises(ImportError, match=r"^a DataFrame needs pandas.*pip install pandas$"):
        result.to_dataframe()
    monkeypatch.undo()
    pandas = pytest.importorskip("pandas")
    frame = result.to_dataframe("clinconsensus")
    assert isinstance(frame, pandas.DataFrame) and len(frame) == 12
    assert list(result.metrics_dataframe().index) == ["clinconsensus"]


# ---- TCM-SD: baseline:tfidf on the synthetic fixture ----------------------------------------


@pytest.fixture(scope="module")
def tcm_data(data_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not (data_root / "tcm-sd" / "zy-bert" / "syndrome_vocab.txt").is_file():
        pytest.skip("TCM-SD label files not available")
    out = tmp_path_factory.mktemp("tcm-synthetic")
    argv = ["data", "synth", "tcm-sd", "--out", str(out), "--scale", "0.05"]
    assert main([*argv, "--data-dir", str(data_root)]) == 0
    return out


def test_tcm_sd_run_score_report_compare_match_the_cli(tcm_data: Path, tmp_path: Path) -> None:
    by_cli, by_api = tmp_path / "cli", tmp_path / "api"
    argv = ["run", "tcm-sd", "--model", "baseline:tfidf", "--data-dir", str(tcm_data)]
    assert main([*argv, "-o", str(by_cli)]) == 0
    result = clineval.run("tcm-sd", model="baseline:tfidf", data_dir=tcm_data, output_dir=by_api)
    _same_run_outputs(by_cli, by_api)

    metrics = result["tcm-sd"]
    assert isinstance(metrics, clineval.TaskMetrics)
    raw = _json(by_api / "results.json")["tcm-sd"]
    assert (metrics.macro_f1, metrics.accuracy, metrics.n) == (
        raw["macro_f1"],
        raw["accuracy"],
        raw["n"],
    )
    assert metrics.macro_f1_ci == tuple(raw["macro_f1_ci"]) and len(metrics.per_class) == 148
    assert metrics.fixture is True and len(result.samples()) == metrics.n

    # score: the same re-scored results as `clineval score`
    assert main(["score", str(by_cli)]) == 0
    assert clineval.score(by_api).results == _json(by_cli / "results.json")

    # report: the file `clineval report` writes of the same run directory
    assert main(["report", str(by_api), "-o", str(tmp_path / "cli.html")]) == 0
    page = clineval.write_report(by_api, tmp_path / "api.html")
    assert page == tmp_path / "api.html"
    assert page.read_text(encoding="utf-8") == (tmp_path / "cli.html").read_text(encoding="utf-8")

    # compare: the CSV `clineval compare` writes, and the same figures as data
    assert (
        main(
            [
                "compare",
                str(by_cli),
                str(by_api),
                "--format",
                "csv",
                "-o",
                str(tmp_path / "cli.csv"),
            ]
        )
        == 0
    )
    comparison = clineval.compare([by_cli, by_api], format="csv", output=tmp_path / "api.csv")
    assert comparison.text == (tmp_path / "cli.csv").read_text(encoding="utf-8")
    assert comparison.runs == ["cli", "api"]
    macro = [c for c in comparison.leaderboard if c.metric == "macro_f1"]
    assert [c.value for c in macro] == [raw["macro_f1"]] * 2 and all(c.fixture for c in macro)
    tested = [p for p in comparison.pairs if p.metric == "macro_f1"]
    assert tested and tested[0].difference == 0.0 and tested[0].n_shared == metrics.n
    assert "macro_f1" in comparison.markdown and "| run |" in comparison._repr_markdown_()


def test_a_failed_bound_raises_run_failed_with_the_written_run(
    tcm_data: Path, tmp_path: Path
) -> None:
    """A predictions file that misses records: the command exits 1 after writing results;
    the API raises RunFailed carrying the same run."""
    test_split = tcm_data / "tcm-sd" / "test.synthetic.json"
    preds = tmp_path / "preds.jsonl"
    rows = [json.loads(line) for line in test_split.read_text(encoding="utf-8").splitlines()]
    with preds.open("w", encoding="utf-8") as fh:
        for row in rows[:-3]:  # the last three records get no prediction
            fh.write(json.dumps({"id": row["user_id"], "label": row["norm_syndrome"]}) + "\n")
    argv = ["run", "tcm-sd", "--model", f"predictions:{preds}", "--data-dir", str(tcm_data)]
    assert main([*argv, "-o", str(tmp_path / "cli")]) == 1
    with pytest.raises(RunFailed, match=r"3 of .* samples have no prediction") as caught:
        clineval.run(
            "tcm-sd", model=f"predictions:{preds}", data_dir=tcm_data, output_dir=tmp_path / "api"
        )
    assert caught.value.result["tcm-sd"].get("n_missing") == 3
    _same_run_outputs(tmp_path / "cli", tmp_path / "api")


@pytest.mark.slow
def test_readme_python_example_runs(
    data_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's notebook example (CRF on two corpora, a predictions file, compare), run
    as written in a scratch directory with a predictions file made from the gold spans."""
    from clineval.benchmarks.ner.corpora import load_ner_split

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    section = readme.split("## From Python", 1)[1]
    block = section.split("```python\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(tmp_path)
    with open("my_predictions.jsonl", "w", encoding="utf-8") as fh:
        for doc in load_ner_split("ncbi", "test", data_root).documents:
            spans = [{"start": s.start, "end": s.end, "type": s.type} for s in doc.entities]
            fh.write(json.dumps({"id": doc.id, "entities": spans}) + "\n")
    namespace: dict[str, Any] = {}
    exec(compile(block, "README.md", "exec"), namespace)
    board = namespace["board"]
    assert isinstance(board, clineval.Comparison) and board.runs == ["ner-crf", "ner-mine"]
    mine = [c for c in board.leaderboard if c.run == "ner-mine" and c.task == "ner:ncbi"]
    assert {c.metric: c.value for c in mine}["token_macro_f1"] == 1.0
    assert any(p.task == "ner:ncbi" and p.difference is not None for p in board.pairs)


def test_the_api_module_exports_what_the_package_does() -> None:
    from clineval import api

    assert set(api.__all__) == set(clineval.__all__) - {"InputError", "__version__"}


# Wrong-type calls of the campaign that escaped as TypeError / AttributeError or were taken
# (limit=True as 1, wait="no" as true): each is one InputError naming the parameter.
_TFIDF = {"model": "baseline:tfidf"}
WRONG_TYPES: list[tuple[str, Callable[[Path], Any], str]] = [
    ("run(5)", lambda out: clineval.run(5, output_dir=out, **_TFIDF), "tasks=5"),
    (
        "output_dir=None",
        lambda out: clineval.run("tcm-sd", output_dir=None, **_TFIDF),
        "output_dir=None",
    ),
    (
        "options=[5]",
        lambda out: clineval.run("tcm-sd", output_dir=out, options=[5], **_TFIDF),
        "options=[5]",
    ),
    (
        "options=5",
        lambda out: clineval.run("tcm-sd", output_dir=out, options=5, **_TFIDF),
        "options=5",
    ),
    (
        "limit=True",
        lambda out: clineval.run("tcm-sd", output_dir=out, limit=True, **_TFIDF),
        "--limit True: is not an integer",
    ),
    (
        "wait='no'",
        lambda out: clineval.run("tcm-sd", output_dir=out, wait="no", **_TFIDF),
        "wait='no'",
    ),
    (
        "judges=5",
        lambda out: clineval.run("tcm-sd", output_dir=out, judges=5, **_TFIDF),
        "--judge 5: is not a list",
    ),
    ("model=5", lambda out: clineval.run("tcm-sd", output_dir=out, model=5), "model=5"),
    (
        "seed='3'",
        lambda out: clineval.dry_run("tcm-sd", output_dir=out, seed="3", **_TFIDF),
        "--seed 3",
    ),
    ("score(5)", lambda out: clineval.score(5), "run_dir=5"),
    ("score(force=1)", lambda out: clineval.score(out, force=1), "force=1"),
    ("compare(None)", lambda out: clineval.compare(None), "run_dirs=None"),
    ("compare([5])", lambda out: clineval.compare([5]), "run_dirs=[5]"),
    ("write_report(5)", lambda out: clineval.write_report(5), "run_dir=5"),
    (
        "RunResult.load(5)",
        lambda out: clineval.RunResult.load(5),
        "clineval.RunResult.load: run_dir=5",
    ),
    ("run()", lambda out: clineval.run(), "tasks= is missing"),
]


@pytest.mark.parametrize(
    ("call", "message"), [(c, m) for _, c, m in WRONG_TYPES], ids=[i for i, _, _ in WRONG_TYPES]
)
def test_a_wrong_type_is_an_input_error_naming_the_parameter(
    call: Callable[[Path], Any], message: str, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    with pytest.raises(clineval.InputError) as caught:
        call(out)
    assert message in str(caught.value) and "\n" not in str(caught.value)
    assert not out.exists()


def test_compare_of_one_directory_given_as_a_string(tmp_path: Path) -> None:
    """compare("DIR") is that run, not one run per character of its name."""
    out = tmp_path / "run"
    verdicts = _verdicts(tmp_path / "verdicts.jsonl")
    clineval.run("clinconsensus", cases=fixture_path(), verdicts=verdicts, output_dir=out)
    one = clineval.compare(str(out))
    assert len(one.runs) == 1
    assert one.leaderboard == clineval.compare([out]).leaderboard


# ---- run settings: one declaration (RunConfig), checked against the CLI and the API ----------


def test_run_settings_are_declared_once() -> None:
    """RunConfig is the declaration: every field is one `clineval run` option named as the
    field, one --config key and one `RunSettings` key of the Python API (its static type), and
    `run` has no option that is neither a field nor one of its own flags."""
    import inspect
    import typing

    import typer

    from clineval.api import RunSettings
    from clineval.cli import app
    from clineval.cli.run_flags import COMMAND_FLAGS
    from clineval.config import RunConfig
    from clineval.config_file import file_keys

    command: Any = typer.main.get_command(app)
    names = {param.name for param in command.commands["run"].params}
    assert names == set(RunConfig.model_fields) | set(COMMAND_FLAGS)
    assert set(file_keys().values()) == set(RunConfig.model_fields) | {"output_dir"}
    assert set(RunSettings.__annotations__) == set(RunConfig.model_fields) - {"tasks", "model"}
    for function in (clineval.run, clineval.dry_run):
        hints = typing.get_type_hints(inspect.unwrap(function), include_extras=True)
        assert typing.get_args(hints["settings"]) == (RunSettings,), function


def test_run_settings_keys_take_their_fields_types_by_one_rule() -> None:
    """RunSettings is a second list beside RunConfig (a type checker derives no TypedDict from
    a model's fields), so each key's type is held to its field's by the one rule the API
    converts by: a path setting also takes an os.PathLike, a list setting also one value;
    every other type is the field's own. `options` has its own shapes (a mapping or
    KEY=VALUE strings). Caught when written: `batch_file_in` was typed as strings only,
    while the API takes paths there."""
    import typing
    from collections.abc import Mapping, Sequence

    from clineval.api import RunSettings
    from clineval.api_arguments import PathLike
    from clineval.config import RunConfig, declared_settings

    hints = typing.get_type_hints(RunSettings)
    expected: dict[str, Any] = {}
    for name, setting in declared_settings().items():
        if name in ("tasks", "model"):  # run's own parameters
            continue
        field = RunConfig.model_fields[name].annotation
        one = PathLike if setting.path else str
        if typing.get_origin(field) is list:
            assert typing.get_args(field) == (str,), name
            expected[name] = one | Sequence[one]
        elif setting.path:
            assert field == str | None, name
            expected[name] = PathLike | None
        else:
            expected[name] = field
    expected["options"] = Mapping[str, str | int | float] | Sequence[str] | str
    assert hints == expected
