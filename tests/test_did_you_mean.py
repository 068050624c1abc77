"""Every lookup of a name a user types (a task, an --option key, a backend, a --config key,
an API keyword, an export format, a metric of a RunResult) answers a misspelling with the
closest name, through the one helper (clineval.messages.did_you_mean)."""

from __future__ import annotations

from pathlib import Path

import pytest

from clineval.cli import main
from clineval.messages import did_you_mean


def test_the_helper_names_the_closest_choice_or_nothing() -> None:
    assert did_you_mean("ner:ncb", ["ner:ncbi", "ner:chia", "tcm-sd"]) == (
        " (did you mean 'ner:ncbi'?)"
    )
    assert did_you_mean("zzzz", ["ner:ncbi", "tcm-sd"]) == ""
    assert did_you_mean("x", []) == ""
    # a shared namespace alone is no likeness
    assert did_you_mean("demo.bogus", ["demo.size", "demo.scale"]) == ""


def _error_of(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    return lines[0]


@pytest.mark.parametrize(
    ("extra", "wanted"),
    [
        (["ner:ncb", "-m", "baseline:empty"], "unknown task 'ner:ncb' (did you mean 'ner:ncbi'?)"),
        (
            ["ner:ncbi", "-m", "baseline:empty", "--option", "ner.tokeniser=x"],
            "--option 'ner.tokeniser' is not a known option (did you mean 'ner.tokenizer'?)",
        ),
        (
            ["ner:ncbi", "-m", "baselin:empty"],
            "unknown model backend 'baselin' in 'baselin:empty' (did you mean 'baseline'?)",
        ),
    ],
)
def test_run_suggests_the_name_meant(
    extra: list[str], wanted: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = _error_of(["run", *extra, "-o", str(tmp_path / "r"), "--dry-run"], capsys)
    assert wanted in line
    assert not (tmp_path / "r").exists()


def test_a_config_file_key_gets_a_suggestion(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "run.toml"
    config.write_text('tasks = ["ner:ncbi"]\nmodle = "baseline:empty"\n', encoding="utf-8")
    line = _error_of(["run", "--config", str(config), "-o", str(tmp_path / "r")], capsys)
    assert "unknown key 'modle' (did you mean 'model'?)" in line
    assert str(config) in line


def test_an_export_format_gets_a_suggestion(tmp_path: Path) -> None:
    from clineval.errors import InputError
    from clineval.export import export_run

    with pytest.raises(InputError, match=r"is not a known format \(did you mean 'samples-csv'\?\)"):
        export_run(tmp_path, "sample-csv", tmp_path / "out")
