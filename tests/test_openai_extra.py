"""The `openai` SDK is an extra (`clineval[openai]`), read only by `--option
llm.transport=openai|openai-httpx`: without it every other command works, and that option is
one error line naming the extra, before anything is written. The SDK's absence is simulated
the way Python marks a module that cannot be imported (None in sys.modules)."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pytest

from clineval.cli import main
from clineval.models.options import LLM_OPTIONS

ROOT = Path(__file__).resolve().parents[1]
MODEL = "openai:fixture@http://127.0.0.1:9/v1"  # never contacted: a dry run
RUN = ["run", "tcm-sd", "--option", "tcm.data=synthetic", "--limit", "2", "-m", MODEL, "--dry-run"]


def test_the_sdk_is_an_extra_not_a_dependency() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not [d for d in project["dependencies"] if d.startswith("openai")]
    assert [d.split(">")[0] for d in project["optional-dependencies"]["openai"]] == [
        "openai[aiohttp]"
    ]


@pytest.mark.parametrize("transport", ["openai", "openai-httpx"])
def test_without_the_sdk_its_transport_is_one_line_naming_the_extra(
    transport: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)
    out = tmp_path / "run"
    assert main([*RUN, "--option", f"llm.transport={transport}", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: --option llm.transport='{transport}'")
    assert "pip install 'clineval[openai]'" in err
    assert not out.exists()


def _parse_transport(value: str) -> str:
    option = next(o for o in LLM_OPTIONS.options if o.name == "transport")
    parsed: str = option.parse(value)
    return parsed


def test_without_the_sdk_the_default_transport_is_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)
    assert _parse_transport("aiohttp") == "aiohttp"
    with pytest.raises(ValueError, match=r"clineval\[openai\]"):
        _parse_transport("openai")


def test_with_the_sdk_its_transport_is_accepted() -> None:
    pytest.importorskip("openai")
    assert _parse_transport("openai") == "openai"
    assert _parse_transport("openai-httpx") == "openai-httpx"
