"""A new user's command lines: usage errors and refused values are one `error:` line and exit 2
(under the installed typer, which parses with its own vendored click since 0.29), nothing is
written for a refused command, `clineval` alone is help and success, and Ctrl-C / SIGTERM while
starting or running end with one line, never a traceback."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_process import default_sigint, signal_while_starting
from llm_stub_server import StubServer
from run_probe import count_stored_calls, write_fixture_verdicts

from clineval.benchmarks.clinconsensus.cases import fixture_path
from clineval.cli import main
from clineval.rundir import read_json
from clineval.store import STORE_FILENAME

CLINCONSENSUS = ["run", "clinconsensus", "--option", "clinconsensus.cases=fixture"]
STUB_MODEL = "openai:m@http://127.0.0.1:9/v1"


def _one_error_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err and "internal error" not in err
    return lines[0]


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["run", "clinconsensus", "-o", "R"], "--model"),
        (["run", "clinconsensus", "-m", STUB_MODEL], "--output-dir"),
        (["run", "-m", STUB_MODEL, "-o", "R"], "TASK"),
        (["run", "clinconsensus", "-m", STUB_MODEL, "-o", "R", "--bogus"], "--bogus"),
        (["frobnicate"], "frobnicate"),
        (["run", "clinconsensus", "-m", STUB_MODEL, "-o", "R", "--limit", "abc"], "--limit"),
        (["score"], "RUN_DIR"),
        (["data", "fetch"], "NAME"),
    ],
)
def test_usage_errors_exit_2_with_one_line(
    argv: list[str], expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [str(tmp_path / a) if a == "R" else a for a in argv]
    assert main(argv) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert expected.lower() in line.lower()
    assert "--help" in line  # says where the usage is
    assert not (tmp_path / "R").exists()


@pytest.mark.parametrize("argv", [[], ["data"]])
def test_no_arguments_prints_help_and_succeeds(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 0
    out = capsys.readouterr()
    assert "Usage" in out.out and "--help" in out.out and out.err == ""


def test_the_installed_executable_parses_with_typers_own_click(tmp_path: Path) -> None:
    """The same through `python -m clineval` (the entry module), whatever click typer uses."""
    help_run = subprocess.run(
        [sys.executable, "-m", "clineval"], capture_output=True, text=True, timeout=120
    )
    assert help_run.returncode == 0 and "Usage" in help_run.stdout, help_run.stderr
    bad = subprocess.run(
        [sys.executable, "-m", "clineval", "run", "clinconsensus", "--nope"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 2
    assert "--nope" in _one_error_line(bad.stderr)


# Every value the issue listed as silently accepted (or crashing) before: (extra argv, what the
# error line must say). Each one is refused before the run directory is created.
REFUSED = [
    (["--limit", "-1"], "--limit -1: must be >= 1"),
    (["--limit", "0"], "--limit 0: must be >= 1"),
    (["--max-retries", "-1"], "--max-retries -1: must be >= 0"),
    (["--max-judge-error-rate", "nan"], "--max-judge-error-rate nan: must be a finite number"),
    (["--max-judge-error-rate", "-0.1"], "--max-judge-error-rate -0.1: must be >= 0"),
    (["--max-judge-error-rate", "1.5"], "--max-judge-error-rate 1.5: must be <= 1"),
    (["--temperature", "nan"], "--temperature nan: must be a finite number"),
    (["--max-tokens", "0"], "--max-tokens 0: must be >= 1"),
    (["--max-tokens", "-5"], "--max-tokens -5: must be >= 1"),
    (["--timeout", "inf"], "--timeout inf: must be a finite number"),
    (["--timeout", "0"], "--timeout 0: must be > 0"),
    (["--concurrency", "0"], "--concurrency 0: must be >= 1"),
    # bounded as servers bound them: OpenAI's temperature range, a sane most calls at once
    (["--temperature", "1e3"], "--temperature 1000: must be <= 2"),
    (["--temperature", "2.01"], "--temperature 2.01: must be <= 2"),
    (["--concurrency", "1" + "0" * 26], "--concurrency 1" + "0" * 26 + ": must be <= 4096"),
    (["--concurrency", "4097"], "--concurrency 4097: must be <= 4096"),
    # a number past a float's range is refused as written, never echoed as inf
    (["--max-judge-error-rate", "1e400"], "'1e400' is too large (not a finite number)"),
    (["--timeout", "-1e400"], "'-1e400' is too large (not a finite number)"),
    (["--option", "llm.backoff_base_s=nan"], "llm.backoff_base_s='nan': must be a finite number"),
    (["--option", "llm.backoff_max_s=-1"], "llm.backoff_max_s='-1': must be >= 0"),
    (["--option", "llm.transport=curl"], "llm.transport='curl': must be one of"),
    (["--option", "llamacpp.n_ctx=10"], "llamacpp.n_ctx='10': must be >= 256"),
    (["--base-url", "http://127.0.0.1:99999/v1"], "the port is not a number in 1..65535"),
    (["--base-url", "http://127.0.0.1:abc/v1"], "the port is not a number in 1..65535"),
    (["--base-url", "ftp://host/v1"], "is not http(s)://HOST"),
    (["--base-url", "http://[::1"], "--base-url 'http://[::1' is not a valid URL"),
    (["--base-url", "http://[zz::1]/"], "--base-url 'http://[zz::1]/' is not a valid URL"),
    (["--judge", "openai:j@http://[::1"], "--judge 'http://[::1' is not a valid URL"),
    (["--judge", "openai:j@http://127.0.0.1:99999/v1"], "--judge"),
    (["--option", "clinconsensus.bogus=1"], "'clinconsensus.bogus' is not a known option"),
    (["--option", "zzz.x=1"], "'zzz.x' is not a known option; valid keys: ner.*"),
    (["--option", "=x"], "'=x' is not KEY=VALUE"),
    (["--option", "novalue"], "'novalue' is not KEY=VALUE"),
    (["--option", "ner.tokenizer=regex"], "applies to the ner:* tasks"),
    (["--option", "clinconsensus.k=0"], "clinconsensus.k='0': must be >= 1"),
]


@pytest.mark.parametrize("dry_run", [False, True])
@pytest.mark.parametrize(("extra", "message"), REFUSED)
def test_bad_values_are_refused_before_anything_is_written(
    extra: list[str],
    message: str,
    dry_run: bool,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "run"
    argv = [*CLINCONSENSUS, "-m", STUB_MODEL, "-o", str(out), *extra]
    assert main([*argv, "--dry-run"] if dry_run else argv) == 2
    assert message in _one_error_line(capsys.readouterr().err)
    assert not out.exists()


def test_model_url_port_is_checked_at_dry_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for url in ("http://127.0.0.1:99999/v1", "http://127.0.0.1:abc/v1"):
        argv = [*CLINCONSENSUS, "-m", f"openai:m@{url}", "-o", str(tmp_path / "r"), "--dry-run"]
        assert main(argv) == 2
        assert "--model" in _one_error_line(capsys.readouterr().err)


@pytest.mark.parametrize(
    "task", ["ner:ncbi", "ner:bc5cdr", "ner:biored", "ner:chia", "tcm-sd", "clinconsensus"]
)
@pytest.mark.parametrize("shard", ["4/3", "0/3", "a/b", "1/0", "1", "-1/3"])
def test_every_task_refuses_a_bad_shard(
    task: str, shard: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    assert main(["run", task, "-m", "baseline:crf", "-o", str(out), "--shard", shard]) == 2
    assert "--shard" in _one_error_line(capsys.readouterr().err)
    assert not out.exists()


@pytest.mark.parametrize("task", ["ner:ncbi", "tcm-sd", "clinconsensus"])
@pytest.mark.parametrize("key", ["ner.bogus", "tcm.bogus", "zzz.x", "llm.bogus"])
def test_every_task_refuses_an_unknown_option_listing_the_valid_keys(
    task: str, key: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["run", task, "-m", "baseline:crf", "-o", str(tmp_path / "r"), "--option", f"{key}=1"]
    assert main(argv) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert f"'{key}' is not a known option" in line
    listed = {"ner": "ner.tokenizer", "tcm": "tcm.split", "llm": "llm.transport"}
    namespace = key.partition(".")[0]
    if namespace in listed:  # the keys of the namespace the user meant
        assert f"valid keys of {namespace}.*:" in line and listed[namespace] in line
    else:  # a namespace no one declares: the namespaces
        assert "valid keys: ner.*" in line and "tcm.*" in line and "llm.*" in line


def test_output_dir_that_is_a_file_or_a_symlink_loop(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("not a directory")
    loop = tmp_path / "loop"
    loop.symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(loop)
    under_file = a_file / "run"
    for out, message in [
        (a_file, "is a file, not a directory"),
        (loop, "symlink loop"),
        (under_file, "lies under a file, not a directory"),
    ]:
        assert main([*CLINCONSENSUS, "-m", STUB_MODEL, "-o", str(out), "--dry-run"]) == 2
        line = _one_error_line(capsys.readouterr().err)
        assert message in line and "--output-dir" in line
    assert a_file.read_text() == "not a directory"


def test_verdicts_file_needs_no_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Scoring a verdicts file calls no model, so --model is not asked for; without either the
    error says what to give."""
    cases = fixture_path()
    verdicts = write_fixture_verdicts(tmp_path / "verdicts.jsonl", cases=2)
    out = tmp_path / "run"
    argv = ["run", "clinconsensus", "--cases", str(cases), "--verdicts", str(verdicts)]
    assert main([*argv, "--limit", "2", "-o", str(out)]) == 0, capsys.readouterr().err
    results = read_json(out / "results.json")["clinconsensus"]
    assert results["rubric_accuracy"] == 1.0 and results["n_cases_scored"] == 2
    assert main(["run", "clinconsensus", "--cases", str(cases), "-o", str(tmp_path / "x")]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert "missing option '--model' / '-m' (or --verdicts FILE, which stands in for it)" in line


# ---- signals ---------------------------------------------------------------------------------
@pytest.mark.parametrize(("signame", "code"), [("SIGINT", 130), ("SIGTERM", 143)])
def test_signal_during_start_up_is_one_line(signame: str, code: int) -> None:
    proc = signal_while_starting(signame, "--help")
    assert proc.returncode == code, proc.stderr
    assert proc.stderr.splitlines() == [
        "aborted ("
        + ("interrupted" if code == 130 else "terminated by SIGTERM")
        + ") while starting: nothing was run"
    ]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("sig", "code", "why"),
    [
        (signal.SIGTERM, 143, "terminated by SIGTERM"),
        (signal.SIGINT, 130, "interrupted"),
    ],
)
def test_signal_mid_run_stops_like_ctrl_c_with_one_line(
    sig: signal.Signals, code: int, why: str, tmp_path: Path
) -> None:
    """SIGTERM (what `kill`, systemd and batch schedulers send) ends a run as Ctrl-C does: one
    line on stderr (not wrapped: stderr is a pipe here), manifest "stopped", the calls made so
    far kept, and a resume completes."""
    out = tmp_path / "run"
    with StubServer(latency=0.0) as stub:
        stub.script([], default={"do": "ok", "latency": 0.05})
        command = [
            sys.executable, "-m", "clineval", "--quiet", *CLINCONSENSUS,
            "--model", f"openai:cand@{stub.base_url}", "--judge", f"openai:judge@{stub.base_url}",
            "--concurrency", "4", "--output-dir", str(out),
        ]  # fmt: skip
        proc = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=default_sigint
        )
        deadline = time.monotonic() + 120
        while count_stored_calls(out / STORE_FILENAME) < 20 and time.monotonic() < deadline:
            assert proc.poll() is None, "the run finished before the signal"
            time.sleep(0.02)
        proc.send_signal(sig)
        _, err_bytes = proc.communicate(timeout=120)
        err = err_bytes.decode()
        assert proc.returncode == code, err[-2000:]
        message = [line for line in err.splitlines() if line.startswith("aborted")]
        assert message == [
            f"aborted ({why}): every model call that finished is in the run store; "
            "run the same command again to resume"
        ], err[-2000:]
        assert "Traceback" not in err
        assert read_json(out / "manifest.json")["status"].startswith("stopped: ")
        kept = count_stored_calls(out / STORE_FILENAME)
        assert kept >= 20
        stub.script([], default={"do": "ok", "latency": 0.0})
        resumed = subprocess.run(command, capture_output=True, timeout=300)
        assert resumed.returncode == 0, resumed.stderr.decode()[-2000:]
        assert read_json(out / "manifest.json")["status"] == "finished"
        assert count_stored_calls(out / STORE_FILENAME) >= kept


def test_report_output_that_is_a_directory_and_run_dirs_that_are_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = fixture_path()
    verdicts = write_fixture_verdicts(tmp_path / "verdicts.jsonl", cases=1, met=False)
    run = tmp_path / "run"
    argv = ["run", "clinconsensus", "--cases", str(cases), "--verdicts", str(verdicts)]
    assert main([*argv, "--limit", "1", "-o", str(run)]) == 0
    capsys.readouterr()
    assert main(["report", str(run), "-o", str(tmp_path)]) == 2
    assert "is a directory" in _one_error_line(capsys.readouterr().err)
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    for argv in (["report", str(a_file)], ["score", str(a_file)], ["compare", str(a_file)]):
        assert main(argv) == 2, argv
        assert str(a_file) in _one_error_line(capsys.readouterr().err)
    assert a_file.read_text() == "x"


def test_tasks_options_lists_every_declared_key(capsys: pytest.CaptureFixture[str]) -> None:
    from clineval.benchmarks.registry import option_groups

    assert main(["tasks", "--options"]) == 0
    out = capsys.readouterr().out
    keys = [group.key(option) for group in option_groups() for option in group.options]
    assert len(keys) == len(set(keys)) > 20
    missing = [key for key in keys if key not in out]
    assert missing == []


def test_a_mistyped_model_file_creates_nothing_and_the_corrected_command_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = fixture_path()
    verdicts = write_fixture_verdicts(tmp_path / "verdicts.jsonl", cases=1)
    out = tmp_path / "run"
    argv = ["run", "clinconsensus", "--cases", str(cases), "--limit", "1", "-o", str(out)]
    assert main([*argv, "--model", f"predictions:{tmp_path / 'verdcits.jsonl'}"]) == 2
    assert "predictions file not found" in _one_error_line(capsys.readouterr().err)
    assert not out.exists()
    assert main([*argv, "--model", f"predictions:{verdicts}"]) == 0


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["run", "clinconsensus", "-m", STUB_MODEL, "-o", "R", "--quiet"],
            "error: clineval run: --quiet is an option of clineval itself: give it before the "
            "command ('clineval --quiet run ...')",
        ),
        (
            ["data", "fetch", "x", "--debug"],
            "error: clineval data fetch: --debug is an option of clineval itself: give it "
            "before the command ('clineval --debug data fetch ...')",
        ),
    ],
)
def test_a_global_option_after_the_command_says_where_it_goes(
    argv: list[str], expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """click would answer `run ... --quiet` with the subcommand's nearest option
    ("Possible options: --wait"), which sends the reader the wrong way."""
    argv = [str(tmp_path / a) if a == "R" else a for a in argv]
    assert main(argv) == 2
    assert _one_error_line(capsys.readouterr().err) == expected
    assert not (tmp_path / "R").exists()


def test_install_completion_with_home_a_file_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.write_text("not a directory", encoding="utf-8")
    monkeypatch.setenv("HOME", str(home))
    assert main(["--install-completion", "bash"]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert line.startswith(f"error: --install-completion bash: cannot write {home}")
    assert home.read_text(encoding="utf-8") == "not a directory"


def test_tasks_options_of_one_task_lists_only_what_its_run_reads(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from clineval.benchmarks.registry import active_namespaces, option_groups

    monkeypatch.setenv("COLUMNS", "80")
    assert main(["tasks", "ner:ncbi", "--options"]) == 0
    out = capsys.readouterr().out
    active = active_namespaces(["ner:ncbi"])
    for group in option_groups():
        for option in group.options:
            key = group.key(option)
            # each key starts its own line (a definition list), the others are not there
            listed = any(line.startswith(f"  {key}  (") for line in out.splitlines())
            assert listed == (group.namespace in active), key
    assert "ner.tokenizer  (default regex)" in out
    assert not any(line.startswith("tcm.") for line in out.split())
    assert max(len(line) for line in out.splitlines()) <= 80
    assert main(["tasks", "ner:ncb", "--options"]) == 2
    assert "did you mean 'ner:ncbi'?" in _one_error_line(capsys.readouterr().err)


def test_tasks_options_json_of_one_task(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    assert main(["tasks", "tcm-sd", "--options", "--json"]) == 0
    keys = [row["key"] for row in json.loads(capsys.readouterr().out)["options"]]
    assert "tcm.split" in keys and not [key for key in keys if key.startswith("ner.")]
