"""`hf:PATH` as a chat model: a local causal-LM checkpoint generating in-process, offline.

Wherever a task needs a chat model (ClinConsensus candidate or judge, TCM-SD zero-shot, NER
extraction), `hf:PATH` whose config.json names a causal LM (`*ForCausalLM`, `*LMHeadModel`)
is loaded with transformers and asked directly; a classification checkpoint stays what it is
for TCM-SD and NER. Calls go through the run store like every chat backend (cache, resume,
usage), via `StoredChatModel`.

- Prompt: the tokenizer's chat template (`apply_chat_template(..., add_generation_prompt=True)`);
  a checkpoint without one is refused (an instruction model always has one).
- temperature 0: greedy decoding; > 0: sampling (top_p 1; other settings from the checkpoint's
  generation_config), torch's generator seeded by the request's seed, so every call is
  reproducible. max_tokens -> max_new_tokens (default 512).
- A failure to generate (a prompt past the model's positions, a chat template that refuses a
  role, ...) is a ChatError("bad_request") of that call: reported by the task, never a crash.
- `chat_template_kwargs` of --option llm.extra_body (e.g. {"enable_thinking": false} for a
  Qwen3 judge) are keyword arguments of apply_chat_template (clineval.models.extra_body).
- `response_format` cannot be enforced in-process: it is ignored, and the judge reads its
  verdict from plain text (its parser handles fenced and bare JSON).
- Token usage is exact (the tokenizer's counts).
- One generation at a time, in one worker thread: a CPU model gains nothing from more, and
  the event loop stays free for cached calls. Candidate and judge on the same PATH share one
  loaded model.
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from clineval.concurrency import RunCallState
from clineval.errors import InputError
from clineval.jsonio import read_json_file
from clineval.models.chat_store import StoredChatModel
from clineval.models.extra_body import template_kwargs
from clineval.models.hf_checkpoint import load_checkpoint
from clineval.models.llm_base import ChatError, ChatRequest
from clineval.store import RunStore

DEFAULT_MAX_NEW_TOKENS = 512
_CAUSAL_SUFFIXES = ("ForCausalLM", "LMHeadModel")


def is_causal_lm_checkpoint(path: str | Path) -> bool:
    """Whether a checkpoint directory's config.json names a causal language model."""
    try:
        config = read_json_file(Path(path) / "config.json", "checkpoint config")
    except InputError:  # no readable config: not a checkpoint this backend can load
        return False
    architectures = config.get("architectures") if isinstance(config, dict) else None
    return any(str(a).endswith(_CAUSAL_SUFFIXES) for a in architectures or [])


class HFGenerator:
    """A loaded causal LM + tokenizer, generating one request at a time in its own thread."""

    def __init__(self, path: Path):
        self.tokenizer, self.model = load_checkpoint(path, "AutoModelForCausalLM")
        import torch  # present: load_checkpoint checked

        if not getattr(self.tokenizer, "chat_template", None):
            raise InputError(
                "the tokenizer has no chat template (tokenizer_config.json chat_template): "
                "not an instruction/chat checkpoint",
                path=path,
            )
        self.path = path
        self._torch = torch
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hf-generate")
        self._lock = threading.Lock()

    def close(self) -> None:
        self._executor.shutdown(wait=True)

    async def complete(self, request: ChatRequest) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self.generate, request)

    def generate(self, request: ChatRequest) -> dict[str, Any]:
        """A chat.completion dict for `request` (blocking)."""
        torch, tokenizer = self._torch, self.tokenizer
        messages = [{"role": role, "content": content} for role, content in request.messages]
        prompt = tokenizer.apply_chat_template(
            messages, add_generation_prompt=True, tokenize=False, **template_kwargs(request)
        )
        encoded = tokenizer(prompt, return_tensors="pt", add_special_tokens=False)
        max_new = request.max_tokens or DEFAULT_MAX_NEW_TOKENS
        prompt_tokens = int(encoded["input_ids"].shape[1])
        untruncated = None
        limit = request.max_input_tokens
        if limit is not None and prompt_tokens > limit:
            # As the authors' tokenizer(..., truncation=True, max_length=N) cuts the templated
            # prompt: on the tokenizer's own truncation side (right: the tail, generation
            # prompt included, is lost and the model continues the cut text).
            cut = slice(-limit, None) if tokenizer.truncation_side == "left" else slice(0, limit)
            encoded = {k: v[:, cut] for k, v in encoded.items()}
            untruncated, prompt_tokens = prompt_tokens, limit
        # Past its positions a model does not fail, it degrades (and attention memory grows
        # with the square of the length): refuse, as a server answers 400.
        context = getattr(self.model.config, "max_position_embeddings", None)
        if context and prompt_tokens + max_new > context:
            raise ValueError(
                f"prompt of {prompt_tokens} tokens + max_tokens {max_new} exceeds the model's "
                f"context of {context} positions"
            )
        eos = tokenizer.eos_token_id
        settings: dict[str, Any] = {
            "max_new_tokens": max_new,
            "pad_token_id": tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos,
        }
        if request.temperature > 0:
            generator_seed = request.seed if request.seed is not None else 0
            settings.update(do_sample=True, temperature=request.temperature, top_p=1.0)
        else:
            settings.update(do_sample=False)
        with self._lock, torch.inference_mode():
            if request.temperature > 0:
                torch.manual_seed(generator_seed)
            output = self.model.generate(**encoded, **settings)
        new_tokens = output[0, prompt_tokens:].tolist()
        stopped = eos is not None and eos in new_tokens
        return {
            "model": str(self.path),
            "choices": [
                {
                    "message": {
                        "role": "assistant",
                        "content": tokenizer.decode(new_tokens, skip_special_tokens=True),
                    },
                    "finish_reason": "stop" if stopped or len(new_tokens) < max_new else "length",
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": len(new_tokens),
                "total_tokens": prompt_tokens + len(new_tokens),
                **({} if untruncated is None else {"prompt_tokens_untruncated": untruncated}),
            },
        }


class HFChatModel(StoredChatModel):
    """`hf:PATH` as a ChatModel: cached in the run store, generated by a shared HFGenerator."""

    def __init__(
        self, *, label: str, generator: HFGenerator, role: str, store: RunStore, state: RunCallState
    ) -> None:
        super().__init__(
            label=label, model_name=str(generator.path), role=role, store=store, state=state
        )
        self._generator = generator

    async def _complete(self, request: ChatRequest) -> dict[str, Any]:
        try:
            return await self._generator.complete(request)
        except Exception as exc:  # a prompt past the context, a template refusing a role ...
            self.stats.errors["bad_request"] += 1
            raise ChatError(
                "bad_request", f"{self.label}: generation failed: {type(exc).__name__}: {exc}"
            ) from None
