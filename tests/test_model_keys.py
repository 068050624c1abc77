"""Each model names the environment variable of its own API key (`#key=VARIABLE` at the end of
its spec, clineval.models.spec): a key goes only to its own model's servers, a model may send
none (`#key=`), and every key stays masked. Two real stub servers on 127.0.0.1 record the
Authorization headers they were sent."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from llm_stub_server import StubServer

from clineval import secrets
from clineval.cli import main
from clineval.errors import InputError
from clineval.models.spec import ModelSpec

DEFAULT_KEY = "sk-fixture-default-key-0001"
JUDGE_KEY = "fixture-judge-secret-0002"
JUDGED = ["run", "clinconsensus", "--option", "clinconsensus.cases=fixture", "--option",
          "clinconsensus.max_criteria=1", "--limit", "2", "--max-retries", "0"]  # fmt: skip


@pytest.fixture(autouse=True)
def _forget_secrets() -> Iterator[None]:
    saved = set(secrets._registered)
    yield
    secrets._registered.clear()
    secrets._registered.update(saved)


@pytest.fixture
def stubs() -> Iterator[tuple[StubServer, StubServer]]:
    with StubServer() as candidate, StubServer() as judge:
        yield candidate, judge


@pytest.mark.parametrize(
    ("suffix", "sent"),
    [
        ("", f"Bearer {DEFAULT_KEY}"),
        ("#key=", ""),
        ("#key=JUDGE_FIXTURE_KEY", f"Bearer {JUDGE_KEY}"),
    ],
)
def test_each_model_sends_its_own_key_to_its_own_server(
    suffix: str,
    sent: str,
    stubs: tuple[StubServer, StubServer],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    candidate, judge = stubs
    monkeypatch.setenv("OPENAI_API_KEY", DEFAULT_KEY)
    monkeypatch.setenv("JUDGE_FIXTURE_KEY", JUDGE_KEY)
    out = tmp_path / "run"
    model = f"openai:cand@{candidate.base_url}{suffix}"
    judged = f"openai:judge@{judge.base_url}#key=JUDGE_FIXTURE_KEY"
    assert main([*JUDGED, "-m", model, "--judge", judged, "-o", str(out)]) == 0, capsys.readouterr()
    printed = "".join(capsys.readouterr())
    # the candidate's server saw only the candidate's key (or none), the judge's only its own
    assert set(candidate.stats()["authorization"]) == {sent}
    assert set(judge.stats()["authorization"]) == {f"Bearer {JUDGE_KEY}"}
    files = [p for p in out.rglob("*") if p.is_file()]
    for key in (DEFAULT_KEY, JUDGE_KEY):
        assert key not in printed
        assert all(key.encode() not in p.read_bytes() for p in files), key
    # the variable's name is no secret: the manifest keeps the spec as written
    assert "#key=JUDGE_FIXTURE_KEY" in (out / "manifest.json").read_text()


def test_a_named_variable_that_is_unset_is_refused_before_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("NOT_SET_FIXTURE_KEY", raising=False)
    out = tmp_path / "run"
    model = "openai:cand@http://127.0.0.1:9/v1#key=NOT_SET_FIXTURE_KEY"
    assert main([*JUDGED, "-m", model, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err == (
        "error: openai:cand: the environment variable NOT_SET_FIXTURE_KEY that its spec names "
        "for its API key (#key=NOT_SET_FIXTURE_KEY) is not set\n"
    )
    assert not out.exists()


def test_the_spec_form() -> None:
    spec = ModelSpec.parse("openai:gpt-x@https://api.example.test/v1#key=HOSTED_KEY")
    assert (spec.name, spec.base_urls, spec.api_key_variable) == (
        "gpt-x",
        ("https://api.example.test/v1",),
        "HOSTED_KEY",
    )
    assert ModelSpec.parse("openai:m#key=").api_key_variable is None  # no key at all
    assert ModelSpec.parse("openai:m").api_key_variable == "OPENAI_API_KEY"
    # the key is no part of what the model is (resume, cache)
    assert ModelSpec.parse("openai:m#key=A") == ModelSpec.parse("openai:m")
    # a key written in place of a variable's name is refused without being shown
    with pytest.raises(InputError) as refused:
        ModelSpec.parse("openai:m@http://h/v1#key=sk-live/abc+def")
    assert (
        "sk-live" not in refused.value.message and "never the key itself" in refused.value.message
    )
    # a model without a server sends no key: "#key=" is part of its name (a file path)
    assert ModelSpec.parse("predictions:runs/a#key=b.jsonl").name == "runs/a#key=b.jsonl"
