"""The in-process llama.cpp server (xllamacpp): loopback only, a free port, stopped on exit."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from clineval.errors import InputError
from clineval.models.llamacpp_server import (
    LlamaCppServer,
    LlamaCppSettings,
    check_gguf,
)


def test_smollm2_gguf_is_found(gguf: Path) -> None:
    assert gguf.suffix == ".gguf" and gguf.is_file()
    assert check_gguf(gguf) == gguf.resolve()


def test_check_gguf_rejects_missing_and_foreign_files(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not found") as missing:
        check_gguf(tmp_path / "absent.gguf")
    assert missing.value.path == str(tmp_path / "absent.gguf")
    fake = tmp_path / "fake.gguf"
    fake.write_bytes(b"PK\x03\x04 not a model")
    with pytest.raises(InputError, match="magic"):
        check_gguf(fake)
    with pytest.raises(InputError, match="not found"):
        LlamaCppServer(tmp_path / "absent.gguf")


def test_settings_from_options() -> None:
    settings = LlamaCppSettings.from_options(
        {"llamacpp.n_parallel": "3", "llamacpp.n_ctx": "2048", "llamacpp.threads": "1"}
    )
    assert (settings.n_parallel, settings.n_ctx_per_slot, settings.threads) == (3, 2048, 1)
    assert LlamaCppSettings.from_options({}) == LlamaCppSettings()
    with pytest.raises(InputError, match=r"llamacpp\.n_ctx"):
        LlamaCppSettings.from_options({"llamacpp.n_ctx": "big"})


@pytest.mark.llm
def test_server_lifecycle(gguf: Path) -> None:
    server = LlamaCppServer(gguf, LlamaCppSettings(n_parallel=1, n_ctx_per_slot=512))
    with server:
        base_url = server.base_url
        assert base_url is not None
        parts = urlsplit(base_url)
        assert parts.hostname == "127.0.0.1" and parts.port and parts.path == "/v1"
        assert server.start() == base_url  # starting again is a no-op
        with urllib.request.urlopen(base_url + "/models", timeout=30) as resp:
            models = json.loads(resp.read())
        assert models["data"] and models["object"] == "list"
    assert server.base_url is None
    with pytest.raises(OSError):
        urllib.request.urlopen(base_url + "/models", timeout=5)


def test_the_readiness_wait_reports_an_address_where_nothing_serves() -> None:
    """`start` waits for llama.cpp's task loop to answer `/slots` (a server stopped before
    its loop ran never stopped: perf/llamacpp_stop_race.py); an address where nothing
    answers is reported, not waited on for ever."""
    from clineval.models.llamacpp_server import _wait_until_serving

    problem = _wait_until_serving("http://127.0.0.1:1")
    assert problem is not None and "refused" in problem.lower()


@pytest.mark.llm
def test_a_started_server_answers_slots_at_once(gguf: Path) -> None:
    with LlamaCppServer(gguf, LlamaCppSettings(n_parallel=1, n_ctx_per_slot=512)) as server:
        assert server.base_url is not None
        root = server.base_url.removesuffix("/v1")
        with urllib.request.urlopen(root + "/slots", timeout=5) as reply:
            slots = json.loads(reply.read())
        assert [slot["id"] for slot in slots] == [0]
