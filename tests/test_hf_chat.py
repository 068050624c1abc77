"""hf:PATH of a causal LM as a chat model, on a tiny random Llama checkpoint built here.

Random weights say nothing useful: these tests check the plumbing (chat template, greedy and
seeded sampling against transformers' own generate, exact token usage, the run store cache,
routing in the tasks), not quality.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from clineval.benchmarks.clinconsensus.cases import fixture_path  # noqa: E402
from clineval.cli import main  # noqa: E402
from clineval.errors import InputError  # noqa: E402
from clineval.models.hf_chat import HFGenerator, is_causal_lm_checkpoint  # noqa: E402
from clineval.models.llm_base import ChatRequest  # noqa: E402
from clineval.store import RunStore  # noqa: E402

TEMPLATE = (
    "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<assistant>{% endif %}"
)


def build_chat_checkpoint(path: Path, chat_template: str | None = TEMPLATE) -> Path:
    """A 2-layer random Llama with a byte-level tokenizer (any text, Chinese included)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {"<|end|>": 0, "<pad>": 1, **{ch: i + 2 for i, ch in enumerate(alphabet)}}
    core = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core, eos_token="<|end|>", pad_token="<pad>"
    )
    if chat_template is not None:
        tokenizer.chat_template = chat_template
    tokenizer.save_pretrained(path)
    config = LlamaConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=8192,
        bos_token_id=0,
        eos_token_id=0,
        pad_token_id=1,
    )
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(path)
    return path


def _classifier_config(path: Path) -> Path:
    path.mkdir()
    (path / "config.json").write_text(json.dumps({"architectures": ["BertForTokenClassification"]}))
    return path


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_chat_checkpoint(tmp_path_factory.mktemp("tiny-chat-lm"))


def test_causal_lm_checkpoints_are_told_from_classifiers(tmp_path: Path, checkpoint: Path) -> None:
    assert is_causal_lm_checkpoint(checkpoint)
    tagger = _classifier_config(tmp_path / "tagger")
    assert not is_causal_lm_checkpoint(tagger)
    assert not is_causal_lm_checkpoint(tmp_path / "nothing")


def test_greedy_generation_equals_transformers_and_counts_tokens(checkpoint: Path) -> None:
    generator = HFGenerator(checkpoint)
    request = ChatRequest(
        messages=(("system", "你是医生。"), ("user", "胸痛三天，怎么办？")), max_tokens=12, seed=0
    )
    reply = generator.generate(request)
    generator.close()
    # the oracle: transformers itself, on the chat template's text
    tokenizer = transformers.AutoTokenizer.from_pretrained(checkpoint)
    model = transformers.AutoModelForCausalLM.from_pretrained(checkpoint)
    messages = [{"role": role, "content": content} for role, content in request.messages]
    text = tokenizer.apply_chat_template(
        messages,
        add_generation_prompt=True,
        tokenize=False,
    )
    assert text.endswith("<assistant>") and "<user>胸痛三天" in text
    ids = tokenizer(text, return_tensors="pt", add_special_tokens=False)
    expected = model.generate(**ids, max_new_tokens=12, do_sample=False, pad_token_id=1)
    new = expected[0, ids["input_ids"].shape[1] :].tolist()
    choice = reply["choices"][0]
    assert choice["message"]["content"] == tokenizer.decode(new, skip_special_tokens=True)
    assert reply["usage"] == {
        "prompt_tokens": ids["input_ids"].shape[1],
        "completion_tokens": len(new),
        "total_tokens": ids["input_ids"].shape[1] + len(new),
    }
    assert choice["finish_reason"] == ("stop" if 0 in new else "length")


def test_sampling_is_reproducible_from_the_seed(checkpoint: Path) -> None:
    generator = HFGenerator(checkpoint)

    def sample(seed: int) -> str:
        request = ChatRequest(
            messages=(("user", "头痛"),), temperature=1.0, max_tokens=24, seed=seed
        )
        return str(generator.generate(request)["choices"][0]["message"]["content"])

    first, again, other = sample(3), sample(3), sample(4)
    generator.close()
    assert first == again
    assert first != other  # 24 tokens drawn from 258: equal by chance is out of the question


def test_a_checkpoint_without_chat_template_is_refused(tmp_path: Path) -> None:
    path = build_chat_checkpoint(tmp_path / "base-lm", chat_template=None)
    with pytest.raises(InputError, match="no chat template"):
        HFGenerator(path)


def _clinconsensus_argv(checkpoint: Path, out: Path) -> list[str]:
    argv = ["run", "clinconsensus", "--model", f"hf:{checkpoint}", "--cases", str(fixture_path())]
    argv += ["--limit", "1", "--option", "clinconsensus.max_criteria=2", "--max-tokens", "8"]
    argv += ["--option", "clinconsensus.judge_max_tokens=8", "--option"]
    argv += ["clinconsensus.judge_retries=0", "--max-judge-error-rate", "1", "--output-dir"]
    return [*argv, str(out)]


def test_clinconsensus_with_a_local_causal_lm_then_rerun_from_the_store(
    tmp_path: Path, checkpoint: Path
) -> None:
    out = tmp_path / "run"
    assert main(_clinconsensus_argv(checkpoint, out)) == 0
    with RunStore.in_dir(out) as store:
        calls = store.iter_calls()
    assert len(calls) == 1 + 2  # the answer and two judge calls (candidate judges itself)
    assert all(c["usage"]["prompt_tokens"] > 0 for c in calls)
    manifest = json.loads((out / "manifest.json").read_text())
    usage = manifest["llm_usage"]
    assert usage["prompt_tokens"] == sum(c["usage"]["prompt_tokens"] for c in calls)
    assert manifest["llm_calls"]["totals"]["prompt_tokens"] == usage["prompt_tokens"]
    results = json.loads((out / "results.json").read_text())["clinconsensus"]
    assert results["candidate"] == f"hf:{checkpoint}" and results["judge_is_candidate"] is True
    # random weights write no verdict: every criterion is a counted judge error, never a score
    assert results["judge_errors"] + results["n_judged"] == 2
    # the same command again: nothing generated, everything from the store
    assert main(_clinconsensus_argv(checkpoint, out)) == 0
    with RunStore.in_dir(out) as store:
        assert len(store.iter_calls()) == 3
    again = json.loads((out / "results.json").read_text())["clinconsensus"]
    assert again["judge_errors"] == results["judge_errors"]


def test_ner_routes_a_causal_lm_to_extraction(
    tmp_path: Path, checkpoint: Path, data_root: Path
) -> None:
    out = tmp_path / "ner"
    argv = ["run", "ner:ncbi", "--model", f"hf:{checkpoint}", "--data-dir", str(data_root)]
    argv += ["--limit", "1", "--max-tokens", "8", "--output-dir", str(out)]
    assert main(argv) == 0
    results = json.loads((out / "results.json").read_text())["ner:ncbi"]
    assert "invalid_outputs" in results  # the extraction path, not a token classifier
    notes = json.loads((out / "manifest.json").read_text())["tasks"]["ner:ncbi"]
    assert notes["llm"]["response_format"] == "json_schema"


def test_a_classifier_checkpoint_is_not_a_chat_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tagger = _classifier_config(tmp_path / "tagger")
    argv = ["run", "clinconsensus", "--model", f"hf:{tagger}", "--cases", str(fixture_path())]
    argv += ["--limit", "1", "--output-dir", str(tmp_path / "run")]
    assert main(argv) == 2
    assert "is not a chat model" in capsys.readouterr().err
    argv[3], argv[-1] = f"hf:{tmp_path / 'nowhere'}", str(tmp_path / "run2")
    assert main(argv) == 2
    assert "hf model directory not found" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    argv[3] = f"hf:{tmp_path / 'empty'}"
    assert main(argv) == 2
    assert "no config.json" in capsys.readouterr().err
    assert not (tmp_path / "run2").exists()  # refused before the run directory was made


def test_generation_failure_is_a_chat_error(checkpoint: Path) -> None:
    from clineval.concurrency import RunCallState
    from clineval.models.hf_chat import HFChatModel
    from clineval.models.llm_base import ChatError

    class NoStore:  # a run store that has no call stored and nothing to reuse
        def get_call(self, key: str) -> Any:
            return None

        def reused_call(self, key: str) -> Any:
            return None

    generator = HFGenerator(checkpoint)
    model = HFChatModel(
        label="hf:x", generator=generator, role="candidate", store=NoStore(), state=RunCallState(1)
    )
    # 3 bytes a character: 9,000 tokens, past the 8,192 positions of the model
    request = ChatRequest(messages=(("user", "痛" * 3000),), max_tokens=2)
    with pytest.raises(ChatError, match="exceeds the model's context of 8192"):
        asyncio.run(model.chat(request))
    generator.close()


# ---- the ClinConsensus authors' judge-input cut (clinconsensus.judge_input_tokens) ----------


def test_max_input_tokens_keeps_the_first_tokens_of_the_templated_prompt(checkpoint: Path) -> None:
    generator = HFGenerator(checkpoint)
    messages = (("user", "胸痛三天，伴气短，夜间加重。怎么办？"),)
    whole = generator.generate(ChatRequest(messages=messages, max_tokens=6))
    cut = generator.generate(ChatRequest(messages=messages, max_tokens=6, max_input_tokens=20))
    short = generator.generate(ChatRequest(messages=messages, max_tokens=6, max_input_tokens=10**6))
    generator.close()
    # the oracle: what the authors' script does, tokenizer(..., truncation=True, max_length=20)
    # on the templated text (the generation prompt falls off), then transformers' generate
    tokenizer = transformers.AutoTokenizer.from_pretrained(checkpoint)
    model = transformers.AutoModelForCausalLM.from_pretrained(checkpoint)
    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": messages[0][1]}], add_generation_prompt=True, tokenize=False
    )
    n_whole = len(tokenizer(text, add_special_tokens=False)["input_ids"])
    ids = tokenizer(
        text, return_tensors="pt", add_special_tokens=False, truncation=True, max_length=20
    )
    assert ids["input_ids"].shape[1] == 20 < n_whole
    expected = model.generate(**ids, max_new_tokens=6, do_sample=False, pad_token_id=1)
    new = expected[0, 20:].tolist()
    assert cut["choices"][0]["message"]["content"] == tokenizer.decode(
        new, skip_special_tokens=True
    )
    assert cut["usage"]["prompt_tokens"] == 20
    assert cut["usage"]["prompt_tokens_untruncated"] == n_whole
    assert whole["usage"]["prompt_tokens"] == n_whole
    assert "prompt_tokens_untruncated" not in whole["usage"]
    assert short["usage"] == whole["usage"]  # under the limit: nothing cut


def test_clinconsensus_judge_input_tokens_cuts_and_is_recorded(
    tmp_path: Path, checkpoint: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "cut"
    argv = _clinconsensus_argv(checkpoint, out)
    assert main([*argv, "--option", "clinconsensus.judge_input_tokens=64"]) == 0
    notes = json.loads((out / "manifest.json").read_text())["tasks"]["clinconsensus"]
    truncation = notes["judge_input_truncation"]
    # every judge input of a fixture case (query + answer + criterion + instructions) is far
    # longer than 64 byte-level tokens: both judge calls were cut
    assert truncation == {
        "applied": True,
        "max_input_tokens": 64,
        "tokenizer": "each hf: judge's own",
        "inputs_cut": 2,
    }
    with RunStore.in_dir(out) as store:
        calls = store.iter_calls()
    judged = [c for c in calls if c["usage"].get("prompt_tokens_untruncated")]
    assert len(judged) == 2 and all(c["usage"]["prompt_tokens"] == 64 for c in judged)
    plain = tmp_path / "whole"
    assert main(_clinconsensus_argv(checkpoint, plain)) == 0
    notes = json.loads((plain / "manifest.json").read_text())["tasks"]["clinconsensus"]
    assert notes["judge_input_truncation"]["applied"] is False
    assert notes["judge_input_truncation"]["inputs_cut"] == 0
    # a judge that is not hf: cannot be cut where the authors cut: one error line, exit 2
    capsys.readouterr()
    bad = ["run", "clinconsensus", "--model", f"hf:{checkpoint}", "--cases", str(fixture_path())]
    bad += ["--judge", "openai:judge@http://127.0.0.1:9/v1", "--output-dir", str(tmp_path / "b")]
    assert main([*bad, "--option", "clinconsensus.judge_input_tokens=5120"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and "needs hf: judges" in err, err
