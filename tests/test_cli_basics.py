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
