"""Every judge its own replicas (`--judge-base-url`): calls reach the judge's fleet, never the
candidate's; wrong uses are one-line errors naming the flag; the manifest keeps the URLs with
credentials masked; shards may use other replicas. Real stub servers on 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from llm_stub_server import StubServer

from clineval.benchmarks.clinconsensus.cases import fixture_path
from clineval.cli import main
from clineval.config import RunConfig
from clineval.errors import InputError

FIXTURE = str(fixture_path())


@pytest.fixture(scope="module")
def servers() -> Iterator[list[StubServer]]:
    with StubServer() as cand, StubServer() as a, StubServer() as b, StubServer() as c:
        yield [cand, a, b, c]


@pytest.fixture(autouse=True)
def _fresh(servers: list[StubServer]) -> None:
    for server in servers:
        server.reset()


def _run(out: Path, *extra: str) -> int:
    argv = ["run", "clinconsensus", "--cases", FIXTURE, "--limit", "4"]
    argv += ["--option", "clinconsensus.max_criteria=5", "--max-retries", "0"]
    return main([*argv, "--output-dir", str(out), *extra])


def _requests(servers: list[StubServer]) -> list[int]:
    return [s.stats()["requests"] for s in servers]


def test_a_judge_fleet_apart_from_the_candidates(tmp_path: Path, servers: list[StubServer]) -> None:
    cand, a, b, _ = servers
    extra = ["--model", "openai:cand", "--base-url", cand.base_url, "--judge", "openai:judge"]
    extra += ["--judge-base-url", a.base_url, "--judge-base-url", b.base_url]
    assert _run(tmp_path / "run", *extra) == 0
    counts = _requests(servers)
    assert counts[0] == 4  # the candidate's answers only
    assert counts[1] + counts[2] == 4 * 5 and counts[1] and counts[2]  # the judge's fleet
    assert counts[3] == 0


def test_judges_named_in_judge_equals_url(tmp_path: Path, servers: list[StubServer]) -> None:
    cand, a, b, c = servers
    extra = ["--model", f"openai:cand@{cand.base_url}"]
    extra += ["--judge", "openai:ja", "--judge", f"openai:jb@{c.base_url}"]
    # by its model name, and by its label (adding to the @URL of its spec)
    extra += ["--judge-base-url", f"ja={a.base_url}", "--judge-base-url", f"openai:jb={b.base_url}"]
    assert _run(tmp_path / "run", *extra) == 0
    counts = _requests(servers)
    assert counts[0] == 4 and counts[1] == 20 and counts[2] + counts[3] == 20


def test_the_candidate_judging_itself_may_use_its_own_judge_fleet(
    tmp_path: Path, servers: list[StubServer]
) -> None:
    cand, a, _, _ = servers
    extra = ["--model", "openai:m", "--base-url", cand.base_url, "--judge-base-url", a.base_url]
    assert _run(tmp_path / "run", *extra) == 0
    assert _requests(servers)[:2] == [4, 20]
    # without --judge-base-url the self-judging candidate keeps using --base-url, as before
    assert _run(tmp_path / "run2", "--model", "openai:m", "--base-url", cand.base_url) == 0
    assert _requests(servers)[:2] == [4 + 4 + 20, 20]


def test_manifest_keeps_judge_replicas_masked(tmp_path: Path, servers: list[StubServer]) -> None:
    cand, a, _, _ = servers
    secret = a.base_url.replace("http://", "http://user:hunter2-SECRET@")
    extra = ["--model", f"openai:cand@{cand.base_url}", "--judge", "openai:judge"]
    assert _run(tmp_path / "run", *extra, "--judge-base-url", f"judge={secret}") == 0
    text = (tmp_path / "run" / "manifest.json").read_text()
    assert "hunter2-SECRET" not in text
    config = json.loads(text)["config"]
    assert config["judge_base_urls"] == [f"judge={a.base_url.replace('http://', 'http://***@')}"]


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (
            {"judges": ["openai:a", "openai:b"], "judge_base_urls": ["http://h:1/v1"]},
            "--judge-base-url 'http://h:1/v1': there are 2 judges; write JUDGE=URL",
        ),
        (
            {"judges": ["openai:a"], "judge_base_urls": ["c=http://h:1/v1"]},
            "--judge-base-url 'c=http://h:1/v1': 'c' is not a judge of this run (judges: openai:a)",
        ),
        (
            {"judges": ["openai:a"], "judge_base_urls": ["a=ftp://h/v1"]},
            "--judge-base-url 'ftp://h/v1' is not http(s)://HOST[:PORT]/PATH",
        ),
        (
            {"judges": ["openai:a"], "judge_base_urls": ["a=http://[zz::1]/v1"]},
            "--judge-base-url 'http://[zz::1]/v1' is not a valid URL",
        ),
        (
            {"judges": ["openai:a"], "judge_base_urls": ["http://[::1"]},
            "--judge-base-url 'http://[::1' is not a valid URL",
        ),
        (
            {"judges": ["openai:a"], "judge_base_urls": ["a="]},
            "--judge-base-url '' is not http(s)://HOST[:PORT]/PATH",
        ),
        (
            {"judges": ["openai:a"], "judge_base_urls": ["no-url-here"]},
            "--judge-base-url 'no-url-here' is not URL or JUDGE=URL",
        ),
        (
            {"judges": ["llamacpp:/m.gguf"], "judge_base_urls": ["http://h:1/v1"]},
            "llamacpp:/m.gguf is not an openai: model",
        ),
        (
            {"judges": ["openai:a"], "judge_base_urls": ["a=http://h:99999/v1"]},
            "the port is not a number in 1..65535",
        ),
    ],
)
def test_wrong_judge_base_urls_are_refused(settings: dict[str, list[str]], message: str) -> None:
    with pytest.raises(InputError) as info:
        RunConfig.checked(tasks=["clinconsensus"], model="openai:cand", **settings)
    assert message in info.value.message


def test_refused_on_the_command_line_as_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    extra = ["--model", "openai:c@http://127.0.0.1:9/v1", "--judge", "openai:a"]
    extra += ["--judge", "openai:b", "--judge-base-url", "http://127.0.0.1:9/v1"]
    assert _run(tmp_path / "run", *extra) == 2
    assert capsys.readouterr().err.splitlines() == [
        "error: --judge-base-url 'http://127.0.0.1:9/v1': there are 2 judges; write JUDGE=URL"
    ]
    assert not (tmp_path / "run").exists()


def test_judge_replicas_of_a_config() -> None:
    config = RunConfig.checked(
        tasks=["clinconsensus"],
        model="openai:cand",
        base_urls=["http://c:1/v1"],
        judges=["openai:cand", "openai:j"],
        judge_base_urls=["openai:j=http://j1:1/v1", "j=http://j2:1/v1"],
    )
    as_judge, judge = config.models.judges
    assert judge.base_urls == ("http://j1:1/v1", "http://j2:1/v1")
    assert as_judge.base_urls == ("http://c:1/v1",)  # the candidate's


def test_shards_may_reach_a_judge_at_other_replicas(tmp_path: Path) -> None:
    from clineval.merge import _check_same_run

    shards = [
        {"judges": ["openai:j"], "judge_base_urls": ["http://a:1/v1"], "seed": 0},
        {"judges": ["openai:j"], "judge_base_urls": ["j=http://b:1/v1"], "seed": 0},
    ]
    _check_same_run(shards, [tmp_path, tmp_path])  # HOW a shard ran, not WHAT it asked
    with pytest.raises(InputError, match="seed"):
        _check_same_run([shards[0], {**shards[1], "seed": 1}], [tmp_path, tmp_path])


def test_a_validators_value_error_is_its_own_words_without_a_made_up_flag() -> None:
    """A ValueError raised by a check of the whole config (pydantic puts it at no field) is
    shown as its message, not as `--?: Value error, ...`; one at a field names its flag."""
    import pydantic

    from clineval.config import input_error

    class Whole(pydantic.BaseModel):
        judge_base_urls: list[str] = []

        @pydantic.model_validator(mode="after")
        def _check(self) -> Whole:
            raise ValueError("the judge host is not valid")

        @pydantic.field_validator("judge_base_urls")
        @classmethod
        def _field(cls, value: list[str]) -> list[str]:
            if value:
                raise ValueError("not a URL")
            return value

    with pytest.raises(pydantic.ValidationError) as whole:
        Whole()
    assert input_error(whole.value).message == "the judge host is not valid"
    with pytest.raises(pydantic.ValidationError) as field:
        Whole(judge_base_urls=["x"])
    assert input_error(field.value).message == "--judge-base-url: not a URL"
