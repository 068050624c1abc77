"""The command line as a user meets it: --version, every command's --help rendered in a pipe
(in process) and on a terminal (a real process on a pty), shell completion, validated choices,
the output-path spellings, --json on stdout, and run --config FILE.toml with its round trip."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import struct
import subprocess
import sys
import termios
import tomllib
from pathlib import Path
from typing import Any

import pytest
import typer
from cli_inprocess import Done, bash_completion, clineval_inprocess

import clineval
from clineval.cli import _help_as_written, app, main
from clineval.models.registry import BACKEND_TABLE

REPO = Path(__file__).resolve().parents[1]
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# typer's type labels for values that declare no metavar
TYPE_LABEL = re.compile(r"<(list\[|bool>|int>|str>|float>|path>)")


def cli(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> Any:
    """`clineval ARGS` as a shell runs it: a new interpreter, its exit code and streams."""
    return subprocess.run(
        [sys.executable, "-m", "clineval", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "100", **(env or {})},
        cwd=cwd or REPO,
        timeout=300,
    )


def inproc(*args: str, env: dict[str, str] | None = None) -> Done:
    """`clineval ARGS` (no --quiet added) called in this process on 100 columns, for what the
    command prints rather than how a process starts."""
    return clineval_inprocess(*args, env={"COLUMNS": "100", **(env or {})}, quiet=False)


def _pty_output(argv: list[str]) -> str:
    """What `argv` shows on a 100-column terminal (a real pty), colours removed."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 100, 0, 0))
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "100", "TERM": "xterm-256color"}
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen(
        argv, stdin=follower, stdout=follower, stderr=follower, env=env, cwd=REPO
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert proc.wait(timeout=60) == 0
    return ANSI.sub("", b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n"))


# Prints each help of argv[1] (a JSON list of command words) on the terminal it is given, each
# after a line of its own, through the entry `python -m clineval` runs: one interpreter for
# every help, not one each.
_HELPS_ON_A_TERMINAL = """
import json, sys
from clineval.entry import main
for words in json.loads(sys.argv[1]):
    print("@@help " + " ".join(words), flush=True)
    sys.argv = ["clineval", *words, "--help"]
    code = main()
    sys.stdout.flush()
    print("@@exit %d" % code, flush=True)
"""


def helps_on_terminal(paths: list[list[str]]) -> dict[tuple[str, ...], str]:
    """`clineval WORDS --help` for each of `paths`, as a terminal (a real pty) shows it."""
    text = _pty_output([sys.executable, "-c", _HELPS_ON_A_TERMINAL, json.dumps(paths)])
    out: dict[tuple[str, ...], str] = {}
    for chunk in text.split("@@help ")[1:]:
        head, _, rest = chunk.partition("\n")
        body, _, code = rest.rpartition("@@exit ")
        assert code.strip() == "0", (head, code)
        out[tuple(head.split())] = body
    assert len(out) == len(paths)
    return out


def command_paths() -> list[tuple[list[str], Any]]:
    """Every command and group of the CLI, as (words, click command), help as rendered."""
    root: Any = typer.main.get_command(app)
    root.commands["run"].add_benchmark_flags()  # as `run` does when it is parsed
    _help_as_written(root)
    out: list[tuple[list[str], Any]] = []

    def walk(words: list[str], command: Any) -> None:
        out.append((words, command))
        for name, sub in getattr(command, "commands", {}).items():
            walk([*words, name], sub)

    walk([], root)
    return out


# ---- --version ------------------------------------------------------------------------------


def test_version_prints_the_package_version_and_loads_nothing_heavy() -> None:
    done = cli("--version")
    assert (done.returncode, done.stdout, done.stderr) == (
        0,
        f"clineval {clineval.__version__}\n",
        "",
    )
    # both spellings through the entry module, in a fresh interpreter that loads nothing heavy
    probe = (
        "import sys\n"
        "from clineval.entry import main\n"
        "for flag in ('--version', '-V'):\n"
        "    sys.argv = ['clineval', flag]\n"
        "    assert main() == 0\n"
        "heavy = [m for m in ('typer', 'rich', 'pydantic', 'clineval.cli') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 0, done.stderr
    assert (done.stdout, done.stderr) == (f"clineval {clineval.__version__}\n" * 2, "")
    # after a global option it is still answered (by the CLI itself)
    done = inproc("--debug", "--version")
    assert (done.returncode, done.stdout) == (0, f"clineval {clineval.__version__}\n")


# ---- --help -----------------------------------------------------------------------------------


def _option_rows(text: str, option: Any) -> list[str]:
    """The rendered lines of an option's row (its first line and the wrapped ones after)."""
    lines = text.splitlines()
    name = next(o for o in option.opts if o.startswith("--"))
    pattern = re.compile(rf"│\s+(\*\s+)?{re.escape(name)}(\s|,|$)")
    for i, line in enumerate(lines):
        if pattern.search(line):
            row = [line]
            for after in lines[i + 1 :]:
                if re.match(r"│\s+(\*\s+)?-", after) or not after.startswith("│"):
                    break
                row.append(after)
            return row
    raise AssertionError(f"{name} is not in the help:\n{text}")


@pytest.mark.parametrize("terminal", [False, True], ids=["pipe", "terminal"])
def test_every_help_describes_every_option_as_written(terminal: bool) -> None:
    paths = command_paths()
    # on a terminal: every help from one interpreter on a pty; in a pipe: in this process
    shown = helps_on_terminal([words for words, _ in paths]) if terminal else {}
    for words, command in paths:
        if terminal:
            text = shown[tuple(words)]
        else:
            done = inproc(*words, "--help")
            assert done.returncode == 0, done.stderr
            text = done.stdout
        where = f"clineval {' '.join(words)} --help"
        assert not TYPE_LABEL.search(text), (where, TYPE_LABEL.search(text))
        for param in command.params:
            if param.param_type_name != "option" or param.hidden:
                continue
            row = " ".join(_option_rows(text, param))
            # what is left of the row without the option's names and metavar is its help
            rest = row.replace("│", " ")
            for token in [*param.opts, *param.secondary_opts, param.metavar or ""]:
                rest = rest.replace(token, " ", 1) if token else rest
            assert re.search(r"[A-Za-z]{3,}", rest), (where, param.opts, row)
        if not words:  # the command list: each command's summary whole, not cut at a newline
            wide = inproc("--help", env={"COLUMNS": "250"}).stdout
            for name, sub in command.commands.items():
                line = next(ln for ln in wide.splitlines() if re.match(rf"│ {name}\s", ln))
                assert " ".join(sub.short_help.replace("\\", "").split()) in " ".join(line.split())
    run_help = shown[("run",)] if terminal else inproc("run", "--help").stdout
    assert "[@base_url]" in run_help
    for panel in ("Model", "Judge", "Data", "Output", "Run control", "Batch"):
        assert f"─ {panel} ─" in run_help
    # the flags benchmarks keep for their options, listed from the declarations
    assert "─ Benchmark flags (each one --option KEY of a benchmark) ─" in run_help
    flat = " ".join(run_help.replace("│", " ").split())
    for flag, key in (
        ("--cases FILE", "clinconsensus.cases"),
        ("--dedupe", "tcm.dedupe"),
        ("--verdicts FILE", "clinconsensus.verdicts"),
    ):
        assert flag in flat and f"(--option {key};" in flat, (flag, flat)
    # the one whose file stands in for the model says so (declared: Option.replaces_model)
    assert "clinconsensus task; stands in for --model)" in flat
    assert "Examples:" in run_help and "clineval tasks --options" in run_help
    for info in BACKEND_TABLE:  # the list comes from the backend table
        assert info.form and f"{info.name}:{info.form.split(':')[0]}" in run_help


# ---- completion ---------------------------------------------------------------------------------


def test_shell_completion_script_and_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    """The script for a shell named on the command line, with no shell to detect (a new
    session, no $SHELL: as in CI or an agent's tool call), then the answers the shell gets."""
    env = {k: v for k, v in os.environ.items() if k != "SHELL"}
    env.update(PYTHONPATH=str(REPO), COLUMNS="100")
    # a process in a session of its own (no terminal, no $SHELL): the bash script
    script = subprocess.run(
        [sys.executable, "-m", "clineval", "--show-completion", "bash"],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        start_new_session=True,
        stdin=subprocess.DEVNULL,
    )
    assert script.returncode == 0, script.stderr
    assert "_CLINEVAL_COMPLETE" in script.stdout and "complete -o" in script.stdout, script.stdout
    # the others (and the answers) in this process, $SHELL unset too
    monkeypatch.delenv("SHELL", raising=False)
    for shell, mark in {"zsh": "compdef", "fish": "complete --command clineval"}.items():
        shown = inproc("--show-completion", shell)
        assert shown.returncode == 0, shown.stderr
        assert "_CLINEVAL_COMPLETE" in shown.stdout and mark in shown.stdout, shown.stdout

    assert bash_completion("clineval ru") == ["run"]
    assert bash_completion("clineval compare --format m") == ["markdown"]
    assert bash_completion("clineval run tcm") == ["tcm-sd"]
    # a benchmark's declared flag completes as clineval's own do
    assert bash_completion("clineval run clinconsensus --ca") == ["--cases"]
    wrong = inproc("--show-completion", "tcsh")
    assert wrong.returncode == 2 and "'bash', 'zsh', 'fish'" in wrong.stderr


# ---- choices ------------------------------------------------------------------------------------


def test_compare_format_is_a_choice(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["compare", str(tmp_path), "--format", "xlsx"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: clineval compare: ")
    assert "'--format'" in err and "'xlsx'" in err
    assert all(f"'{name}'" in err for name in ("table", "markdown", "csv", "html", "json"))
    assert "Value error" not in err


# ---- output paths -------------------------------------------------------------------------------


def test_output_dir_is_the_one_spelling_and_old_ones_still_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for flag in ("--output-dir", "-o", "--target"):
        folder = tmp_path / f"skills{flag}"
        assert main(["skills", "install", "clineval", flag, str(folder)]) == 0
        assert (folder / "clineval" / "SKILL.md").is_file()
    both = ["skills", "install", "-o", str(tmp_path / "a"), "--target", str(tmp_path / "b")]
    assert main(both) == 2
    assert main(["skills", "install"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert "not both" in err[0] and "Missing option '--output-dir' / '-o'" in err[1]
    synth = inproc("data", "synth", "tcm-sd", "--help").stdout
    install = inproc("skills", "install", "--help").stdout
    assert "--output-dir" in synth and "--out " not in synth and "--out," not in synth
    assert "--output-dir" in install and "--target" not in install


def test_data_synth_old_and_new_spelling_write_the_same(data_root: Path, tmp_path: Path) -> None:
    if not (data_root / "tcm-sd" / "zy-bert" / "syndrome_vocab.txt").is_file():
        pytest.skip("TCM-SD label files not available")
    written = {}
    for flag in ("-o", "--out"):
        out = tmp_path / flag.strip("-")
        argv = ["data", "synth", "tcm-sd", flag, str(out), "--scale", "0.01"]
        assert main([*argv, "--data-dir", str(data_root)]) == 0
        written[flag] = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert written["-o"] and written["-o"] == written["--out"]


# ---- --json and --config on real runs -----------------------------------------------------------


@pytest.fixture(scope="module")
def tcm_fixture(data_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not (data_root / "tcm-sd" / "zy-bert" / "syndrome_vocab.txt").is_file():
        pytest.skip("TCM-SD label files not available")
    out = tmp_path_factory.mktemp("tcm-synthetic")
    argv = ["data", "synth", "tcm-sd", "-o", str(out), "--scale", "0.03"]
    assert main([*argv, "--data-dir", str(data_root)]) == 0
    return out


def json_stdout(*args: str, code: int = 0, process: bool = False) -> Any:
    """The JSON document a command prints (in this process, or in a new one as a shell runs
    it): stdout must parse whole."""
    done = cli(*args) if process else inproc(*args)
    assert done.returncode == code, done.stderr
    return json.loads(done.stdout)


def test_json_on_stdout_of_tasks_run_score_compare(tcm_fixture: Path, tmp_path: Path) -> None:
    listed = json_stdout("tasks", "--json", process=True)
    assert {"tcm-sd", "clinconsensus"} <= {t["task"] for t in listed["tasks"]}
    assert all(isinstance(t["data"], list) and t["metrics"] for t in listed["tasks"])
    keys = json_stdout("tasks", "--options", "--json")["options"]
    assert any(o["key"].startswith("tcm.") for o in keys)

    run_a, run_b = tmp_path / "a", tmp_path / "b"
    base = ["run", "tcm-sd", "-m", "baseline:tfidf", "--data-dir", str(tcm_fixture), "--json"]
    plan = json_stdout(*base, "--dry-run", "-o", str(run_a))
    assert plan["dry_run"] is True and plan["rows"] == [] and not run_a.exists()
    first = json_stdout(*base, "-o", str(run_a))
    on_disk = json.loads((run_a / "results.json").read_text(encoding="utf-8"))
    assert first["status"] == "done" and first["run_dir"] == str(run_a)
    assert first["results"] == on_disk
    assert first["results"]["tcm-sd"]["fixture"] is True
    json_stdout(*base, "--seed", "1", "-o", str(run_b))

    rescored = json_stdout("score", str(run_a), "--json")
    assert rescored["results"]["tcm-sd"]["macro_f1"] == first["results"]["tcm-sd"]["macro_f1"]

    for flags in (["--json"], ["--format", "json"]):
        compared = json_stdout("compare", str(run_a), str(run_b), *flags)
        assert [r["run_dir"] for r in compared["runs"]] == [str(run_a), str(run_b)]
        cell = next(
            c for c in compared["leaderboard"] if c["run"] == "a" and c["metric"] == "macro_f1"
        )
        assert cell["value"] == first["results"]["tcm-sd"]["macro_f1"]
        assert compared["pairs"] and compared["pairs"][0]["n_shared"] > 0


def test_json_of_a_run_that_fails_a_bound_still_has_its_results(tmp_path: Path) -> None:
    """Port 9 on loopback refuses every call: the run writes its results and exits 1; stdout
    is still one JSON document, with status "failed" and the reason."""
    run_dir = tmp_path / "run"
    failed = json_stdout("run", "clinconsensus", "-m", "openai:m@http://127.0.0.1:9/v1",
                         "--option", "clinconsensus.cases=fixture",
                         "--option", "clinconsensus.max_criteria=1", "--limit", "1",
                         "--max-retries", "0", "-o", str(run_dir), "--json", code=1,
                         process=True)  # fmt: skip
    on_disk = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    assert failed["status"] == "failed" and failed["error"]
    assert failed["results"] == json.loads(json.dumps(on_disk).replace("NaN", "null"))


def test_config_file_round_trip_and_flags_override(tcm_fixture: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "first"
    argv = ["run", "tcm-sd", "-m", "baseline:tfidf", "--data-dir", str(tcm_fixture)]
    first = json_stdout(*argv, "--seed", "3", "--option", "tcm.fields=chief_complaint", "--json",
                        "-o", str(run_dir))  # fmt: skip
    written = inproc("config", str(run_dir))
    assert written.returncode == 0, written.stderr
    settings = tomllib.loads(written.stdout)
    assert settings["tasks"] == ["tcm-sd"] and settings["model"] == "baseline:tfidf"
    assert settings["seed"] == 3 and settings["output_dir"] == str(run_dir)
    assert settings["option"] == {"tcm.fields": "chief_complaint"}
    config = tmp_path / "run.toml"
    config.write_text(written.stdout, encoding="utf-8")

    again = json_stdout("run", "--config", str(config), "-o", str(tmp_path / "again"), "--json")
    assert again["results"] == first["results"]
    manifest = json.loads((tmp_path / "again" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["config"]["seed"] == 3
    assert manifest["config"]["options"] == {"tcm.fields": "chief_complaint"}

    # a flag given with --config wins over the file's key; a list flag replaces the file's list
    other = tmp_path / "other"
    json_stdout("run", "--config", str(config), "--seed", "4", "--option", "tcm.split=dev",
                "-o", str(other), "--json")  # fmt: skip
    manifest = json.loads((other / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["config"]["seed"] == 4
    assert manifest["config"]["options"] == {"tcm.split": "dev"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            'tasks = ["tcm-sd"]\nmodle = "baseline:tfidf"\n',
            "unknown key 'modle' (did you mean 'model'?",
        ),
        ('tasks = ["tcm-sd"]\nlimit = "5"\n', "key 'limit': '5' is not an integer"),
        ('tasks = ["tcm-sd"]\nlimit = 0\n', "key 'limit': 0 must be >= 1"),
        ("tasks = [1]\n", "key 'tasks': [1][0] is not a string"),
        ('judge = ["a", 2]\n', "key 'judge': ['a', 2][1] is not a string"),
        ('option = {"tcm.split" = true}\n', "key 'option': tcm.split: the value must be"),
        ('option = ["tcm.split"]\n', "key 'option': 'tcm.split' is not KEY=VALUE"),
        ("dry_run = true\n", "unknown key 'dry_run'"),
        ('tasks = ["tcm-sd"]\ntemperature = 9\n', "key 'temperature': 9 must be <= 2"),
        # an `option` key is named as the file's, never as a --option not typed
        (
            'tasks = ["tcm-sd"]\noption = {"tcm.splt" = "dev"}\n',
            "run.toml: option 'tcm.splt' is not a known option (did you mean 'tcm.split'?)",
        ),
        ('tasks = ["tcm-sd"]\noption = ["tcm.split=nope"]\n', "run.toml: option tcm.split='nope'"),
        # what only the run decides (its tasks read no ner.* key) too
        (
            'tasks = ["tcm-sd"]\noption = {"ner.tokenizer" = "regex"}\n',
            "run.toml: option ner.tokenizer applies to the ner:* tasks, which this run does not",
        ),
        ("max-tokens = 5\nmax_tokens = 6\n", "key 'max_tokens' is given twice"),
        ('tasks = ["tcm-sd"]\nmodel =\n', "run.toml:2: not TOML: Invalid value"),
        ('tasks = ["tcm-sd"\n', "run.toml: not TOML: Unclosed array"),
        # Python's TOML reader recurses once per level: a RecursionError, named as the file's
        (
            'tasks = ["tcm-sd"]\n\noption = ' + "[" * 5000 + "]" * 5000 + "\n",
            "run.toml:3: nested too deeply for a run file (5,000 levels)",
        ),
        ("x = " + "{a=" * 5000 + "1" + "}" * 5000, "run.toml:1: nested too deeply"),
    ],
)
def test_a_bad_config_file_is_one_line_naming_file_and_key(
    text: str, expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "run.toml"
    config.write_text(text, encoding="utf-8")
    out = tmp_path / "out"
    assert main(["run", "--config", str(config), "-m", "baseline:tfidf", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: {tmp_path}/run.toml"), err
    assert expected in err, err
    assert not out.exists()


def test_config_needs_tasks_and_output_dir_from_somewhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "run.toml"
    config.write_text('model = "baseline:tfidf"\n', encoding="utf-8")
    assert main(["run", "--config", str(config), "-o", str(tmp_path / "o")]) == 2
    assert main(["run", "tcm-sd", "--config", str(config)]) == 2
    first, second = capsys.readouterr().err.splitlines()
    assert "missing argument 'TASK...' (or tasks in --config FILE)" in first
    assert "missing option '--output-dir' / '-o' (or output_dir in --config FILE)" in second


def test_written_config_never_holds_a_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run against a server whose URL carries credentials (port 9 refuses: the run fails
    fast but writes its manifest): the settings file masks them."""
    secret = "PW-fixture-secret-4242"
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    run_dir = tmp_path / "run"
    argv = ["run", "clinconsensus", "-m", f"openai:m@http://alice:{secret}@127.0.0.1:9/v1",
            "--option", "clinconsensus.cases=fixture", "--option", "clinconsensus.max_criteria=1",
            "--limit", "1", "--max-retries", "0", "-o", str(run_dir)]  # fmt: skip
    assert main(argv) == 1
    capsys.readouterr()
    target = tmp_path / "run.toml"
    assert main(["config", str(run_dir), "-o", str(target)]) == 0
    assert main(["config", str(run_dir)]) == 0
    printed = capsys.readouterr().out
    text = target.read_text(encoding="utf-8")
    assert text == printed
    assert secret not in text
    assert tomllib.loads(text)["model"].startswith("openai:m@http://")
    # run again as written: the masked password would be sent; refused, naming the URL
    again = tmp_path / "again"
    assert main(["run", "--config", str(target), "-o", str(again)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "holds *** where its credentials were masked" in err, err
    assert "openai:m: the base URL 'http://" in err and secret not in err
    assert not again.exists()


def test_written_config_keeps_a_key_shaped_path_and_masks_a_known_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Masked are the credentials the run knows (by value), not text shaped like one: a run
    directory named like an sk- key is written back as it is, so that the file runs."""
    known = "sk-fixture-known-credential-77"
    monkeypatch.setenv("OPENAI_API_KEY", known)
    runs = tmp_path / "runs"
    shaped = runs / "sk-proj-abcdefghijklmnopqrstuvwx"
    holding = runs / f"copy-of-{known}"
    base = ["run", "tcm-sd", "--option", "tcm.data=synthetic", "--option", "tcm.synth_scale=0.05",
            "--limit", "2", "-m", "baseline:tfidf"]  # fmt: skip
    for out in (shaped, holding):
        assert main([*base, "-o", str(out)]) == 0, capsys.readouterr().err
    capsys.readouterr()
    assert main(["config", str(shaped)]) == 0
    written = tomllib.loads(capsys.readouterr().out)
    assert written["output_dir"] == str(shaped)
    assert main(["config", str(holding)]) == 0
    text = capsys.readouterr().out
    assert known not in text and tomllib.loads(text)["output_dir"] == str(runs / "copy-of-***")
