"""The model layer's `--option` keys: `llm.*` (HTTP chat clients) and `llamacpp.*`."""

from __future__ import annotations

from clineval.models.extra_body import parse_extra_body
from clineval.models.http_transport import DEFAULT_TRANSPORT, TRANSPORTS
from clineval.options import Option, OptionGroup, boolean, choice, integer, number

LLM_OPTIONS = OptionGroup(
    namespace="llm",
    applies_to="chat models (openai:, llamacpp:, hf: causal LMs)",
    options=(
        Option(
            "backoff_base_s",
            number(0.0),
            "first wait before a retry, seconds (doubled per retry, with jitter)",
            None,
        ),
        Option("backoff_max_s", number(0.0), "longest wait between retries, seconds", None),
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
            choice(*TRANSPORTS),
            "HTTP client of openai: models",
            DEFAULT_TRANSPORT,
        ),
        Option(
            "batch_poll_s",
            number(0.0, above_minimum=True),
            "--batch: first wait between two looks at a running batch, seconds (doubled each "
            "time up to batch_poll_max_s)",
            "5",
        ),
        Option("batch_poll_max_s", number(0.0, above_minimum=True), "--batch: longest wait", "300"),
        Option(
            "batch_max_lines",
            integer(minimum=1),
            "--batch: requests per batch input file at most (OpenAI: 50000)",
            "50000",
        ),
        Option(
            "batch_max_bytes",
            integer(minimum=1024),
            "--batch: bytes per batch input file at most (OpenAI: 200 MB)",
            str(200 * 1024 * 1024),
        ),
        Option(
            "batch_resubmits",
            integer(minimum=0),
            "--batch: new batches for the requests a failed, expired or cancelled batch left",
            "2",
        ),
        Option(
            "prompt_cache_key",
            boolean,
            "send each call's prefix key as prompt_cache_key (hosted APIs route prompt caching "
            "by it; off: some servers refuse unknown fields)",
            "0",
        ),
    ),
)

LLAMACPP_OPTIONS = OptionGroup(
    namespace="llamacpp",
    applies_to="llamacpp: models (the in-process server)",
    options=(
        Option("n_parallel", integer(minimum=1), "decoding slots served at once", "2"),
        Option("n_ctx", integer(minimum=256), "context tokens per slot", "4096"),
        Option("threads", integer(minimum=0), "CPU threads (0 = the idle cores at start)", "0"),
        Option("verbosity", integer(minimum=0), "llama.cpp log level", "0"),
        Option("metrics", integer(minimum=0, maximum=1), "serve Prometheus /metrics (1)", "0"),
    ),
)

MODEL_OPTION_GROUPS = (LLM_OPTIONS, LLAMACPP_OPTIONS)
