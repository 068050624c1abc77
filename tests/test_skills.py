"""The Agent Skills shipped in clineval/skills stay true to the tool.

* Front matter follows the Agent Skills rules (name = folder name, lowercase and hyphens, at
  most 64 characters; a description of at most 1,024 characters saying what and when), read
  alike by clineval's reader and a YAML parser.
* Every `clineval ...` line in a fenced bash block of a SKILL.md parses against the real
  command line: unknown commands, options, tasks, --option keys or model backends fail.
* Those lines run, in page order, against fixtures (synthetic TCM-SD, the ClinConsensus
  fixture cases, the real NER corpora, an OpenAI-compatible stub server on 127.0.0.1 for
  `MODEL@URL`), every one exiting 0, except the ones that need what a test cannot have (the
  network, a checkpoint, a GGUF model); and the metric names each page tabulates are keys of
  the results.json files its own commands wrote, with the primary metric marked where the
  code has it.
* `clineval skills list` / `skills install` copy, keep and refuse as documented.
"""

from __future__ import annotations

import fnmatch
import functools
import http.server
import json
import re
import shlex
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import typer.main
import yaml
from llm_stub_server import StubServer

from clineval.benchmarks.clinconsensus.cases import fixture_path
from clineval.benchmarks.ner.scoring import MODEL_TOKENS_SUFFIX
from clineval.benchmarks.registry import active_namespaces, benchmark_of, get_task, option_groups
from clineval.cli import app, main
from clineval.config import RunConfig
from clineval.errors import InputError
from clineval.option_flags import declared_flags, model_from_options, with_flags
from clineval.options import check_options, split_option_items
from clineval.run_checks import run_facts
from clineval.skills_install import (
    MAX_DESCRIPTION,
    SKILL_FILE,
    check_skill,
    front_matter,
    install,
    list_skills,
    skill_folder,
    skill_folders,
)

# The primary metric of each family as the benchmarks define them (the DESIGN's table).
PRIMARY_METRIC = {"ner": "token_macro_f1", "tcm-sd": "macro_f1", "clinconsensus": "cacs@7"}
EXPECTED_SKILLS = {
    *("tcm-sd-eval", "clinconsensus-eval", "clinical-ner-eval", "healthbench-eval", "clineval"),
}
README = Path(__file__).resolve().parent.parent / "README.md"


# ---- reading the pages -------------------------------------------------------------------------


@dataclass(frozen=True)
class Command:
    skill: str
    line: int  # 1-based line of SKILL.md where the command starts
    argv: tuple[str, ...]  # after `clineval`, placeholders not yet filled

    def __str__(self) -> str:
        return f"{self.skill}/SKILL.md:{self.line}: clineval {shlex.join(self.argv)}"


def _body(skill: str) -> str:
    return (skill_folder(skill) / SKILL_FILE).read_text(encoding="utf-8")


def page_commands(skill: str) -> list[Command]:
    """The `clineval ...` lines of the page's ```bash blocks (backslash continuations joined,
    `# comments` dropped), in page order."""
    commands: list[Command] = []
    in_bash, pending, start = False, "", 0
    for number, line in enumerate(_body(skill).splitlines(), start=1):
        stripped = line.strip()
        if stripped.startswith("```"):
            in_bash = not in_bash and stripped[3:].strip() in ("bash", "sh", "shell")
            continue
        if not in_bash:
            continue
        if not pending:
            start = number
        pending += stripped.removesuffix("\\") + " "
        if stripped.endswith("\\"):
            continue
        words = shlex.split(pending, comments=True)
        pending = ""
        if words and words[0] == "clineval":
            commands.append(Command(skill, start, tuple(words[1:])))
    return commands


def python_blocks(skill: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", _body(skill), flags=re.DOTALL)


# Placeholders the pages use (each page says what they stand for); any other word in capitals
# left in a command fails the test, so a new placeholder cannot go unfilled by accident.
PLACEHOLDERS = (
    "CASES.jsonl",
    "CHECKPOINT",
    "DATA_DIR",
    "JUDGE_A",
    "JUDGE_B",
    "JUDGE_PROMPT.txt",
    "LABELS.jsonl",
    "MIRROR_URL",
    "MODEL.gguf",
    "MODEL",
    "PREDICTIONS.jsonl",
    "PRICES.json",
    "URL",
    "VERDICTS.jsonl",
)
_PLACEHOLDER = re.compile(
    r"(?<![A-Za-z0-9_])("
    + "|".join(re.escape(p) for p in sorted(PLACEHOLDERS, key=len, reverse=True))
    + r")(?![A-Za-z0-9_])"
)
_CAPITALS = re.compile(r"(?<![A-Za-z0-9_.])[A-Z][A-Z0-9_]{2,}(?![a-z])")


def fill(argv: tuple[str, ...], values: dict[str, str]) -> list[str]:
    out = []
    for word in argv:
        filled = _PLACEHOLDER.sub(lambda m: values[m.group(1)], word)
        left = _CAPITALS.findall(filled)
        assert not left, f"unknown placeholder {left} in {word!r}"
        out.append(filled)
    return out


def not_offline(argv: list[str]) -> str | None:
    """Why a command cannot run in a test (it still has to parse), or None."""
    if argv[:2] == ["data", "fetch"] and "--base-url" not in argv:
        return "downloads from the internet"
    if any(w.startswith("hf:") for w in argv):
        return "needs a local Hugging Face checkpoint"
    if any(w.startswith("gliner:") for w in argv):
        return "needs a local GLiNER checkpoint"
    if any(w.startswith("llamacpp:") for w in argv):
        return "needs a GGUF model (and minutes of CPU per case)"
    return None


# ---- parsing against the real command line -------------------------------------------------


def parse(argv: list[str]) -> tuple[list[str], dict[str, Any]]:
    """(command path, parameters) as the real CLI parses `argv`, without running it; click's
    usage error for an unknown command or option, a missing argument, a bad value."""
    command: Any = typer.main.get_command(app)
    ctx = command.make_context("clineval", list(argv))
    path: list[str] = []
    while hasattr(command, "resolve_command"):
        rest = [*ctx._protected_args, *ctx.args]
        name, command, args = command.resolve_command(ctx, rest)
        path.append(name)
        ctx = command.make_context(name, args, parent=ctx)
    # the declared flags' values (--cases FILE) are parameters of `run` like the rest
    return path, {**ctx.params}


def check_run_settings(params: dict[str, Any]) -> None:
    """What `clineval run` checks of its settings before it reads any file: known tasks, a
    valid config (model spec, URLs, ranges), declared --option keys and values."""
    for task in params["tasks"]:
        get_task(task)
    given = {n: params[n] for n in declared_flags() if params.get(n) not in (None, False)}
    options = with_flags(split_option_items(params["options"] or []), given)
    model = params["model"] or model_from_options(options)  # --verdicts FILE: the model
    assert model is not None, "a command with neither --model nor a file standing in for it"
    config = RunConfig.checked(
        tasks=params["tasks"],
        model=model,
        judges=list(params["judges"] or []),
        base_urls=list(params["base_urls"] or []),
        limit=params["limit"],
        shard=params["shard"],
        concurrency=params["concurrency"],
        options=options,
    )
    # each key for a model of the command too: a page must not suggest one it would ignore
    check_options(options, option_groups(), active_namespaces(params["tasks"]), run_facts(config))


ANY_VALUES = {
    "CASES.jsonl": "cases.jsonl",
    "CHECKPOINT": "/models/checkpoint",
    "DATA_DIR": "data",
    "JUDGE_A": "judge-a",
    "JUDGE_B": "judge-b",
    "JUDGE_PROMPT.txt": "prompt.txt",
    "LABELS.jsonl": "labels.jsonl",
    "MIRROR_URL": "http://127.0.0.1:8001",
    "MODEL.gguf": "/models/model.gguf",
    "MODEL": "model",
    "PREDICTIONS.jsonl": "predictions.jsonl",
    "PRICES.json": "prices.json",
    "URL": "http://127.0.0.1:8000/v1",
    "VERDICTS.jsonl": "verdicts.jsonl",
}

ALL_COMMANDS = [c for skill in sorted(EXPECTED_SKILLS) for c in page_commands(skill)]


@pytest.mark.parametrize("command", ALL_COMMANDS, ids=str)
def test_every_command_parses_against_the_real_cli(command: Command) -> None:
    path, params = parse(fill(command.argv, ANY_VALUES))
    if path == ["run"]:
        check_run_settings(params)


def test_the_parser_refuses_what_the_cli_refuses() -> None:
    """The checks above can fail: an unknown option, command, task, option key or backend."""
    click = __import__("clineval.cli", fromlist=["_click_module"])._click_module()
    for argv in (
        ["run", "tcm-sd", "-m", "baseline:tfidf", "-o", "x", "--colour", "red"],
        ["runn", "tcm-sd"],
        ["data", "fetch"],
        ["skills", "install", "tcm-sd-eval"],
    ):
        with pytest.raises(click.ClickException):
            parse(argv)
    for argv in (
        ["run", "tcm-sdd", "-m", "baseline:tfidf", "-o", "x"],
        ["run", "tcm-sd", "-m", "baseline:tfidf", "-o", "x", "--option", "tcm.splitt=dev"],
        ["run", "tcm-sd", "-m", "baseline:tfidf", "-o", "x", "--option", "ner.tokenizer=model"],
        ["run", "tcm-sd", "-m", "gpt:x", "-o", "x"],
    ):
        with pytest.raises(InputError):
            check_run_settings(parse(argv)[1])


def test_every_page_has_commands_and_only_known_placeholders() -> None:
    for skill in EXPECTED_SKILLS:
        commands = page_commands(skill)
        assert len(commands) >= 5, skill
        for command in commands:
            fill(command.argv, ANY_VALUES)  # raises on a word in capitals we do not fill


# ---- front matter ----------------------------------------------------------------------------


def test_the_shipped_skills_and_their_front_matter() -> None:
    folders = {p.name for p in skill_folders()}
    assert folders == EXPECTED_SKILLS == {s.name for s in list_skills()}
    for skill in list_skills():
        text = (skill.path / SKILL_FILE).read_text(encoding="utf-8")
        raw = text.split("---\n")[1]
        assert yaml.safe_load(raw) == front_matter(text, skill.path / SKILL_FILE)
        assert skill.name == skill.path.name and len(skill.name) <= 64
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", skill.name)
        assert 0 < len(skill.description) <= MAX_DESCRIPTION
        assert "Use when" in skill.description  # says when, beside what
        assert len(text.splitlines()) <= 500, f"{skill.name}: move detail to a reference file"


@pytest.mark.parametrize(
    ("folder", "text", "message"),
    [
        ("a-skill", "name: a-skill\ndescription: x\n---\n", "no front matter"),
        ("a-skill", "---\nname: other\ndescription: x\n---\n", "differs from the folder"),
        ("A-Skill", "---\nname: A-Skill\ndescription: x\n---\n", "lowercase"),
        ("a--skill", "---\nname: a--skill\ndescription: x\n---\n", "single hyphens"),
        ("a" * 65, "---\nname: " + "a" * 65 + "\ndescription: x\n---\n", "at most 64"),
        ("a-skill", "---\nname: a-skill\ndescription: " + "x" * 1025 + "\n---\n", "1 to 1024"),
        ("a-skill", "---\nname: a-skill\n---\n", "1 to 1024"),
        ("a-skill", "---\nname: a-skill\ndescription: x\n", "not closed"),
    ],
)
def test_bad_front_matter_is_refused(tmp_path: Path, folder: str, text: str, message: str) -> None:
    (tmp_path / folder).mkdir()
    (tmp_path / folder / SKILL_FILE).write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=re.escape(message)):
        check_skill(tmp_path / folder)


# ---- facts the pages state ---------------------------------------------------------------------


def test_pages_cite_the_papers_the_readme_cites_and_the_tcm_licence() -> None:
    readme = README.read_text(encoding="utf-8")
    for skill, arxiv in (
        ("clinical-ner-eval", "arXiv:2410.05046"),
        ("tcm-sd-eval", "arXiv:2203.10839"),
        ("clinconsensus-eval", "arXiv:2603.02097"),
    ):
        assert arxiv in readme and arxiv in _body(skill)
    assert "CC BY-NC-SA 4.0" in _body("tcm-sd-eval") and "non-commercial" in _body("tcm-sd-eval")


def _choices(option: Any) -> list[str]:
    """The values a choice option accepts, as its parser names them when it refuses one."""
    try:
        option.parse("\x00not a value")
    except ValueError as exc:
        found = re.match(r"must be one of (.*)", str(exc))
        if found:
            return found.group(1).split(", ")
    return []


def _option_pages() -> list[tuple[Path, Any]]:
    """(skill page, option group): each benchmark's groups on its own page, the model layer's
    on the clineval page."""
    from clineval.benchmarks.registry import benchmarks
    from clineval.models.options import MODEL_OPTION_GROUPS

    out = [(skill_folder("clineval") / SKILL_FILE, g) for g in MODEL_OPTION_GROUPS]
    for bench in benchmarks():
        if bench.skills_dir is not None:
            (page,) = sorted(bench.skills_dir.glob("*/SKILL.md"))
            out += [(page, group) for group in bench.options]
    return out


def test_every_option_is_on_its_page_with_its_values_and_default() -> None:
    """A page's options table has a row per key of its groups: with every value a choice
    accepts and the default, so an agent never guesses what a key takes."""
    for page, group in _option_pages():
        rows = [line for line in page.read_text(encoding="utf-8").splitlines() if line[:2] == "| "]
        for option in group.options:
            key = group.key(option)
            found = [r for r in rows if f"`{key}`" in r.split(" | ")[0]]
            assert found, f"{page}: no row for {key}"
            for value in _choices(option):
                assert f"`{value}`" in found[0], f"{page}: {key} does not name {value!r}"
            if option.default is not None:
                assert option.default in found[0], f"{page}: {key} does not say its default"


def documented_metrics(skill: str) -> tuple[set[str], str | None]:
    """Keys named in the first column of the page's results table, and the one marked
    **primary**."""
    text = _body(skill)
    section = text.split("## Reading the results", 1)[1].split("\n## ", 1)[0]
    keys: set[str] = set()
    primary = None
    for row in section.splitlines():
        if not row.startswith("| `"):
            continue
        first = row.split("|")[1]
        names = re.findall(r"`([^`]+)`", first)
        keys.update(names)
        if "**primary**" in row:
            primary = names[0]
    return keys, primary


def test_pages_mark_the_primary_metric_the_tasks_declare() -> None:
    for skill, task in (
        ("tcm-sd-eval", "tcm-sd"),
        ("clinconsensus-eval", "clinconsensus"),
        ("clinical-ner-eval", "ner:ncbi"),
    ):
        _, primary = documented_metrics(skill)
        bench = benchmark_of(task)
        assert bench is not None
        assert primary == bench.metrics.primary.key == PRIMARY_METRIC[task.split(":")[0]]


def assert_documented_metrics_were_written(
    skill: str, runs: Path, only_offline_skipped: frozenset[str] = frozenset()
) -> None:
    """Every key the page tabulates is in a results.json its commands wrote, but for those
    that only a skipped command writes (the caller names them, checked from the code)."""
    written: set[str] = set(only_offline_skipped)
    for results in runs.rglob("results.json"):
        for metrics in json.loads(results.read_text(encoding="utf-8")).values():
            written.update(metrics)
    keys, _ = documented_metrics(skill)
    unknown = {k for k in keys if not fnmatch.filter(written, k)}
    assert not unknown, f"{skill}: the page names metrics no run wrote: {sorted(unknown)}"
    # and the other way: every key a run wrote is in the page's table
    undocumented = {w for w in written if not any(fnmatch.fnmatch(w, k) for k in keys)}
    assert not undocumented, f"{skill}: results keys the page does not name: {sorted(undocumented)}"


# ---- running the pages against fixtures ---------------------------------------------------------


@pytest.fixture
def stub() -> Iterator[StubServer]:
    with StubServer(latency=0.0) as server:
        yield server


def _common_values(stub: StubServer, tmp_path: Path) -> dict[str, str]:
    cases = fixture_path()
    verdicts, labels = tmp_path / "verdicts.jsonl", tmp_path / "labels.jsonl"
    with verdicts.open("w", encoding="utf-8") as v, labels.open("w", encoding="utf-8") as lab:
        for i, line in enumerate(cases.read_text(encoding="utf-8").splitlines()):
            case = json.loads(line)
            for j, rubric in enumerate(case["rubrics"]):
                key = {"case_id": case["case_id"], "criterion_id": rubric["criterion_id"]}
                v.write(json.dumps({**key, "criteria_met": (i + j) % 3 != 0}) + "\n")
                lab.write(json.dumps({**key, "criteria_met": (i * j) % 2 == 0}) + "\n")
    prices = tmp_path / "prices.json"
    price = {"input_per_1m": 0.5, "output_per_1m": 1.5, "batch_discount": 0.5}
    prices.write_text(json.dumps({"stub-model": price}))
    prompt = tmp_path / "judge_prompt.txt"
    prompt.write_text(
        "问题：{query}\n回答：{response}\n标准：{criterion}\n"
        'Answer JSON {"explanation": "...", "criteria_met": true or false}.',
        encoding="utf-8",
    )
    return {
        "CASES.jsonl": str(cases),
        "CHECKPOINT": str(tmp_path / "no-checkpoint"),
        "JUDGE_A": "stub-judge-a",
        "JUDGE_B": "stub-judge-b",
        "JUDGE_PROMPT.txt": str(prompt),
        "LABELS.jsonl": str(labels),
        "MODEL.gguf": str(tmp_path / "no-model.gguf"),
        "MODEL": "stub-model",
        "PRICES.json": str(prices),
        "URL": stub.base_url,
        "VERDICTS.jsonl": str(verdicts),
    }


def run_page(skill: str, values: dict[str, str], cwd: Path) -> tuple[list[str], list[str]]:
    """Run the page's commands in order (in `cwd`, where their relative run directories
    land); each must exit 0. Returns (commands run, commands skipped with the reason)."""
    ran, skipped = [], []
    for command in page_commands(skill):
        argv = fill(command.argv, values)
        parse(argv)
        why = not_offline(argv)
        if why is not None:
            skipped.append(f"{command}: {why}")
            continue
        assert main(["--quiet", *argv]) == 0, str(command)
        ran.append(str(command))
    return ran, skipped


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("CLINEVAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    return work


def test_clinconsensus_page_runs(stub: StubServer, tmp_path: Path, in_tmp: Path) -> None:
    values = _common_values(stub, tmp_path)
    ran, skipped = run_page("clinconsensus-eval", values, in_tmp)
    assert len(skipped) == 1 and "GGUF" in skipped[0]
    assert len(ran) >= 10
    assert (in_tmp / "runs/cc-judged/judge_agreement.json").is_file()
    panel = json.loads((in_tmp / "runs/cc-panel/results.json").read_text())["clinconsensus"]
    assert len(panel["judges"]) == 2 and "agreement" in panel
    assert_documented_metrics_were_written("clinconsensus-eval", in_tmp / "runs")


@pytest.fixture(scope="module")
def tcm_data(data_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not (data_root / "tcm-sd" / "zy-bert" / "syndrome_vocab.txt").is_file():
        pytest.skip("TCM-SD label files not available")
    out = tmp_path_factory.mktemp("tcm-data")
    argv = ["data", "synth", "tcm-sd", "--out", str(out), "--scale", "0.05", "--seed", "3"]
    assert main(["--quiet", *argv, "--data-dir", str(data_root)]) == 0
    return out


def test_tcm_sd_page_runs(stub: StubServer, tmp_path: Path, in_tmp: Path, tcm_data: Path) -> None:
    """DATA_DIR is a synthetic stand-in of the official layout (official files absent)."""
    predictions = tmp_path / "predictions.jsonl"
    with predictions.open("w", encoding="utf-8") as fh:
        for line in (tcm_data / "tcm-sd" / "test.synthetic.json").read_text().splitlines():
            row = json.loads(line)
            fh.write(json.dumps({"id": row["user_id"], "label": row["norm_syndrome"]}) + "\n")
    values = {
        **_common_values(stub, tmp_path),
        "DATA_DIR": str(tcm_data),
        "PREDICTIONS.jsonl": str(predictions),
    }
    ran, skipped = run_page("tcm-sd-eval", values, in_tmp)
    assert len(skipped) == 2 and sum("checkpoint" in s for s in skipped) == 1
    assert sum("internet" in s for s in skipped) == 1  # data fetch tcm-sd
    assert len(ran) >= 9
    mine = json.loads((in_tmp / "runs/tcm-mine/results.json").read_text())["tcm-sd"]
    assert mine["macro_f1"] == 1.0 and mine["fixture"] is True
    assert_documented_metrics_were_written("tcm-sd-eval", in_tmp / "runs")


def _mirror_tree(source: Path, target: Path, leave_out: str) -> None:
    """A data root of symlinks to `source`'s files, without those under `leave_out`."""
    for path in source.rglob("*"):
        relative = path.relative_to(source)
        if path.is_file() and not str(relative).startswith(leave_out):
            (target / relative).parent.mkdir(parents=True, exist_ok=True)
            (target / relative).symlink_to(path)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def mirror(data_root: Path) -> Iterator[str]:
    """A static file server over the data root on 127.0.0.1: a download mirror."""
    handler = functools.partial(_QuietHandler, directory=str(data_root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _ncbi_predictions(data_root: Path, path: Path, corpus: str = "ncbi", n: int = 60) -> None:
    from clineval.benchmarks.ner.corpora import load_ner_split

    split = load_ner_split(corpus, "test", data_root)
    with path.open("w", encoding="utf-8") as fh:
        for doc in split.documents[:n]:  # the rest count as missing predictions
            spans = [{"start": s.start, "end": s.end, "type": s.type} for s in doc.entities]
            fh.write(json.dumps({"id": doc.id, "entities": spans}) + "\n")


@pytest.mark.slow
def test_clinical_ner_page_runs(
    stub: StubServer, tmp_path: Path, in_tmp: Path, data_root: Path, mirror: str
) -> None:
    """DATA_DIR starts without CHIA; the page's mirror fetch brings it (from a local server
    over the real data root); the other fetches need the internet and are only parsed."""
    data_dir = tmp_path / "data"
    _mirror_tree(data_root, data_dir, leave_out="ner/chia")
    predictions = tmp_path / "predictions.jsonl"
    _ncbi_predictions(data_root, predictions, n=10**6)  # every document: a gap would exit 1
    for corpus in ("ncbi", "bc5cdr", "biored", "chia"):  # the page's one-file-per-task run
        _ncbi_predictions(data_root, in_tmp / f"{corpus}.jsonl", corpus, n=10**6)
    values = {
        **_common_values(stub, tmp_path),
        "DATA_DIR": str(data_dir),
        "MIRROR_URL": mirror,
        "PREDICTIONS.jsonl": str(predictions),
    }
    ran, skipped = run_page("clinical-ner-eval", values, in_tmp)
    assert len(ran) >= 8 and sum("internet" in s for s in skipped) == 4
    assert sum("checkpoint" in s for s in skipped) == 2 and len(skipped) == 6
    assert (data_dir / "ner/chia/ncer_split_ids.json").is_file()
    results = json.loads((in_tmp / "runs/ner-crf/results.json").read_text())
    assert sorted(results) == ["ner:bc5cdr", "ner:biored", "ner:chia", "ner:ncbi"]
    mine = json.loads((in_tmp / "runs/ner-mine/results.json").read_text())["ner:ncbi"]
    assert mine["missing_predictions"] == 0 and mine["span_exact_precision"] == 1.0
    # only an hf checkpoint with --option ner.tokenizer=model writes this one
    model_tokens = "token_macro_f1" + MODEL_TOKENS_SUFFIX
    assert_documented_metrics_were_written(
        "clinical-ner-eval", in_tmp / "runs", frozenset({model_tokens})
    )


def test_clineval_page_runs(
    stub: StubServer, tmp_path: Path, in_tmp: Path, data_root: Path
) -> None:
    values = {**_common_values(stub, tmp_path), "DATA_DIR": str(data_root)}
    ran, skipped = run_page("clineval", values, in_tmp)
    assert not skipped and len(ran) >= 12
    merged = json.loads((in_tmp / "runs/merged/results.json").read_text())["clinconsensus"]
    assert merged["n_cases"] == 12
    assert {p.name for p in (in_tmp / ".claude/skills").iterdir()} == EXPECTED_SKILLS
    # the page's Python example runs too, in the same directory
    for block in python_blocks("clineval"):
        exec(compile(block, "clineval/SKILL.md", "exec"), {})
    assert (in_tmp / "runs/py/results.json").is_file()


# ---- skills list / install -----------------------------------------------------------------


def test_skills_list_names_every_skill(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["skills", "list"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in EXPECTED_SKILLS)


def test_install_copies_keeps_identical_and_refuses_different(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "agent" / "skills"
    assert main(["skills", "install", "tcm-sd-eval", "--target", str(target)]) == 0
    dest = target / "tcm-sd-eval"
    assert capsys.readouterr().out == f"installed tcm-sd-eval: {dest}\n"
    assert (dest / SKILL_FILE).read_bytes() == (
        skill_folder("tcm-sd-eval") / SKILL_FILE
    ).read_bytes()
    assert [p.name for p in target.iterdir()] == ["tcm-sd-eval"]  # no staging left behind

    assert main(["skills", "install", "tcm-sd-eval", "--target", str(target)]) == 0
    assert capsys.readouterr().out == f"unchanged tcm-sd-eval: {dest}\n"

    (dest / SKILL_FILE).write_text("edited by the user", encoding="utf-8")
    # refused before anything is copied: clineval, asked for first, is not installed either
    argv = ["skills", "install", "clineval", "tcm-sd-eval", "--target", str(target)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {dest}: holds a different 'tcm-sd-eval' skill")
    assert "--force" in err and len(err.splitlines()) == 1
    assert (dest / SKILL_FILE).read_text() == "edited by the user"
    assert not (target / "clineval").exists()

    assert main([*argv, "--force"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"installed clineval: {target / 'clineval'}",
        f"replaced tcm-sd-eval: {dest}",
    ]
    assert (dest / SKILL_FILE).read_bytes() == (
        skill_folder("tcm-sd-eval") / SKILL_FILE
    ).read_bytes()


def test_install_all_and_bad_names_or_targets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    done = install([], tmp_path / "all")
    assert {d.name for d in done} == EXPECTED_SKILLS and {d.status for d in done} == {"installed"}
    assert main(["skills", "install", "tcm-sd", "--target", str(tmp_path / "x")]) == 2
    assert "unknown skill 'tcm-sd' (known: " in capsys.readouterr().err
    a_file = tmp_path / "file"
    a_file.write_text("x")
    assert main(["skills", "install", "--target", str(a_file)]) == 2
    assert "--output-dir is a file" in capsys.readouterr().err
