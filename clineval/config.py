"""The full configuration of a run. It is written to manifest.json and read back by `score`.

Every setting is checked here, where it enters (from the command line, the Python API or a
manifest): a value that cannot be right (a limit of 0, a nan error bound that would disable
the bound, an infinite timeout, a port out of range, a shard 4/3) is one InputError naming
the flag, before anything is loaded or written.

Long module: RunConfig's fields are the one declaration of the run settings (each with its
clineval.settings.Setting: help, flag, section, roles), which keeps them in one class body;
the checks that need no RunConfig are in clineval.config_checks.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from clineval.config_checks import judge_named, names, number, reason_of, split_judge_url
from clineval.errors import InputError
from clineval.messages import EMPTY_PATH, did_you_mean, is_empty_path
from clineval.models.options import model_options
from clineval.models.registry import backend_info
from clineval.models.settings import ModelSettings
from clineval.models.spec import ModelSpec, RunModels, check_base_url
from clineval.settings import BATCH, CONTROL, DATA, JUDGE, MODEL, Setting
from clineval.shard import is_auto, parse_shard, resolve_auto

# The most model calls a run keeps in flight (--concurrency).
MAX_CONCURRENCY = 4096


def flag_of(field_name: str) -> str:
    """The command-line spelling of a RunConfig field (its declared Setting's)."""
    return setting_of(field_name).flag_of(field_name)


def setting_of(field_name: str) -> Setting:
    """The declared Setting of a RunConfig field."""
    return declared_settings()[field_name]


def declared_settings() -> dict[str, Setting]:
    """Every RunConfig field's Setting, in the fields' order (clineval.settings)."""
    out = {}
    for name, info in RunConfig.model_fields.items():
        found = [item for item in info.metadata if isinstance(item, Setting)]
        if len(found) != 1:
            raise TypeError(f"RunConfig.{name} declares {len(found)} Settings, not one")
        out[name] = found[0]
    return out


def check_path_value(value: str | None, flag: str) -> str | None:
    """`value` unless it is an empty (or blank) path, which InputError refuses naming `flag`:
    an empty path would mean the working directory, or no path at all where a truthiness test
    reads it (an empty --batch-file-out made a live run). None (not given) passes."""
    if value is not None and not value.strip():
        raise InputError(f"{flag}: {EMPTY_PATH}")
    return value


class RunConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    # One field per run setting; its Setting says how it is given and what it takes part in.
    tasks: Annotated[
        list[str],
        Field(min_length=1),
        Setting(
            "Task names (see clineval tasks); or tasks in --config.",
            None,
            "TASK",
            argument=True,
            complete="tasks",
        ),
    ]
    model: Annotated[
        str,
        Setting(
            "backend:name[@base_url], backends below (not needed with a benchmark flag whose "
            "file stands in for the model).",
            MODEL,
            "BACKEND:NAME",
            short="-m",
            identity=True,
            secret=True,
            complete="backends",
        ),
    ]
    data_dir: Annotated[
        str | None,
        Setting(
            "Data root (default: $CLINEVAL_DATA_DIR, ../shared/data, the fetch cache).",
            DATA,
            "DIR",
            path=True,
            per_shard=True,
        ),
    ] = None
    limit: Annotated[int | None, Field(ge=1), Setting("First N samples only.", DATA, "N")] = None
    # sent as a request's seed: llama.cpp keeps it in 32 bits (and torch.manual_seed in 64)
    seed: Annotated[
        int,
        Field(ge=0, le=2**32 - 1),
        Setting(
            "Seed of sampling, bootstrap intervals and baselines.", CONTROL, "N", identity=True
        ),
    ] = 0
    base_urls: Annotated[
        list[str],
        Setting(
            "A replica of the openai: model (repeat for a fleet).",
            MODEL,
            "URL",
            flag="--base-url",
            per_shard=True,
            secret=True,
        ),
    ] = Field(default_factory=list)
    judges: Annotated[
        list[str],
        Setting(
            "Judge model of LLM-judged tasks (repeat for a panel; default: the candidate).",
            JUDGE,
            "BACKEND:NAME",
            flag="--judge",
            identity=True,
            secret=True,
            complete="backends",
        ),
    ] = Field(default_factory=list)
    # A judge's own replicas: "URL" (the one judge) or "JUDGE=URL" (see `models`).
    judge_base_urls: Annotated[
        list[str],
        Setting(
            "A judge's own replica: URL (one judge) or JUDGE=URL; repeat for a fleet.",
            JUDGE,
            "[JUDGE=]URL",
            flag="--judge-base-url",
            per_shard=True,
            secret=True,
        ),
    ] = Field(default_factory=list)
    # at most MAX_CONCURRENCY: each call in flight holds a connection and a task, and no
    # server serves more at once; a number past it is a typo, not a plan
    concurrency: Annotated[
        int,
        Field(ge=1, le=MAX_CONCURRENCY),
        Setting(
            f"Most model calls in flight at once (candidate and judges together; at most "
            f"{MAX_CONCURRENCY}).",
            MODEL,
            "N",
            per_shard=True,
        ),
    ] = 16
    judge_prompt: Annotated[
        str | None,
        Setting(
            "Judge prompt template file, or official (the authors' prompt).",
            JUDGE,
            "FILE",
            path=True,
            identity=True,
        ),
    ] = None
    judge_errors_as_unmet: Annotated[
        bool,
        Setting(
            "Count criteria without a verdict as not met (default: left out).",
            JUDGE,
            scoring=True,
        ),
    ] = False
    # allow_inf_nan=False: `nan` compares false with everything and would switch the bound off
    max_judge_error_rate: Annotated[
        float,
        Field(ge=0.0, le=1.0, allow_inf_nan=False),
        Setting(
            "Above this share of judge errors the run exits 1 (results are written).",
            JUDGE,
            "RATE",
            scoring=True,
        ),
    ] = 0.02
    shard: Annotated[
        str | None,
        Setting(
            "I/N, or auto (auto/N) from a Slurm array or Kubernetes Indexed Job.",
            DATA,
            "I/N",
            per_shard=True,
        ),
    ] = None  # "I/N" ("auto" / "auto/N" is resolved from the environment)
    # the range OpenAI-compatible servers take (OpenAI's API refuses above 2)
    temperature: Annotated[
        float,
        Field(ge=0.0, le=2.0, allow_inf_nan=False),
        Setting(
            "Sampling temperature of chat models, 0 to 2 (0: greedy).", MODEL, "T", identity=True
        ),
    ] = 0.0
    max_tokens: Annotated[
        int | None,
        Field(ge=1, le=2**31 - 1),  # a server's C int
        Setting(
            "Most tokens of a chat model's reply (default: the server's).",
            MODEL,
            "N",
            identity=True,
        ),
    ] = None
    timeout_s: Annotated[
        float,
        Field(gt=0.0, allow_inf_nan=False),
        Setting("Seconds per call.", MODEL, "SECONDS", flag="--timeout", per_shard=True),
    ] = 120.0
    # the backoff doubles per retry: 2.0 ** 1,100 overflows a float (an internal error)
    max_retries: Annotated[
        int,
        Field(ge=0, le=100),
        Setting("Retries of a failed model call, with backoff.", MODEL, "N", per_shard=True),
    ] = 5
    price_table: Annotated[
        str | None,
        Setting(
            "JSON of per-model prices: the run and --dry-run say what it costs.",
            CONTROL,
            "FILE",
            path=True,
            per_shard=True,
        ),
    ] = None
    # Batch mode (clineval.models.batch): every openai: model of the run, or only those named
    # in batch_models; the two file flags work without a server (vllm run-batch files).
    batch: Annotated[bool, Setting("Send openai: models' calls through the Batch API.", BATCH)] = (
        False
    )
    batch_models: Annotated[
        list[str],
        Setting(
            "Only this model's calls in batches (repeatable).",
            BATCH,
            "NAME",
            flag="--batch-model",
        ),
    ] = Field(default_factory=list)
    batch_file_out: Annotated[
        str | None,
        Setting("Write batch request files here and stop.", BATCH, "DIR", path=True),
    ] = None
    batch_file_in: Annotated[
        list[str],
        Setting(
            "Batch output file (vllm run-batch) to import (repeatable).",
            BATCH,
            "FILE",
            path=True,
        ),
    ] = Field(default_factory=list)
    # Earlier run directories whose stored model calls answer identical requests (read only;
    # clineval.store_reuse). Not part of the resume identity: a call's key is its identity.
    reuse: Annotated[
        list[str],
        Setting(
            "Answer identical model calls from this earlier run directory's store "
            "(read only; repeatable): a new judge pays only for the judge calls.",
            MODEL,
            "DIR",
            path=True,
        ),
    ] = Field(default_factory=list)
    # Task and model-layer knobs by full key ({"ner.tokenizer": "model"}); every key is declared
    # by its layer (clineval.options) and checked against those declarations before a run. A
    # setting of one benchmark alone lives here, not as a field, even when it keeps a flag of
    # its own (--cases is clinconsensus.cases: clineval.options.Flag).
    options: Annotated[
        dict[str, str],
        Setting(
            "A task or model option (repeatable); keys: clineval tasks --options.",
            DATA,
            "KEY=VALUE",
            flag="--option",
        ),
    ] = Field(default_factory=dict)

    @field_validator("data_dir", "judge_prompt", "price_table", "batch_file_out")
    @classmethod
    def _nonempty_path(cls, value: str | None, info: ValidationInfo) -> str | None:
        if is_empty_path(value) and not _from_manifest(info):
            raise ValueError(EMPTY_PATH)
        return value

    @field_validator("batch_file_in")
    @classmethod
    def _nonempty_paths(cls, value: list[str], info: ValidationInfo) -> list[str]:
        if any(is_empty_path(v) for v in value) and not _from_manifest(info):
            raise ValueError(EMPTY_PATH)
        return value

    @field_validator("shard")
    @classmethod
    def _valid_shard(cls, value: str | None) -> str | None:
        if value is not None:
            if is_auto(value):  # kept resolved: the manifest and merge see I/N
                value = resolve_auto(value, os.environ)
            parse_shard(value)
        return value

    @field_validator("batch_file_out")
    @classmethod
    def _valid_batch_file_out(cls, value: str | None) -> str | None:
        return check_path_value(value, "--batch-file-out")

    @field_validator("base_urls")
    @classmethod
    def _valid_base_urls(cls, value: list[str]) -> list[str]:
        for url in value:
            check_base_url(url, "--base-url")
        return value

    # The specs of --model and --judge, parsed once by `_valid_models` (run again on every
    # assignment: validate_assignment) with the settings they were parsed from.
    _models: tuple[tuple[Any, ...], RunModels] | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _valid_models(self) -> RunConfig:
        self._models = (self._spec_settings(), _run_models(self))
        return self

    def _spec_settings(self) -> tuple[Any, ...]:
        return (self.model, *self.judges, None, *self.base_urls, None, *self.judge_base_urls)

    @property
    def models(self) -> RunModels:
        """The run's model specs, typed: --model with --base-url, each --judge with its
        --judge-base-url replicas, the judge panel. Parsed when the config was validated; a
        copy made without validation (model_copy(update=...)) is parsed again, never stale."""
        if self._models is None or self._models[0] != self._spec_settings():
            self._models = (self._spec_settings(), _run_models(self))
        return self._models[1]

    @model_validator(mode="after")
    def _valid_batch_models(self) -> RunConfig:
        for name in self.batch_models:
            models = self.models.all
            named = [spec for spec in models if name in names(spec)]
            if not named:
                labels = ", ".join(spec.label for spec in models)
                raise InputError(
                    f"--batch-model {name!r}: not a model of this run (models: {labels})"
                )
            if not backend_info(named[0]).has_batch:
                raise InputError(
                    f"--batch-model {name!r}: only openai: models have a batch interface"
                )
        return self

    @property
    def batch_mode(self) -> bool:
        """Whether any call of the run goes through batches (server or files)."""
        return self.batch or bool(self.batch_models or self.batch_file_out or self.batch_file_in)

    def batched(self, spec: ModelSpec) -> bool:
        """Whether the calls of `spec` (one of `models`) go through batches: an openai:
        model, in batch mode, named by --batch-model when any is."""
        if not self.batch_mode or not backend_info(spec).has_batch:
            return False
        return not self.batch_models or any(n in names(spec) for n in self.batch_models)

    def model_settings(self) -> ModelSettings:
        """What the model layer reads of this run, and nothing else (clineval.models.runtime)."""
        return ModelSettings(
            timeout_s=self.timeout_s,
            max_retries=self.max_retries,
            concurrency=self.concurrency,
            options=model_options(self.options),
            batch_server=self.batch or bool(self.batch_models),
            batch_file_out=Path(self.batch_file_out) if self.batch_file_out else None,
            batch_file_in=tuple(self.batch_file_in),
            batched=frozenset(spec.text for spec in self.models.all if self.batched(spec)),
        )

    @classmethod
    def checked(cls, *, strict: bool = False, **settings: Any) -> RunConfig:
        """A RunConfig from user settings; InputError (naming the flag) for a bad one.
        `strict` (the Python API): no conversion, so True is no int and "3" no number."""
        try:
            return cls.model_validate(settings, strict=strict)
        except ValidationError as exc:
            raise input_error(exc) from None

    @classmethod
    def from_manifest(cls, data: Any, path: str) -> RunConfig:
        """The config a manifest recorded; InputError naming the manifest if it is not one.
        Read a manifest through clineval.option_flags.config_from_manifest, which first
        moves a benchmark's setting that an older clineval kept as a field into its option."""
        if not isinstance(data, dict):
            raise InputError("the manifest's config is not a JSON object", path=path)
        try:
            return cls.model_validate(data, context={_MANIFEST: True})
        except ValidationError as exc:
            raise InputError(
                f"the manifest's config is not valid: {input_error(exc).message}", path=path
            ) from None


# Validation context of a config read back from a manifest: the rules that refuse a setting a
# run would ignore apply to new commands, not to runs recorded before them.
_MANIFEST = "from_manifest"


def _from_manifest(info: ValidationInfo) -> bool:
    return bool(info.context and info.context.get(_MANIFEST))


def _run_models(config: RunConfig) -> RunModels:
    """The specs of `config` typed, their URLs checked (naming the flag that gave each), each
    --judge-base-url entry given to the judge it names."""
    candidate = _parse(config.model, "--model")
    judges = [_parse(judge, "--judge") for judge in config.judges]
    own: dict[str, list[str]] = {}  # a judge as written -> its --judge-base-url replicas
    for item in config.judge_base_urls:
        name, url = split_judge_url(item)
        check_base_url(url, "--judge-base-url")
        own.setdefault(judge_named(name, item, judges or [candidate]).text, []).append(url)

    def as_judge(spec: ModelSpec) -> ModelSpec:
        # --base-url belongs to --model: a judge without replicas of its own takes it only
        # when it is that same model
        mine = own.get(spec.text) or (config.base_urls if spec.text == config.model else [])
        return replace(spec, base_urls=(*spec.base_urls, *mine))

    with_urls = tuple(as_judge(judge) for judge in judges)
    return RunModels(
        candidate=replace(candidate, base_urls=(*candidate.base_urls, *config.base_urls)),
        judges=with_urls,
        panel=with_urls or (as_judge(candidate),),
    )


def _parse(text: str, flag: str) -> ModelSpec:
    spec = ModelSpec.parse(text)
    for url in spec.base_urls:
        check_base_url(url, flag)
    return spec


def with_spec_labels(recorded: Mapping[str, Any]) -> dict[str, Any]:
    """A config as a manifest records it (JSON), its model and judge specs as their labels:
    what the run asked, without the URLs that say where (a moved server, other replicas, a
    shard's own address answer the same stored calls). Resume and merge compare these."""
    out = dict(recorded)
    if isinstance(out.get("model"), str):
        out["model"] = ModelSpec.parse(out["model"]).label
    if isinstance(out.get("judges"), list):
        out["judges"] = [ModelSpec.parse(j).label for j in out["judges"]]
    return out


def input_error(exc: ValidationError) -> InputError:
    """The first problem of a ValidationError as a one-line InputError naming the flag."""
    first = exc.errors()[0]
    location = first.get("loc")
    limits = first.get("ctx") or {}
    if first.get("type") == "value_error":  # a validator's ValueError: its own words
        message = str(limits.get("error", first.get("msg", "invalid value")))
        if not location:  # a check of the whole config: the message names what it checks
            return InputError(message)
        return InputError(f"{flag_of(str(location[0]))}: {message}")
    field = str(location[0]) if location else "?"
    value = first.get("input")
    shown = "" if isinstance(value, dict) or value is None else f" {number(value)[:80]}"
    reason = reason_of(first)
    if first.get("type") == "extra_forbidden":
        return InputError(f"unknown setting {field!r}{did_you_mean(field, RunConfig.model_fields)}")
    return InputError(f"{flag_of(field)}{shown}: {reason}")
