"""The full configuration of a run. It is written to manifest.json and read back by `score`."""

from __future__ import annotations

from pydantic import BaseModel, Field


class RunConfig(BaseModel):
    tasks: list[str]
    model: str
    data_dir: str | None = None
    limit: int | None = None
    seed: int = 0
    base_urls: list[str] = Field(default_factory=list)
    judges: list[str] = Field(default_factory=list)
    concurrency: int = 16
    cases: str | None = None
    verdicts: str | None = None
    judge_prompt: str | None = None
    judge_errors_as_unmet: bool = False
    max_judge_error_rate: float = 0.02
    shard: str | None = None  # "I/N"
    dedupe: bool = False
    temperature: float = 0.0
    max_tokens: int | None = None
    timeout_s: float = 120.0
    max_retries: int = 5
    price_table: str | None = None
    # Task-specific knobs (e.g. {"ner.tokenizer": "hf"}); kept free-form so tasks can grow.
    options: dict[str, str] = Field(default_factory=dict)
