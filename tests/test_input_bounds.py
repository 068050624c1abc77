"""Input refused where it enters, one `error:` line and exit 2, nothing made: numeric options
past what their consumer takes, digits that are not ASCII, a key given twice, settings that
cannot apply to the run's models or tasks, empty paths, a base URL with a query, a Slurm id of
5,000 digits, a truncated GGUF; and the inputs that must work (a predictions file whose name
holds `=`, `judge-agreement` on a read-only run directory).

Each command is the real one (`clineval.cli.main`, or a `python -m clineval` subprocess where
a mount is needed); the option tables are the declared ones, so a new option is held to the
same rules.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_run_directory import FIXTURE, _run_args, _verdicts

from clineval import rundir
from clineval.benchmarks.registry import option_groups, task_names
from clineval.cli import main
from clineval.errors import InputError
from clineval.models.predictions_files import (
    check_predictions_spec,
    predictions_file,
    predictions_map,
)
from clineval.models.spec import ModelSpec

ROOT = Path(__file__).resolve().parents[1]
# a small synthetic fixture: what these tests check does not grow with its size, its cost does
SYNTHETIC = ["--option", "tcm.data=synthetic", "--option", "tcm.synth_scale=0.05"]


def _error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: "), err
    assert "Traceback" not in err and "internal error" not in err
    return err


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str], where: Path) -> str:
    """`argv` exits 2 with one error line and leaves `where` as it was."""
    before = sorted(p.name for p in where.iterdir())
    capsys.readouterr()
    assert main(["--quiet", *argv]) == 2
    line = _error_line(capsys)
    assert sorted(p.name for p in where.iterdir()) == before
    return line


# ---- numeric options: bounded, ASCII ------------------------------------------------------
def _numeric(parse: Any) -> bool:
    """Whether `parse` reads numbers: it takes one of a few (a minimum may refuse the small)."""
    for text in ("1", "0.5", "1024"):
        try:
            value = parse(text)
        except ValueError:
            continue
        return isinstance(value, int | float | tuple) and not isinstance(value, bool)
    return False


NUMERIC = [
    (group.key(option), option.parse)
    for group in option_groups()
    for option in group.options
    if _numeric(option.parse)
]


def test_there_are_numeric_options_to_check() -> None:
    keys = {key for key, _ in NUMERIC}
    assert {"llamacpp.n_parallel", "llamacpp.n_ctx", "llamacpp.threads"} <= keys
    assert {"tcm.max_length", "clinconsensus.judge_explanation_chars"} <= keys


@pytest.mark.parametrize(("key", "parse"), NUMERIC, ids=[k for k, _ in NUMERIC])
def test_every_numeric_option_has_a_ceiling_and_takes_ascii_digits_only(
    key: str, parse: Any
) -> None:
    for huge in ("9" * 30, "1" + "0" * 21, "9" * 5000):
        with pytest.raises(ValueError, match=r"must be <=|must be between"):
            parse(huge)
    for foreign in ("\uff11", "1_0", "\u0661", "10^21"):
        with pytest.raises(ValueError, match=r"ASCII|not a number|not an integer"):
            parse(foreign)


def _numeric_flags() -> list[tuple[str, Any]]:
    """(command, param) of every int or float flag of every command."""
    import typer

    from clineval.cli import app

    found: list[tuple[str, Any]] = []

    def walk(command: Any, path: str) -> None:
        found.extend((path, p) for p in command.params if p.bare_type() in ("int", "float"))
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, f"{path} {name}")

    walk(typer.main.get_command(app), "clineval")
    return found


def test_every_numeric_flag_is_parsed_by_the_ascii_parsers() -> None:
    from clineval.cli_groups import decimal_number, whole_number

    flags = _numeric_flags()
    assert len(flags) >= 10  # run, score, compare, data synth
    unparsed = [
        f"{path} {param.opts[0]}"
        for path, param in flags
        if param.type_descriptor.parameter_info.parser
        not in {"int": whole_number, "float": decimal_number}.values()
    ]
    assert unparsed == []


@pytest.mark.parametrize("value", ["1_0", "\uff11\uff10", "\u0661\u0660", "0x10", "10^2"])
@pytest.mark.parametrize(
    "argv",
    [
        ["run", "tcm-sd", "-m", "baseline:tfidf", *SYNTHETIC, "--seed"],
        ["run", "tcm-sd", "-m", "baseline:tfidf", *SYNTHETIC, "--timeout"],
        ["compare", "--seed"],
        ["data", "synth", "--scale"],
    ],
    ids=["run-seed", "run-timeout", "compare-seed", "synth-scale"],
)
def test_a_numeric_flag_takes_ascii_digits_only(
    argv: list[str], value: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    line = _refused([*argv, value, "-o", str(out), str(tmp_path / "x")], capsys, tmp_path)
    assert f"'{argv[-1]}'" in line and "ASCII digits only" in line


def test_a_numeric_flag_in_ascii_digits_still_works(tmp_path: Path) -> None:
    from clineval.cli_groups import decimal_number, whole_number

    assert (whole_number("+5"), whole_number(" 10 "), whole_number(7)) == (5, 10, 7)
    assert (decimal_number("2.5e1"), decimal_number(".5"), decimal_number(3)) == (25.0, 0.5, 3.0)
    argv = ["run", "tcm-sd", "-m", "baseline:tfidf", *SYNTHETIC, "--seed", "10", "--limit"]
    assert (
        main(["--quiet", *argv, "+5", "--timeout", "2.5e1", "--dry-run", "-o", str(tmp_path)]) == 0
    )


TCM = ["run", "tcm-sd", "-m", "baseline:tfidf", *SYNTHETIC]
LLAMACPP = ["run", "tcm-sd", "-m", "llamacpp:/nowhere/model.gguf", *SYNTHETIC]
CLINCONSENSUS = ["run", "clinconsensus", "--cases", str(FIXTURE), "-m", "openai:m@http://h/v1"]


@pytest.mark.parametrize("dry_run", [False, True])
@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            [*LLAMACPP, "--option", "llamacpp.n_parallel=100000"],
            "--option llamacpp.n_parallel='100000': must be <= 256",
        ),
        (
            [*LLAMACPP, "--option", "llamacpp.n_ctx=100000000000"],
            "--option llamacpp.n_ctx='100000000000': must be <=",
        ),
        (
            [*LLAMACPP, "--option", "llamacpp.threads=100000"],
            "--option llamacpp.threads='100000': must be <= 512",
        ),
        (  # each within its bound, together past llama.cpp's C int
            [
                *LLAMACPP,
                "--option",
                "llamacpp.n_ctx=16777216",
                "--option",
                "llamacpp.n_parallel=256",
            ],
            "n_ctx x n_parallel",
        ),
        ([*TCM, "--option", "tcm.max_length=\uff15\uff11\uff12"], "tcm.max_length="),
        ([*TCM, "--option", "tcm.max_length=1_024"], "ASCII digits only"),
        (
            [*CLINCONSENSUS, "--option", "clinconsensus.judge_explanation_chars=10^21"],
            "clinconsensus.judge_explanation_chars='10^21': not an integer",
        ),
        (
            [*CLINCONSENSUS, "--option", "clinconsensus.judge_explanation_chars=" + "1" + "0" * 21],
            "must be <= 100000",
        ),
        (
            [*TCM, "--option", "tcm.split=dev", "--option", "tcm.split=test"],
            "--option tcm.split is given twice",
        ),
        # run settings whose consumer has a ceiling: llama.cpp's 32-bit seed, a server's C int,
        # the backoff that doubles per retry
        ([*TCM, "--seed", "9" * 20], "--seed " + "9" * 20 + ": must be <= 4294967295"),
        ([*TCM, "--max-tokens", "9" * 14], ": must be <= 2147483647"),
        ([*TCM, "--max-retries", "2000"], "--max-retries 2000: must be <= 100"),
        # settings that cannot apply to the run's models or tasks
        (
            ["run", "ner:ncbi", "-m", "baseline:crf", "--option", "ner.chunking=ncer"],
            "--option ner.chunking applies only to span tagger models, and this run has none "
            "(baseline:crf)",
        ),
        (
            [
                "run",
                "tcm-sd",
                "-m",
                "openai:m@http://h/v1",
                *SYNTHETIC,
                "--option",
                "llamacpp.n_ctx=512",
            ],
            "--option llamacpp.n_ctx applies only to llamacpp: models, and this run has none "
            "(openai:m)",
        ),
        (
            [*TCM, "--option", "tcm.answer_mapping=mrc"],
            "--option tcm.answer_mapping applies only to chat models or predictions: models, "
            "and this run has none (baseline:tfidf)",
        ),
        (
            [*LLAMACPP, "--base-url", "http://h/v1"],
            "--base-url applies to openai: models only, and --model llamacpp:/nowhere/model.gguf",
        ),
        ([*TCM, "--batch"], "--batch applies to openai: models only, and this run has none"),
        (
            [*TCM, "--batch-file-out", "requests"],
            "--batch-file-out applies to openai: models only, and this run has none",
        ),
        (
            ["run", "ner:ncbi", "-m", "baseline:crf", "--judge-errors-as-unmet"],
            "--judge-errors-as-unmet applies to none of this run's tasks (ner:ncbi)",
        ),
    ],
)
def test_a_bad_or_idle_setting_is_refused_before_anything_is_written(
    argv: list[str],
    message: str,
    dry_run: bool,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "run"
    command = [*argv, "-o", str(out), *(["--dry-run"] if dry_run else [])]
    assert message in _refused(command, capsys, tmp_path)
    assert not out.exists()


def test_an_option_for_one_model_of_the_run_is_kept(tmp_path: Path) -> None:
    """A judge reads llm.* / llamacpp.* as well as the candidate: one matching model is enough."""
    from clineval.config import RunConfig
    from clineval.run_checks import check_run_config

    config = RunConfig.checked(
        tasks=["clinconsensus"],
        model="openai:m@http://h/v1",
        judges=["openai:j@http://h/v1"],
        options={
            "llm.batch_resubmits": "3",
            "clinconsensus.judge_retries": "1",
            "clinconsensus.cases": str(FIXTURE),
        },
    )
    check_run_config(config)


def test_score_refuses_a_setting_no_task_of_the_run_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    assert main(["--quiet", *TCM, "--limit", "3", "-o", str(out)]) == 0
    results = (out / "results.json").read_bytes()
    line = _refused(["score", str(out), "--judge-errors-as-unmet"], capsys, out)
    assert "--judge-errors-as-unmet applies to none of this run's tasks (tcm-sd)" in line
    assert (out / "results.json").read_bytes() == results


# ---- empty paths ------------------------------------------------------------------------------
EMPTY_PATHS = {
    "run -o": lambda d: [*TCM, "--limit", "2", "-o", ""],
    "run --data-dir": lambda d: [*TCM, "--limit", "2", "-o", "x", "--data-dir", " "],
    "run --cases": lambda d: [*CLINCONSENSUS, "-o", "x", "--cases", ""],
    "run --batch-file-in": lambda d: [*CLINCONSENSUS, "-o", "x", "--batch-file-in", ""],
    "export -o": lambda d: ["export", str(d), "--format", "samples-csv", "-o", ""],
    "report -o": lambda d: ["report", str(d), "-o", ""],
    "report RUN_DIR": lambda d: ["report", ""],
    "merge -o": lambda d: ["merge", str(d), "-o", ""],
    "compare RUN_DIR": lambda d: ["compare", str(d), " "],
    "skills install --target": lambda d: ["skills", "install", "--target", ""],
    "data synth --out": lambda d: ["data", "synth", "tcm-sd", "--out", ""],
    "judge-agreement --labels": lambda d: ["judge-agreement", str(d), "--labels", ""],
}


@pytest.mark.parametrize("command", list(EMPTY_PATHS))
def test_an_empty_path_is_refused_naming_its_flag(
    command: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ "" would be the working directory: `run -o ""` wrote a whole run into it."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    (cwd / "mine.txt").write_text("the user's own file\n", encoding="utf-8")
    monkeypatch.chdir(cwd)
    line = _refused(EMPTY_PATHS[command](tmp_path / "somerun"), capsys, cwd)
    assert "must not be empty" in line
    flag = command.split()[-1]
    assert flag.lower() in line.lower(), line  # click names an argument by its name


def test_the_api_refuses_an_empty_path_naming_the_parameter(tmp_path: Path) -> None:
    import clineval

    with pytest.raises(InputError, match=r"clineval\.run: output_dir='': must not be empty"):
        clineval.run("tcm-sd", model="baseline:tfidf", output_dir="")
    with pytest.raises(InputError, match="--data-dir: must not be empty"):
        clineval.run("tcm-sd", model="baseline:tfidf", output_dir=tmp_path, data_dir="  ")


def test_the_api_says_how_to_give_a_file_as_the_model(tmp_path: Path) -> None:
    import clineval

    path = tmp_path / "predictions.jsonl"
    for call in (clineval.run, clineval.dry_run):
        with pytest.raises(InputError) as info:
            call("tcm-sd", model=path, output_dir=tmp_path / "run")  # type: ignore[arg-type]
        assert f"model='predictions:{path}'" in info.value.message
    assert not (tmp_path / "run").exists()


# ---- base URLs --------------------------------------------------------------------------------
SECRET = "sk-Sup3rSecret"


@pytest.mark.parametrize(
    ("extra", "flag"),
    [
        (["-m", f"openai:m@http://h/v1?api_key={SECRET}"], "--model"),
        (["-m", "openai:m", "--base-url", f"http://h/v1?key={SECRET}"], "--base-url"),
        (["-m", "openai:m@http://h/v1", "--base-url", f"http://h/v1#{SECRET}"], "--base-url"),
        (["-m", "openai:m@http://h/v1", "--judge", f"openai:j@http://h/v1?k={SECRET}"], "--judge"),
        (
            ["-m", "openai:m@http://h/v1", "--judge-base-url", f"http://h/v1?k={SECRET}"],
            "--judge-base-url",
        ),
    ],
)
@pytest.mark.parametrize("dry_run", [False, True])
def test_a_base_url_with_a_query_is_refused_without_showing_it(
    extra: list[str],
    flag: str,
    dry_run: bool,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["run", "clinconsensus", "--cases", str(FIXTURE), *extra, "-o", str(tmp_path / "r")]
    line = _refused([*argv, *(["--dry-run"] if dry_run else [])], capsys, tmp_path)
    assert line.startswith(f"error: {flag} 'http://h/v1'?...: a base URL cannot carry a query")
    assert SECRET not in line


def test_a_fetch_mirror_with_a_query_is_refused_without_showing_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["data", "fetch", "tcm-sd", "--cache-dir", str(tmp_path / "cache")]
    line = _refused([*argv, "--base-url", f"http://h/mirror?token={SECRET}"], capsys, tmp_path)
    assert line.startswith("error: --base-url http://h/mirror?...: a base URL cannot carry")
    assert SECRET not in line


# ---- predictions:TASK=FILE --------------------------------------------------------------------
def test_predictions_items_split_at_the_first_equals_sign_of_a_known_task(tmp_path: Path) -> None:
    odd = tmp_path / "a=b.jsonl"
    odd.write_text("", encoding="utf-8")
    other = tmp_path / "c.jsonl"
    other.write_text("", encoding="utf-8")
    known = task_names()
    spec = ModelSpec.parse(f"predictions: tcm-sd = {odd} , clinconsensus= {other}")
    assert predictions_map(spec, known) == {"tcm-sd": odd, "clinconsensus": other}
    assert predictions_file(spec, "tcm-sd") == odd
    assert predictions_file(spec, "clinconsensus") == other
    assert check_predictions_spec(spec, ["clinconsensus", "tcm-sd"], known) == [other, odd]
    # the left side is no task: one file, named whole in the error
    missing = ModelSpec.parse("predictions:a=b.jsonl")
    assert predictions_map(missing, known) is None
    assert predictions_file(missing, "tcm-sd") == Path("a=b.jsonl")
    # an existing file is always one file, whatever its name looks like
    assert predictions_map(ModelSpec.parse(f"predictions:{odd}"), known) is None
    with pytest.raises(InputError, match=r"item 'x\.jsonl' is not TASK=FILE"):
        predictions_map(ModelSpec.parse(f"predictions:tcm-sd={odd},x.jsonl"), known)
    with pytest.raises(InputError, match="no file for task 'tcm-sd'"):
        check_predictions_spec(
            ModelSpec.parse(f"predictions:clinconsensus={other}"),
            ["clinconsensus", "tcm-sd"],
            known,
        )


def test_a_run_reads_a_per_task_file_whose_name_holds_equals(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    verdicts = _verdicts(tmp_path / "verdicts=v2.jsonl")
    out = tmp_path / "run"
    argv = _run_args(out, verdicts)
    argv[argv.index("--model") + 1] = f"predictions:clinconsensus = {verdicts}"
    assert main(["--quiet", *argv]) == 0
    notes = json.loads((out / "manifest.json").read_text(encoding="utf-8"))["tasks"]
    assert notes["clinconsensus"]["predictions_file"]["path"] == str(verdicts)
    missing = ["--model", "predictions:a=b.jsonl"]
    line = _refused([*_run_args(tmp_path / "r2", verdicts), *missing], capsys, tmp_path)
    assert "a=b.jsonl" in line and "not found" in line


# ---- Slurm ids --------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT"])
def test_a_job_array_variable_of_5000_digits_is_named(
    name: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SLURM_ARRAY_TASK_ID", "0")
    monkeypatch.setenv("SLURM_ARRAY_TASK_COUNT", "4")
    monkeypatch.setenv(name, "9" * 5000)
    line = _refused([*TCM, "--shard", "auto", "-o", str(tmp_path / "r")], capsys, tmp_path)
    assert f"--shard auto: {name} has 5,000 digits: at most 9" in line


def test_a_shard_of_5000_digits_is_the_shard_rule(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = _refused(
        [*TCM, "--shard", "1/" + "9" * 5000, "-o", str(tmp_path / "r")], capsys, tmp_path
    )
    assert "a number of 5,000 digits is too large" in line and len(line) < 400


# ---- GGUF -------------------------------------------------------------------------------------
def test_a_truncated_gguf_is_named_before_llama_cpp_loads_it(
    gguf: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = gguf.read_bytes()
    for cut, why in ((len(data) - 1, "its tensors need"), (4096, "inside its header")):
        part = tmp_path / "partial.gguf"
        part.write_bytes(data[:cut])
        argv = ["run", "tcm-sd", "-m", f"llamacpp:{part}", *SYNTHETIC, "--dry-run"]
        line = _refused([*argv, "-o", str(tmp_path / "r")], capsys, tmp_path)
        assert line.startswith(f"error: {part}: truncated GGUF file") and why in line
    whole = tmp_path / "whole.gguf"
    shutil.copyfile(gguf, whole)
    argv = ["run", "tcm-sd", "-m", f"llamacpp:{whole}", *SYNTHETIC, "--limit", "1", "--dry-run"]
    assert main(["--quiet", *argv, "-o", str(tmp_path / "r")]) == 0


# ---- read-only and full disks -----------------------------------------------------------------
def _read_only_mount_works() -> bool:
    if not sys.platform.startswith("linux") or shutil.which("unshare") is None:
        return False
    done = subprocess.run(["unshare", "-rm", "true"], capture_output=True, check=False)
    return done.returncode == 0


@pytest.mark.skipif(not _read_only_mount_works(), reason="needs unshare (a private mount)")
def test_judge_agreement_reads_a_run_on_a_read_only_mount(tmp_path: Path) -> None:
    """Tests run as root, whom chmod does not stop: the run directory is bind-mounted
    read-only in a private mount namespace, as a read-only file system is."""
    verdicts = _verdicts(tmp_path / "verdicts.jsonl")
    run = tmp_path / "run"
    assert main(["--quiet", *_run_args(run, verdicts)]) == 0
    before = sorted(p.name for p in run.iterdir())
    script = (
        f'mount --bind "{run}" "{run}" && mount -o remount,ro,bind "{run}" && '
        f'touch "{run}/probe" 2>/dev/null && exit 99; '
        f'exec "{sys.executable}" -m clineval judge-agreement "{run}" --labels "{verdicts}"'
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    done = subprocess.run(
        ["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "judges vs 1 rater(s)" in done.stdout and "1.000" in done.stdout
    assert "judge_agreement.json not written" in done.stderr and "Read-only" in done.stderr
    assert sorted(p.name for p in run.iterdir()) == before  # nothing written, no -shm left


def test_a_full_disk_while_writing_results_is_the_only_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run with judge errors under the bound warns how to count them, once its results are
    written; when the disk fills while writing them, the error is all that is said."""
    from test_clinconsensus_data import _verdict_rows, _write

    rows = _verdict_rows([30, 7, 6, 10], errors={0: 1})
    verdicts = _write(tmp_path / "verdicts.jsonl", rows)
    argv = [*_run_args(tmp_path / "ok", verdicts), "--limit", "4", "--max-judge-error-rate", "0.5"]
    with caplog.at_level(logging.WARNING, logger="clineval"):
        assert main(argv) == 0
    assert any("hold a judge error" in r.getMessage() for r in caplog.records)
    caplog.clear()

    real = rundir._replace

    def full_for_results(path: Path, text: str) -> None:
        if path.name == "results.json":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(path, text)

    monkeypatch.setattr(rundir, "_replace", full_for_results)
    out = tmp_path / "full"
    argv[argv.index("--output-dir") + 1] = str(out)
    capsys.readouterr()
    with caplog.at_level(logging.WARNING, logger="clineval"):
        assert main(argv) == 2
    line = _error_line(capsys)
    assert "results.json: cannot write: No space left on device" in line
    assert not any("hold a judge error" in r.getMessage() for r in caplog.records)
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["status"].startswith("stopped")  # the calls stay in the store
