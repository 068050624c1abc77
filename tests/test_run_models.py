"""The run's model specs as one typed value (`RunConfig.models`), parsed where the config is
validated, and the settings the model layer gets of the run (`ModelSettings`)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from clineval.benchmarks.base import RunContext
from clineval.config import RunConfig
from clineval.errors import InputError
from clineval.models.spec import ModelSpec
from clineval.store import RunStore


def _config(**settings: Any) -> RunConfig:
    return RunConfig.checked(tasks=["clinconsensus"], **{"model": "openai:cand", **settings})


def test_labels_and_the_written_text() -> None:
    written = "openai:cand@http://user:pw@h:1/v1"
    config = _config(model=written, judges=["openai:j@http://j:2/v1", "hf:/ckpt"])
    models = config.models
    assert models.candidate.label == "openai:cand"
    assert models.candidate.text == written  # what the user wrote, URL and all
    assert models.candidate.base_urls == ("http://user:pw@h:1/v1",)
    assert [j.label for j in models.judges] == ["openai:j", "hf:/ckpt"]
    assert [j.text for j in models.judges] == ["openai:j@http://j:2/v1", "hf:/ckpt"]
    assert [s.label for s in models.all] == ["openai:cand", "openai:j", "hf:/ckpt"]
    assert models.panel == models.judges
    # the text never enters a spec's equality (or its repr, where a URL's user:password
    # would be shown): specs from their parts are written as their label
    assert ModelSpec("openai", "cand", ("http://user:pw@h:1/v1",)) == models.candidate
    assert ModelSpec("hf", "/ckpt").text == "hf:/ckpt"
    assert "text=" not in repr(models.candidate)


def test_base_urls_are_applied_by_flag() -> None:
    config = _config(
        model="openai:cand@http://own:1/v1",
        base_urls=["http://c1:1/v1", "http://c2:1/v1"],
        judges=["openai:cand@http://own:1/v1", "openai:j", "openai:k@http://k:1/v1"],
        judge_base_urls=["openai:j=http://j1:1/v1", "j=http://j2:1/v1", "k=http://k2:1/v1"],
    )
    candidate, as_judge, j, k = config.models.all
    # --base-url belongs to --model, after the spec's own @URL
    assert candidate.base_urls == ("http://own:1/v1", "http://c1:1/v1", "http://c2:1/v1")
    # a judge that is the candidate model takes --base-url when it has no replicas of its own
    assert as_judge.base_urls == candidate.base_urls
    # JUDGE=URL by model name or label; another judge never gets --base-url
    assert j.base_urls == ("http://j1:1/v1", "http://j2:1/v1")
    assert k.base_urls == ("http://k:1/v1", "http://k2:1/v1")


def test_the_candidate_that_judges_its_own_answers() -> None:
    alone = _config(base_urls=["http://c:1/v1"])
    assert alone.models.judges == ()
    assert alone.models.panel == (alone.models.candidate,)
    assert alone.models.judge_is_candidate
    # with a replica of its own as a judge, the candidate keeps --base-url for its answers
    own = _config(base_urls=["http://c:1/v1"], judge_base_urls=["http://jc:1/v1"])
    assert own.models.candidate.base_urls == ("http://c:1/v1",)
    (judge,) = own.models.panel
    assert judge.label == "openai:cand" and judge.base_urls == ("http://jc:1/v1",)
    assert own.models.judge_is_candidate
    named = _config(judges=["openai:j", "openai:cand"])
    assert named.models.judge_is_candidate
    other = _config(judges=["openai:j"])
    assert not other.models.judge_is_candidate
    assert [s.label for s in other.models.panel] == ["openai:j"]
    # the same model reached at another address is another judge, not the candidate
    elsewhere = _config(judges=["openai:cand@http://x:1/v1"])
    assert not elsewhere.models.judge_is_candidate


def test_no_stale_specs_after_an_assignment() -> None:
    config = _config(judges=["openai:j"], judge_base_urls=["http://h:1/v1"])
    assert config.models.panel[0].base_urls == ("http://h:1/v1",)
    config.model = "openai:other@http://o:1/v1"
    assert config.models.candidate.label == "openai:other"
    assert config.models.candidate.base_urls == ("http://o:1/v1",)
    config.base_urls = ["http://b:1/v1"]
    assert config.models.candidate.base_urls == ("http://o:1/v1", "http://b:1/v1")
    config.judge_base_urls = []
    assert config.models.panel[0].base_urls == ()
    # a copy made without validation is parsed again when read
    copy = config.model_copy(update={"judges": ["openai:x", "openai:y"]})
    assert [s.label for s in copy.models.judges] == ["openai:x", "openai:y"]
    # a refused assignment leaves the field set (pydantic's way), and the specs refuse too:
    # never the specs of the value before
    config.judge_base_urls = ["http://h:1/v1"]
    with pytest.raises(InputError, match="there are 2 judges"):
        config.judges = ["openai:x", "openai:y"]
    with pytest.raises(InputError, match="there are 2 judges"):
        _ = config.models


def test_a_bad_spec_is_refused_where_the_config_is_validated() -> None:
    with pytest.raises(InputError, match="unknown model backend 'gpt'"):
        _config(model="gpt:4")
    with pytest.raises(InputError, match="--judge 'http://h:0/v1'"):
        _config(judges=["openai:j@http://h:0/v1"])
    with pytest.raises(InputError, match="--model 'http://h:99999/v1'"):
        _config(model="openai:c@http://h:99999/v1")
    with pytest.raises(InputError, match="--batch-model 'x': not a model of this run"):
        _config(judges=["openai:j"], batch_models=["x"])


def test_a_manifests_config_has_its_specs() -> None:
    recorded = _config(judges=["openai:j"], base_urls=["http://c:1/v1"]).model_dump()
    config = RunConfig.from_manifest(recorded, "manifest.json")
    assert config.models.candidate.base_urls == ("http://c:1/v1",)
    assert [s.label for s in config.models.panel] == ["openai:j"]


def test_model_settings_hold_only_what_models_read(tmp_path: Path) -> None:
    config = _config(
        model="openai:cand@http://c:1/v1",
        judges=["openai:j@http://j:1/v1", "llamacpp:/m.gguf"],
        timeout_s=7.5,
        max_retries=2,
        concurrency=3,
        batch_models=["j"],
        batch_file_out=str(tmp_path / "out"),
        options={"llm.backoff_base_s": "0.5", "llamacpp.n_parallel": "4", "ner.tokenizer": "x"},
    )
    settings = config.model_settings()
    assert (settings.timeout_s, settings.max_retries, settings.concurrency) == (7.5, 2, 3)
    # the model layer's options only: a task's option is not the models' business
    assert dict(settings.options) == {"llm.backoff_base_s": "0.5", "llamacpp.n_parallel": "4"}
    assert settings.batch_server and settings.batch_mode
    assert settings.batch_file_out == tmp_path / "out" and settings.batch_file_in == ()
    candidate, judge, local = config.models.all
    assert [settings.is_batched(s) for s in (candidate, judge, local)] == [False, True, False]
    # frozen, its options too: one backend cannot change what another reads
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.timeout_s = 1.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        settings.options["llm.transport"] = "openai"  # type: ignore[index]
    fields = {f.name for f in dataclasses.fields(settings)}
    assert "model" not in fields and "tasks" not in fields and "seed" not in fields


def test_every_openai_model_is_batched_without_batch_model() -> None:
    config = _config(judges=["openai:j", "hf:/ckpt"], batch=True)
    settings = config.model_settings()
    assert [settings.is_batched(s) for s in config.models.all] == [True, True, False]
    assert not _config().model_settings().batch_mode


def test_the_run_context_hands_models_the_settings(tmp_path: Path) -> None:
    config = _config(concurrency=5, options={"llm.transport": "openai"})
    with RunStore.in_dir(tmp_path) as store:
        ctx = RunContext(config, store, tmp_path, None, config.models.candidate)
        assert ctx.runtime.settings == config.model_settings()
        assert ctx.runtime.calls.limit == 5
        assert not hasattr(ctx.runtime, "config")
