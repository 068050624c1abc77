"""Benchmark settings live in the benchmark: `--cases` is the option clinconsensus.cases and
`--dedupe` the option tcm.dedupe, flags each benchmark declares (clineval.options.Flag) and
the CLI knows only from the declarations. One setting has one value: the flag and --option
of the same key together are refused. Runs recorded when the settings were run fields still
score, report, compare, resume and print their config. Options whose value cannot apply to
the run (ner.tokenizer=model without a checkpoint, a ClinConsensus judge option with a
verdicts file, ner.hash_seed without a span tagger) are refused before anything is made.
The commands run in process (`clineval.cli.main`): what they check is how settings are read;
the front door itself is tested by test_cli_ux (real processes)."""

from __future__ import annotations

import json
import tomllib
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from cli_inprocess import Done, clineval_inprocess
from run_probe import write_fixture_verdicts

from clineval.benchmarks.clinconsensus.cases import fixture_path

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = str(fixture_path())
TCM = [
    "tcm-sd",
    *("--option", "tcm.data=synthetic", "--option", "tcm.synth_scale=0.05"),
    *("--option", "tcm.split=dev", "--model", "baseline:tfidf"),
]


def _clineval(*args: str, cwd: Path) -> Done:
    """In process: these tests are about how settings are read, not how a process starts."""
    return clineval_inprocess(*args, cwd=cwd, env={"COLUMNS": "100"})


def _refused(done: Done) -> str:
    """The one `error:` line of a command that exited 2."""
    assert done.returncode == 2, (done.returncode, done.stderr)
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    return lines[0]


def _config(run: Path) -> dict[str, Any]:
    config: dict[str, Any] = json.loads((run / "manifest.json").read_text("utf-8"))["config"]
    return config


def _as_recorded_before(run: Path, moved: dict[str, Any], keys: list[str]) -> None:
    """Rewrite the run's manifest as a clineval that kept these settings as fields did."""
    path = run / "manifest.json"
    manifest = json.loads(path.read_text("utf-8"))
    for key in keys:
        manifest["config"]["options"].pop(key, None)
    manifest["config"].update(moved)
    path.write_text(json.dumps(manifest), encoding="utf-8")


# ---- one setting, one value -------------------------------------------------------------------


def test_cases_flag_and_option_are_one_setting(tmp_path: Path) -> None:
    verdicts = write_fixture_verdicts(tmp_path / "verdicts.jsonl", cases=2)
    base = ["run", "clinconsensus", "--verdicts", str(verdicts), "--limit", "2"]
    line = _refused(
        _clineval(
            *base,
            *("--cases", FIXTURE, "--option", "clinconsensus.cases=fixture", "-o", "both"),
            cwd=tmp_path,
        )
    )
    assert line.startswith("error: --cases and --option clinconsensus.cases are one setting")
    assert not (tmp_path / "both").exists()
    # by either spelling the same value is recorded in the same place
    flag = _clineval(*base, "--cases", FIXTURE, "-o", "flag", cwd=tmp_path)
    assert flag.returncode == 0, flag.stderr
    option = _clineval(
        *base, "--option", f"clinconsensus.cases={FIXTURE}", "-o", "opt", cwd=tmp_path
    )
    assert option.returncode == 0, option.stderr
    for name in ("flag", "opt"):
        config = _config(tmp_path / name)
        assert config["options"] == {
            "clinconsensus.cases": FIXTURE,
            "clinconsensus.verdicts": str(verdicts),
        }
        assert "cases" not in config and "verdicts" not in config
        assert config["model"] == f"predictions:{verdicts}"  # the file stands in for it
    results = [json.loads((tmp_path / n / "results.json").read_text()) for n in ("flag", "opt")]
    assert results[0]["clinconsensus"]["rubric_accuracy"] == 1.0
    assert results[0]["clinconsensus"] == results[1]["clinconsensus"]
    # a resume may give the setting by the other spelling: it is the same value
    again = _clineval(
        *base, "--option", f"clinconsensus.cases={FIXTURE}", "-o", "flag", cwd=tmp_path
    )
    assert again.returncode == 0, again.stderr


def test_an_unknown_flag_is_one_line_naming_it(tmp_path: Path) -> None:
    done = _clineval(
        "run", "clinconsensus", "--casez", FIXTURE, "-m", "baseline:tfidf", "-o", "x", cwd=tmp_path
    )
    line = _refused(done)
    assert "No such option: --casez" in line
    assert not (tmp_path / "x").exists()


def test_an_empty_cases_path_is_refused_naming_the_flag(tmp_path: Path) -> None:
    verdicts = write_fixture_verdicts(tmp_path / "verdicts.jsonl", cases=1)
    for given in (["--cases", ""], ["--option", "clinconsensus.cases= "]):
        done = _clineval(
            "run", "clinconsensus", "--verdicts", str(verdicts), *given, "-o", "x", cwd=tmp_path
        )
        line = _refused(done)
        assert "must not be empty" in line and given[0] in line, line
    assert not (tmp_path / "x").exists()


def test_dedupe_flag_is_the_tcm_option(tmp_path: Path) -> None:
    done = _clineval("run", *TCM, "--dedupe", "-o", "flag", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    option = _clineval("run", *TCM, "--option", "tcm.dedupe=true", "-o", "opt", cwd=tmp_path)
    assert option.returncode == 0, option.stderr
    plain = _clineval("run", *TCM, "-o", "plain", cwd=tmp_path)
    assert plain.returncode == 0, plain.stderr
    assert _config(tmp_path / "flag")["options"]["tcm.dedupe"] == "true"
    assert "dedupe" not in _config(tmp_path / "flag")
    notes = [
        json.loads((tmp_path / n / "manifest.json").read_text())["tasks"]["tcm-sd"]
        for n in ("flag", "opt", "plain")
    ]
    assert notes[0]["dedupe_removed"] == notes[1]["dedupe_removed"] > 0
    assert "dedupe_removed" not in notes[2]
    assert notes[0]["n_evaluated"] == notes[2]["n_evaluated"] - notes[0]["dedupe_removed"]
    both = _clineval(
        "run", *TCM, "--dedupe", "--option", "tcm.dedupe=false", "-o", "x", cwd=tmp_path
    )
    assert "--dedupe and --option tcm.dedupe are one setting" in _refused(both)


# ---- --config files and `clineval config` -----------------------------------------------------


def test_config_file_takes_the_flags_and_clineval_config_round_trips(tmp_path: Path) -> None:
    verdicts = write_fixture_verdicts(tmp_path / "verdicts.jsonl", cases=2)
    file = tmp_path / "run.toml"
    file.write_text(
        f'tasks = ["clinconsensus"]\nverdicts = {json.dumps(str(verdicts))}\n'
        f"cases = {json.dumps(FIXTURE)}\nlimit = 2\n",
        encoding="utf-8",
    )
    done = _clineval("run", "--config", str(file), "-o", "a", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    given = {"clinconsensus.cases": FIXTURE, "clinconsensus.verdicts": str(verdicts)}
    assert _config(tmp_path / "a")["options"] == given
    # the command line overrides the file, by either spelling
    other = write_fixture_verdicts(tmp_path / "other.jsonl", cases=2)
    copy = tmp_path / "copy.jsonl"
    copy.write_text(Path(FIXTURE).read_text("utf-8"), encoding="utf-8")
    over = _clineval(
        "run",
        "--config",
        str(file),
        "--cases",
        str(copy),
        "--verdicts",
        str(other),
        "-o",
        "b",
        cwd=tmp_path,
    )
    assert over.returncode == 0, over.stderr
    assert _config(tmp_path / "b")["options"] == {
        "clinconsensus.cases": str(copy),
        "clinconsensus.verdicts": str(other),
    }
    assert _config(tmp_path / "b")["model"] == f"predictions:{other}"
    # a run's settings written as a file, and run again from it: the same config
    written = _clineval("config", "a", cwd=tmp_path)
    assert written.returncode == 0, written.stderr
    assert tomllib.loads(written.stdout)["option"] == given
    assert "verdicts" not in tomllib.loads(written.stdout)
    (tmp_path / "again.toml").write_text(written.stdout, encoding="utf-8")
    rerun = _clineval("run", "--config", "again.toml", "-o", "c", cwd=tmp_path)
    assert rerun.returncode == 0, rerun.stderr
    first, second = _config(tmp_path / "a"), _config(tmp_path / "c")
    assert first == second
    bad = tmp_path / "bad.toml"
    bad.write_text('tasks = ["tcm-sd"]\nmodel = "baseline:tfidf"\ndedupe = "yes"\n', "utf-8")
    line = _refused(_clineval("run", "--config", str(bad), "-o", "d", cwd=tmp_path))
    assert "key 'dedupe': must be true or false" in line


# ---- runs recorded when the settings were run fields -------------------------------------------


def test_a_run_recorded_with_cases_as_a_field_still_works(tmp_path: Path) -> None:
    verdicts = write_fixture_verdicts(tmp_path / "verdicts.jsonl", cases=2)
    argv = ["run", "clinconsensus", "--verdicts", str(verdicts), "--limit", "2", "--cases", FIXTURE]
    assert _clineval(*argv, "-o", "old", cwd=tmp_path).returncode == 0
    run = tmp_path / "old"
    before = json.loads((run / "results.json").read_text())["clinconsensus"]
    both = ["clinconsensus.cases", "clinconsensus.verdicts"]
    old = {"cases": FIXTURE, "verdicts": str(verdicts), "dedupe": False}
    _as_recorded_before(run, old, both)
    assert _config(run)["cases"] == FIXTURE and _config(run)["verdicts"] == str(verdicts)
    for command in (["score", "old"], ["report", "old", "-o", "r.html"], ["compare", "old", "old"]):
        done = _clineval(*command, cwd=tmp_path)
        assert done.returncode == 0, (command, done.stderr)
    assert (
        json.loads((run / "results.json").read_text())["clinconsensus"]["rubric_accuracy"]
        == (before["rubric_accuracy"])
    )
    written = _clineval("config", "old", cwd=tmp_path)
    assert written.returncode == 0, written.stderr
    settings = tomllib.loads(written.stdout)
    given = {"clinconsensus.cases": FIXTURE, "clinconsensus.verdicts": str(verdicts)}
    assert settings["option"] == given
    assert not {"cases", "verdicts", "dedupe"} & set(settings)
    # resumed with today's flags: the same run
    resumed = _clineval(*argv, "-o", "old", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert _config(run)["options"] == given
    assert _config(run)["model"] == f"predictions:{verdicts}"


def test_a_run_recorded_with_dedupe_as_a_field_scores_deduped(tmp_path: Path) -> None:
    assert _clineval("run", *TCM, "--dedupe", "-o", "old", cwd=tmp_path).returncode == 0
    run = tmp_path / "old"
    n = json.loads((run / "results.json").read_text())["tcm-sd"]["n"]
    _as_recorded_before(run, {"dedupe": True, "cases": None}, ["tcm.dedupe"])
    done = _clineval("score", "old", "--force", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads((run / "results.json").read_text())["tcm-sd"]["n"] == n
    written = tomllib.loads(_clineval("config", "old", cwd=tmp_path).stdout)
    assert written["option"]["tcm.dedupe"] == "true"


# ---- the Python API -----------------------------------------------------------------------------


def test_the_api_takes_the_flag_names_and_refuses_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import clineval

    verdicts = write_fixture_verdicts(tmp_path / "verdicts.jsonl", cases=2)
    monkeypatch.chdir(tmp_path)
    # the benchmark's flag names as keywords (declared by the benchmark, so untyped here)
    files: dict[str, Any] = {"verdicts": verdicts, "cases": Path(FIXTURE)}
    clineval.run("clinconsensus", **files, limit=2, output_dir="api")
    assert _config(tmp_path / "api")["options"] == {
        "clinconsensus.cases": FIXTURE,
        "clinconsensus.verdicts": str(verdicts),
    }
    both = {"clinconsensus.cases": "fixture"}
    with pytest.raises(clineval.InputError) as refused:
        clineval.run("clinconsensus", **files, options=both, output_dir="both")
    assert "--cases and --option clinconsensus.cases are one setting" in str(refused.value)
    with pytest.raises(clineval.InputError) as refused:
        clineval.run("clinconsensus", **{**files, "cases": ""}, output_dir="empty")
    assert "--cases '': must not be empty" in str(refused.value)
    assert not (tmp_path / "both").exists() and not (tmp_path / "empty").exists()


# ---- an option whose file stands in for the model ------------------------------------------------


def test_verdicts_is_an_option_whose_file_stands_in_for_the_model(tmp_path: Path) -> None:
    """--verdicts is clinconsensus.verdicts, declared to stand in for the model: alone it is
    the model (`predictions:FILE`); beside --model, a task that asks the model runs with it
    while ClinConsensus scores the file, and is not refused for the model's kind."""
    verdicts = write_fixture_verdicts(tmp_path / "verdicts.jsonl", cases=2)
    cc = ["clinconsensus", "--cases", FIXTURE, "--limit", "2"]
    # without the file, a baseline model cannot run ClinConsensus: refused before anything
    line = _refused(_clineval("run", *TCM, *cc, "-o", "none", cwd=tmp_path))
    assert "which clinconsensus cannot use" in line and not (tmp_path / "none").exists()
    mixed = _clineval("run", *TCM, *cc, "--verdicts", str(verdicts), "-o", "mixed", cwd=tmp_path)
    assert mixed.returncode == 0, mixed.stderr
    config = _config(tmp_path / "mixed")
    assert config["model"] == "baseline:tfidf" and "verdicts" not in config
    assert config["options"]["clinconsensus.verdicts"] == str(verdicts)
    results = json.loads((tmp_path / "mixed" / "results.json").read_text())
    assert results["clinconsensus"]["rubric_accuracy"] == 1.0
    assert results["clinconsensus"]["n_cases_scored"] == 2 and results["tcm-sd"]["n"] > 0
    # its value is checked as the option's, naming the flag; the file before anything is made
    empty = _refused(_clineval("run", *cc, "--verdicts", "", "-o", "e", cwd=tmp_path))
    assert empty.startswith("error: --verdicts '': must not be empty")
    absent = tmp_path / "absent.jsonl"
    line = _refused(_clineval("run", *TCM, *cc, "--verdicts", str(absent), "-o", "a", cwd=tmp_path))
    assert line == f"error: {absent}: verdicts file not found"
    assert not (tmp_path / "e").exists() and not (tmp_path / "a").exists()


def test_two_files_standing_in_for_the_model_are_refused() -> None:
    """Only the one file given is the model: with a second stand-in (a plugin's, here a
    fixture group beside the built-in declarations) `predictions:FILE` could not say which
    task reads which, so both are named and --model is asked for."""
    from clineval.benchmarks.registry import option_groups
    from clineval.errors import InputError
    from clineval.option_flags import model_from_options
    from clineval.options import Option, OptionGroup

    fixture = OptionGroup(
        "fixturebench",
        "the fixture task",
        (Option("answers", str, "a fixture answers file", None, replaces_model=True),),
    )
    groups = [*option_groups(), fixture]
    assert model_from_options({"clinconsensus.cases": "fixture"}, groups) is None
    one = {"clinconsensus.verdicts": "v.jsonl"}
    assert model_from_options(one, groups) == "predictions:v.jsonl"
    assert model_from_options({"fixturebench.answers": "a.jsonl"}, groups) == "predictions:a.jsonl"
    with pytest.raises(InputError) as caught:
        model_from_options({**one, "fixturebench.answers": "a.jsonl"}, groups)
    assert str(caught.value).startswith(
        "--verdicts FILE and --option fixturebench.answers=FILE both stand in for the model"
    )


# ---- values that cannot apply to the run ---------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["ner:ncbi", "-m", "baseline:crf", "--option", "ner.tokenizer=model"],
            "error: --option ner.tokenizer=model: the model's own tokens come from an hf: "
            "checkpoint (a token classifier), and --model is not one",
        ),
        (
            ["ner:ncbi", "-m", "openai:m@http://127.0.0.1:1/v1", "--option", "ner.tokenizer=model"],
            "error: --option ner.tokenizer=model: the model's own tokens come from an hf: "
            "checkpoint (a token classifier), and --model is not one",
        ),
        (
            ["ner:ncbi", "-m", "baseline:crf", "--option", "ner.hash_seed=7"],
            "error: --option ner.hash_seed applies only to span tagger models, and this run has "
            "none (baseline:crf): it would be ignored",
        ),
        (
            [
                "clinconsensus",
                "--verdicts",
                "VERDICTS",
                "--option",
                "clinconsensus.judge_retries=1",
            ],
            "error: --option clinconsensus.judge_retries=1: no judge is called when the verdicts "
            "come from a file (--verdicts FILE)",
        ),
        (
            [
                "clinconsensus",
                "-m",
                "predictions:VERDICTS",
                "--option",
                "clinconsensus.judge_max_tokens=64",
            ],
            "error: --option clinconsensus.judge_max_tokens=64: no judge is called when the "
            "verdicts come from a file (--verdicts FILE)",
        ),
        (
            [
                "clinconsensus",
                "--verdicts",
                "VERDICTS",
                "--option",
                "clinconsensus.judge_input_tokens=9",
            ],
            "error: --option clinconsensus.judge_input_tokens=9: no judge is called when the "
            "verdicts come from a file (--verdicts FILE)",
        ),
    ],
)
@pytest.mark.parametrize("dry_run", [False, True])
def test_a_value_that_cannot_apply_is_refused_before_anything_is_made(
    argv: list[str], expected: str, dry_run: bool, tmp_path: Path
) -> None:
    verdicts = write_fixture_verdicts(tmp_path / "verdicts.jsonl", cases=1)
    argv = [a.replace("VERDICTS", str(verdicts)) for a in argv]
    if argv[0] == "clinconsensus":
        argv += ["--cases", FIXTURE]
    done = _clineval("run", *argv, "-o", "run", *(["--dry-run"] if dry_run else []), cwd=tmp_path)
    assert _refused(done) == expected
    assert not (tmp_path / "run").exists()


def test_the_same_values_apply_where_they_can(tmp_path: Path) -> None:
    """The rules refuse only where the value would be ignored: regex tokens for any model,
    judge options for a judged run (planned, no server needed)."""
    ner = ["ner:ncbi", "-m", "openai:m@http://127.0.0.1:1/v1", "--option", "ner.tokenizer=regex"]
    done = _clineval("run", *ner, "--limit", "1", "-o", "n", "--dry-run", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    judged = ["clinconsensus", "--cases", FIXTURE, "-m", "openai:m@http://127.0.0.1:1/v1"]
    judged += ["--option", "clinconsensus.judge_retries=1", "--limit", "1"]
    done = _clineval("run", *judged, "-o", "c", "--dry-run", cwd=tmp_path)
    assert done.returncode == 0, done.stderr


# ---- a flag that would mean two settings ------------------------------------------------------


def test_a_flag_named_as_a_clineval_setting_or_taken_is_left_out(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A plugin's option flag named as one of clineval's own settings (`--limit`), or as
    another option's flag (`--cases`), would give one name two meanings: it is left out, with
    a warning naming the option, and the settings keep their meaning."""
    from clineval.benchmarks import Benchmark
    from clineval.benchmarks.registry import benchmarks, register, unregister
    from clineval.cli.run_flags import benchmark_flag_params
    from clineval.option_flags import declared_flags
    from clineval.options import Flag, Option, OptionGroup, text

    clinconsensus = next(b for b in benchmarks() if b.family == "clinconsensus")
    group = OptionGroup(
        "fixture_flags",
        "the fixture-flags task",
        (
            Option("limit", text(), "a fixture option", None, flag=Flag("--limit")),
            Option("cases", text(), "a fixture option", None, flag=Flag("--cases")),
            Option("own", text(), "a fixture option", None, flag=Flag("--fixture-own")),
            Option("json", text(), "a fixture option", None, flag=Flag("--json")),
        ),
    )
    register(
        Benchmark(
            family="fixture-flags",
            title="fixture",
            tasks=("fixture-flags",),
            make_task=clinconsensus.make_task,
            metrics=clinconsensus.metrics,
            options=(group,),
        )
    )
    try:
        flags = declared_flags()
        # --json: no setting's name, but a flag of `clineval run` itself
        made = benchmark_flag_params({"--json"})
    finally:
        unregister("fixture-flags")
    assert flags["cases"][0].namespace == "clinconsensus"
    # the group as declared, handed out with the backends' names (registry.option_groups)
    assert "limit" not in flags and replace(flags["fixture_own"][0], backends=()) == group
    assert "--json" not in {opt for param in made for opt in param.opts}
    warned = [r.getMessage() for r in caplog.records]
    # whatever the clash, one wording: the flag, its key, why, and how to give the key
    limit = (
        "the flag --limit of --option fixture_flags.limit is left out (clineval has a setting"
        " of that name); give --option fixture_flags.limit=VALUE"
    )
    cases = (
        "the flag --cases of --option fixture_flags.cases is left out (--option"
        " clinconsensus.cases has it); give --option fixture_flags.cases=VALUE"
    )
    json = (
        "the flag --json of --option fixture_flags.json is left out (clineval run has a flag"
        " of that name); give --option fixture_flags.json=VALUE"
    )
    # benchmark_flag_params reads the declarations again, so their two warnings come twice
    assert warned == [limit, cases, limit, cases, json]


def test_a_flag_is_declared_as_a_long_flag() -> None:
    """A declaration's mistake is found when it is made, not on a user's command line."""
    from clineval.options import Flag

    assert Flag("--fixture-flag").setting == "fixture_flag"
    for bad in ("-c", "cases", "--Cases", "--x_y", "--"):
        with pytest.raises(ValueError, match="is not --name"):
            Flag(bad)


def test_the_command_line_overrides_a_config_file_by_either_spelling(tmp_path: Path) -> None:
    verdicts = write_fixture_verdicts(tmp_path / "verdicts.jsonl", cases=2)
    head = f'tasks = ["clinconsensus"]\nverdicts = {json.dumps(str(verdicts))}\nlimit = 2\n'
    files = {
        "option.toml": head + 'option = {"clinconsensus.cases" = "fixture"}\n',
        "flag.toml": head + 'cases = "nowhere.jsonl"\n',
        "both.toml": head + 'cases = "x.jsonl"\noption = {"clinconsensus.cases" = "fixture"}\n',
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    # the file's option, the command line's flag: the flag's value
    done = _clineval("run", "--config", "option.toml", "--cases", FIXTURE, "-o", "a", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    verdicts_key = {"clinconsensus.verdicts": str(verdicts)}
    assert _config(tmp_path / "a")["options"] == {"clinconsensus.cases": FIXTURE, **verdicts_key}
    # the file's flag, the command line's option: the option's value
    over = ["--option", "clinconsensus.cases=fixture"]
    done = _clineval("run", "--config", "flag.toml", *over, "-o", "b", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert _config(tmp_path / "b")["options"] == {"clinconsensus.cases": "fixture", **verdicts_key}
    # one file giving both spellings gives the setting twice
    line = _refused(_clineval("run", "--config", "both.toml", "-o", "c", cwd=tmp_path))
    assert "--cases and --option clinconsensus.cases are one setting" in line
    assert not (tmp_path / "c").exists()


def test_model_tokens_need_a_token_classifier_not_a_causal_lm(tmp_path: Path) -> None:
    """`hf:PATH` is a chat model or a checkpoint by its config.json: read up front, a causal
    LM is refused for ner.tokenizer=model before it predicts a document; a token classifier
    is not."""
    for name, architecture in (
        ("causal", "LlamaForCausalLM"),
        ("tagger", "BertForTokenClassification"),
    ):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps({"architectures": [architecture]}))
    argv = ["run", "ner:ncbi", "--option", "ner.tokenizer=model", "--dry-run"]
    line = _refused(_clineval(*argv, "-m", "hf:causal", "-o", "c", cwd=tmp_path))
    assert line.startswith("error: --option ner.tokenizer=model: the model's own tokens come")
    done = _clineval(*argv, "-m", "hf:tagger", "-o", "t", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
