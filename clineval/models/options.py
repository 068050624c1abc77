"""The model layer's `--option` keys: `llm.*` (HTTP chat clients) and `llamacpp.*`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# imported for its registration: the selectors below name backends (clineval.options)
import clineval.models.registry  # noqa: F401
from clineval.models.extra_body import parse_extra_body
from clineval.models.http_transport import DEFAULT_TRANSPORT, TRANSPORTS, sdk_missing
from clineval.options import (
    INT32_MAX,
    MAX_TOKENS,
    Option,
    OptionGroup,
    boolean,
    choice,
    integer,
    number,
)

# Waits are bounded: a wait of 1e300 s overflows the event loop's clock, and one longer than a
# day is a hung run, not a backoff. A batch may take 24 h, so a poll of up to a day.
HOUR_S, DAY_S = 3600.0, 86400.0
# The in-process server's limits (llama.cpp): at most 256 sequences (slots) per context,
# 512 threads (GGML_MAX_N_THREADS), and the context of all slots in one C int.
LLAMACPP_MAX_SLOTS = 256
LLAMACPP_MAX_THREADS = 512
LLAMACPP_MAX_CTX = MAX_TOKENS

_one_transport = choice(*TRANSPORTS)


def _transport(text: str) -> str:
    """One of TRANSPORTS, whose package is installed (the SDK's are an extra)."""
    value = str(_one_transport(text))
    missing = sdk_missing(value)
    if missing is not None:
        raise ValueError(missing)
    return value


LLM_OPTIONS = OptionGroup(
    namespace="llm",
    applies_to="chat models (openai:, llamacpp:, hf: causal LMs)",
    models=("chat",),
    options=(
        Option(
            "backoff_base_s",
            number(0.0, maximum=HOUR_S),
            "first wait before a retry, seconds (doubled per retry, with jitter)",
            None,
            models=("openai", "llamacpp"),
        ),
        Option(
            "backoff_max_s",
            number(0.0, maximum=HOUR_S),
            "longest wait between retries, seconds",
            None,
            models=("openai", "llamacpp"),
        ),
        Option(
            "extra_body",
            parse_extra_body,
            "JSON object of extra request fields for every chat call, e.g. "
            '{"chat_template_kwargs": {"enable_thinking": false}} (part of the cache key)',
            None,
            changes_requests=True,
        ),
        Option(
            "judge_extra_body",
            parse_extra_body,
            "JSON object of extra request fields for judge calls, merged over extra_body",
            None,
            changes_requests=True,
        ),
        Option(
            "transport",
            _transport,
            "HTTP client of openai: models (openai, openai-httpx: the SDK, the openai extra)",
            DEFAULT_TRANSPORT,
            models=("openai",),
        ),
        Option(
            "batch_poll_s",
            number(0.0, maximum=DAY_S, above_minimum=True),
            "--batch: first wait between two looks at a running batch, seconds (doubled each "
            "time up to batch_poll_max_s)",
            "5",
            models=("openai",),
        ),
        Option(
            "batch_poll_max_s",
            number(0.0, maximum=DAY_S, above_minimum=True),
            "--batch: longest wait",
            "300",
            models=("openai",),
        ),
        Option(
            "batch_max_lines",
            integer(minimum=1, maximum=10_000_000),
            "--batch: requests per batch input file at most (OpenAI: 50000)",
            "50000",
            models=("openai",),
        ),
        Option(
            "batch_max_bytes",
            integer(minimum=1024, maximum=2**40),
            "--batch: bytes per batch input file at most (OpenAI: 200 MB)",
            str(200 * 1024 * 1024),
            models=("openai",),
        ),
        Option(
            "batch_resubmits",
            integer(minimum=0, maximum=100),
            "--batch: new batches for the requests a failed, expired or cancelled batch left",
            "2",
            models=("openai",),
        ),
        Option(
            "prompt_cache_key",
            boolean,
            "send each call's prefix key as prompt_cache_key (hosted APIs route prompt caching "
            "by it; off: some servers refuse unknown fields)",
            "0",
            models=("openai", "llamacpp"),
        ),
    ),
)


def _whole_context_fits(values: Mapping[str, Any]) -> None:
    """llama.cpp allocates one context for all slots and counts it in a C int."""
    if values["n_ctx"] * values["n_parallel"] > INT32_MAX:
        raise ValueError(
            f"n_ctx x n_parallel = {values['n_ctx'] * values['n_parallel']:,} tokens: llama.cpp "
            f"holds the context of all slots in one C int (at most {INT32_MAX:,})"
        )


LLAMACPP_OPTIONS = OptionGroup(
    namespace="llamacpp",
    applies_to="llamacpp: models (the in-process server)",
    models=("llamacpp",),
    options=(
        Option(
            "n_parallel",
            integer(minimum=1, maximum=LLAMACPP_MAX_SLOTS),
            "decoding slots served at once",
            "2",
        ),
        Option(
            "n_ctx",
            integer(minimum=256, maximum=LLAMACPP_MAX_CTX),
            "context tokens per slot (times n_parallel: at most 2^31-1)",
            "4096",
        ),
        Option(
            "threads",
            integer(minimum=0, maximum=LLAMACPP_MAX_THREADS),
            "CPU threads (0 = the idle cores at start)",
            "0",
        ),
        Option("verbosity", integer(minimum=0, maximum=INT32_MAX), "llama.cpp log level", "0"),
        Option("metrics", integer(minimum=0, maximum=1), "serve Prometheus /metrics (1)", "0"),
    ),
    joint=_whole_context_fits,
)

MODEL_OPTION_GROUPS = (LLM_OPTIONS, LLAMACPP_OPTIONS)


def model_options(options: Mapping[str, str]) -> dict[str, str]:
    """The items of a run's `--option` that the model layer reads (its groups' keys)."""
    prefixes = tuple(f"{group.namespace}." for group in MODEL_OPTION_GROUPS)
    return {key: value for key, value in options.items() if key.startswith(prefixes)}
