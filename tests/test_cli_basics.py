"""CLI contracts that do not depend on any task family: spec parsing and exit codes."""

from __future__ import annotations

import pytest

from clineval.cli import main
from clineval.errors import InputError
from clineval.models.spec import ModelSpec


@pytest.mark.parametrize(
    ("text", "backend", "name", "urls"),
    [
        ("baseline:crf", "baseline", "crf", ()),
        ("openai:qwen@http://127.0.0.1:8000/v1", "openai", "qwen", ("http://127.0.0.1:8000/v1",)),
        ("openai:org/model@name", "openai", "org/model@name", ()),
        ("openai:m@HTTPS://h/v1", "openai", "m", ("HTTPS://h/v1",)),
        ("predictions:/tmp/a b.jsonl", "predictions", "/tmp/a b.jsonl", ()),
        ("llamacpp:/m/x.gguf", "llamacpp", "/m/x.gguf", ()),
    ],
)
def test_model_spec_parse(text: str, backend: str, name: str, urls: tuple[str, ...]) -> None:
    spec = ModelSpec.parse(text)
    assert (spec.backend, spec.name, spec.base_urls) == (backend, name, urls)


@pytest.mark.parametrize("text", ["crf", "nope:x", "openai:"])
def test_model_spec_rejects_bad_specs(text: str) -> None:
    with pytest.raises(InputError):
        ModelSpec.parse(text)


def test_bad_model_spec_exits_2_with_one_line(capsys: pytest.CaptureFixture[str], tmp_path) -> None:
    code = main(["run", "ner:ncbi", "--model", "nope:x", "--output-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "unknown model backend" in err
    assert "Traceback" not in err


def test_credentials_in_server_urls_stay_out_of_run_files(
    tmp_path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A base URL with user:password (a proxy with basic auth) reaches no file of the run.

    Port 9 on loopback refuses the connection: the run fails fast (exit 1) but writes its
    manifest, store and results, which is what is checked, then resumes without refusal."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    secrets = ("PW-fixture-secret-9876", "PW2-fixture-secret-5432")
    run_dir = tmp_path / "run"
    args = [
        "run",
        "clinconsensus",
        "--model",
        f"openai:m@http://alice:{secrets[0]}@127.0.0.1:9/v1",
        "--base-url",
        f"http://bob:{secrets[1]}@127.0.0.1:9/v1",
        "--option",
        "clinconsensus.cases=fixture",
        "--option",
        "clinconsensus.max_criteria=1",
        "--limit",
        "1",
        "--max-retries",
        "0",
        "--output-dir",
        str(run_dir),
    ]
    monkeypatch.setattr("sys.argv", ["clineval", *args])
    assert main(args) == 1
    assert main(args) == 1  # the same command resumes: not refused as "another model"
    assert main(["report", str(run_dir), "-o", str(run_dir / "report.html")]) == 0
    out = capsys.readouterr()
    assert "refusing to resume" not in out.err
    files = [p for p in run_dir.iterdir() if p.is_file()]
    assert {"manifest.json", "store.sqlite", "report.html"} <= {p.name for p in files}
    for path in files:
        data = path.read_bytes()
        assert not any(s.encode() in data for s in secrets), path.name
    for s in secrets:
        assert s not in out.out and s not in out.err
    assert b"http://***@127.0.0.1:9/v1" in (run_dir / "manifest.json").read_bytes()
    # Another model in the same directory is refused (exit 2), naming both without secrets.
    other = [a.replace("openai:m@", "openai:other@") for a in args]
    assert main(other) == 2
    err = capsys.readouterr().err
    assert "refusing to resume" in err and "openai:other@http://***@127.0.0.1:9/v1" in err
    assert not any(s in err for s in secrets)
    # The same model at another address (a moved server) resumes: cache keys hold no URL.
    moved = [a.replace("127.0.0.1:9/v1", "127.0.0.1:7/v1") for a in args]
    assert main(moved) == 1
    assert "refusing to resume" not in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("http://u:p4ss@h:1/v1", "http://***@h:1/v1"),
        ("openai:m@https://tok@h/v1", "openai:m@https://***@h/v1"),
        ("https://h/v1?api-key=abc123&x=1", "https://h/v1?api-key=***&x=1"),
        ("Authorization: Bearer abcdefgh12345", "Authorization: Bearer ***"),
        ("key sk-abcdefgh12345 leaked", "key *** leaked"),
        ("openai:m@http://127.0.0.1:8000/v1", "openai:m@http://127.0.0.1:8000/v1"),
    ],
)
def test_redact(text: str, expected: str) -> None:
    from clineval.secrets import redact

    assert redact(text) == expected


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [("--concurrency", "0", "--concurrency 0: must be >= 1"), ("--timeout", "0", "--timeout 0")],
)
def test_bad_call_limits_exit_2(
    flag: str, value: str, message: str, tmp_path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["run", "clinconsensus", "--model", "openai:m@http://127.0.0.1:9/v1"]
    code = main([*args, flag, value, "--output-dir", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.count("\n") == 1
    assert not (tmp_path / "run").exists()  # refused before anything was written
