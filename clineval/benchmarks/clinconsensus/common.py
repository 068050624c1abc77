"""What the ClinConsensus task's load, predict and evaluate steps share: options, data, judges.

Task options (`--option clinconsensus.KEY=VALUE`):
  cases=FILE|fixture   the cases file (also spelt `--cases FILE`, one setting either way), or
                       the fixture cases shipped with clineval (results say fixture: true);
                       default: the official file under the data root or in the data cache
  verdicts=FILE        score a file of judge verdicts made elsewhere (also spelt
                       `--verdicts FILE`); no model is called, so it stands in for --model
                       (clineval.options.Option.replaces_model)
  max_criteria=N       judge only the first N criteria of each case (tests, smoke runs); the
                       metrics then use N in place of 30, and CACS@k for k > N is null
  judge_retries=N      re-asks after an unparseable judge reply (default 2)
  judge_max_tokens=N   max_tokens of a judge call (default 1024; on a llamacpp: judge enough
                       for the bounded explanation below, 664)
  judge_explanation_chars=N
                       bound the verdict's explanation to N characters in the JSON schema
                       (default 200 on a llamacpp: judge, unbounded elsewhere; 0 = unbounded)
  aggregate=RULE       several judges: majority (default) | all | any
  k=K1,K2              extra k values for CACS@k and pass@k (7 and 10 are always reported)
  bootstrap=N          bootstrap resamples for the 95% intervals (default 1000; 0 = none)
  judge_input_tokens=N keep only the first N tokens of each templated judge input, as the
                       authors' run_local_judge.py does (--max-input-length 5120); hf: judges
                       only (they template the prompt themselves), recorded in the manifest
The judge_* options are refused when the verdicts come from a file: no judge is called.

Where verdicts come from (decided once here, recorded in results["source"]):
  - `--verdicts FILE`, or `--model predictions:FILE` for this task: FILE is a verdicts JSONL
    {case_id, criterion_id, criteria_met: true|false|null}, or the authors' own judgements
    file `<model>_judge.json` (a JSON list, one item per case: see
    clineval.benchmarks.clinconsensus.judgements); no model is called. Both given must name the same
    file.
  - otherwise the candidate is `--model` and the judges are `--judge` (default: the candidate
    model judges its own answers; results["judge_is_candidate"] is true whenever the candidate
    is one of the judges).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from clineval.benchmarks.base import RunContext
from clineval.benchmarks.clinconsensus.cases import (
    FIXTURE_PREFIX,
    OFFICIAL_RELATIVE_PATH,
    RUBRICS_PER_CASE,
    Case,
    fixture_path,
    is_fixture_file,
    load_cases,
)
from clineval.benchmarks.clinconsensus.metrics import DEFAULT_KS
from clineval.benchmarks.judged import JudgePanel, ReplyBounds, judge_options
from clineval.benchmarks.kit import select_samples
from clineval.config import RunConfig
from clineval.data.cache import default_cache_dir
from clineval.datapaths import data_file
from clineval.errors import InputError
from clineval.judge.prompt import JudgePrompt
from clineval.messages import EMPTY_PATH
from clineval.models.registry import backend_info
from clineval.models.spec import ModelSpec
from clineval.options import (
    MAX_TOKENS,
    Flag,
    Option,
    OptionGroup,
    RunFacts,
    integer,
    integer_list,
)

TASK = "clinconsensus"
VERDICTS_FILE_JUDGE = "verdicts-file"
_PREFIX = TASK + "."
FIXTURE = "fixture"  # clinconsensus.cases=fixture: the fixture cases shipped with clineval


def _path_value(text: str) -> str:
    """A file's path (a cases file's may be `fixture`: a file of that name is ./fixture)."""
    if not text.strip():
        raise ValueError(EMPTY_PATH)
    return text


def _no_judge(value: object, run: RunFacts) -> str | None:
    """A judge option's rule: with the verdicts from a file (--verdicts, or --model
    predictions:FILE, which is a verdicts file here) no judge is called, so it would be
    ignored."""
    if _PREFIX + "verdicts" in run.options or "predictions" in run.candidate:
        return "no judge is called when the verdicts come from a file (--verdicts FILE)"
    return None


def _judging(option: Option) -> Option:
    return replace(option, unusable=_no_judge) if option.name.startswith("judge_") else option


CLINCONSENSUS_OPTIONS = OptionGroup(
    namespace=TASK,
    applies_to="the clinconsensus task",
    options=(
        Option(
            "cases",
            _path_value,
            "the cases file, or fixture (the SYNTHETIC cases shipped with clineval); default: "
            "the official file under the data root or in the data cache",
            None,
            flag=Flag("--cases", metavar="FILE"),
        ),
        Option(
            "verdicts",
            _path_value,
            "score a file of judge verdicts made elsewhere (no model is called)",
            None,
            flag=Flag("--verdicts", metavar="FILE"),
            replaces_model=True,
        ),
        Option(
            "max_criteria",
            integer(minimum=1, maximum=10_000),
            "judge only the first N criteria of each case (smoke runs)",
            str(RUBRICS_PER_CASE),
        ),
        # the options every judged task takes, as the judging kit declares them
        # (refused with a verdicts file, which calls no judge)
        *map(_judging, judge_options(TASK, "the clinconsensus task").options),
        Option(
            "k",
            integer_list(minimum=1, maximum=10_000),
            "extra k values for CACS@k and pass@k",
            None,
            scoring_only=True,
        ),
        Option(
            "bootstrap",
            integer(minimum=0, maximum=1_000_000),
            "bootstrap resamples (0 = none)",
            "1000",
            scoring_only=True,
        ),
        Option(
            "judge_input_tokens",
            integer(minimum=1, maximum=MAX_TOKENS),
            "hf: judges: keep the first N tokens of the templated judge input (the authors' "
            "run_local_judge.py: 5120); default: the whole input",
            None,
            changes_requests=True,
            unusable=_no_judge,
        ),
    ),
)


@dataclass(frozen=True)
class Options:
    """The clinconsensus.* options of a run, typed, read from their declarations above (the
    run checked every key and value before anything started)."""

    cases: str | None
    max_criteria: int
    judge_retries: int
    judge_max_tokens: int | None  # None: not set, judge_cap() decides per judge
    judge_explanation_chars: int | None  # None: not set, explanation_bound() decides
    aggregate: str
    ks: tuple[int, ...]
    bootstrap: int
    judge_input_tokens: int | None

    def explanation_bound(self, spec: ModelSpec) -> int | None:
        """The most characters `spec`'s verdict explanation may have (None: unbounded); the
        kit's rule (ReplyBounds.of) with this run's option."""
        return self.reply_bounds(spec).explanation_chars

    def judge_cap(self, spec: ModelSpec) -> int:
        """max_tokens of `spec`'s judge calls (ReplyBounds.of with this run's option)."""
        return self.reply_bounds(spec).max_tokens

    def reply_bounds(self, spec: ModelSpec) -> ReplyBounds:
        return ReplyBounds.of(spec, self.judge_max_tokens, self.judge_explanation_chars)

    @classmethod
    def from_config(cls, options: dict[str, str]) -> Options:
        def value(name: str) -> Any:
            return CLINCONSENSUS_OPTIONS.value(options, name)

        extra_ks = value("k") or ()
        return cls(
            cases=value("cases"),
            max_criteria=min(RUBRICS_PER_CASE, value("max_criteria")),
            judge_retries=value("judge_retries"),
            judge_max_tokens=value("judge_max_tokens"),  # None: judge_cap() decides per judge
            judge_explanation_chars=value("judge_explanation_chars"),
            aggregate=value("aggregate"),
            ks=tuple(dict.fromkeys([*DEFAULT_KS, *extra_ks])),
            bootstrap=int(value("bootstrap")),
            judge_input_tokens=value("judge_input_tokens"),
        )


@dataclass(frozen=True)
class Data:
    """The loaded evaluation set of one run."""

    cases_path: Path
    fixture: bool
    all_cases: tuple[Case, ...]  # the whole file (verdict files are checked against it)
    cases: tuple[Case, ...]  # after --limit and --shard
    options: Options
    verdicts_path: Path | None  # scoring given verdicts instead of calling models
    judges: tuple[str, ...]  # judge labels, in --judge order
    judge_specs: tuple[ModelSpec, ...]  # empty when verdicts come from a file
    judge_is_candidate: bool

    @property
    def n_criteria(self) -> int:
        return self.options.max_criteria

    def reply_bounds(self) -> dict[str, ReplyBounds]:
        """Per judge label, what bounds its verdicts."""
        return {
            label: self.options.reply_bounds(spec)
            for label, spec in zip(self.judges, self.judge_specs, strict=True)
        }


def resolve_cases_path(options: Options, data_root: Path | None) -> Path:
    """The cases file of a run: clinconsensus.cases (`--cases`: a path, or the fixture), else
    the official file found under the data root or in the data cache."""
    if options.cases == FIXTURE:
        return fixture_path()
    if options.cases is not None:
        return Path(options.cases).expanduser()
    found = official_cases_path(data_root)
    if found is not None:
        return found
    where = [] if data_root is None else [str(data_root / OFFICIAL_RELATIVE_PATH)]
    where.append(str(default_cache_dir() / OFFICIAL_RELATIVE_PATH))
    raise InputError(
        f"no ClinConsensus cases in {' or '.join(where)}: run `clineval data fetch "
        "clinconsensus` (the official clinconsensus_low.jsonl, into the data cache), or pass "
        f"--cases FILE, or --option {_PREFIX}cases=fixture for the fixture cases"
    )


def official_cases_path(data_root: Path | None) -> Path | None:
    """The official cases file: under the data root, else in the data cache, where
    `clineval data fetch clinconsensus` puts it ($CLINEVAL_CACHE_DIR or the default): the
    rule of every data file (clineval.datapaths)."""
    return data_file(data_root, OFFICIAL_RELATIVE_PATH)


def verdicts_option(config: RunConfig) -> str | None:
    """The file clinconsensus.verdicts (`--verdicts FILE`) names, as given; None when unset."""
    value: str | None = CLINCONSENSUS_OPTIONS.value(config.options, "verdicts")
    return value


def _verdicts_source(config: RunConfig) -> Path | None:
    from clineval.models.predictions_files import predictions_file

    spec = config.models.candidate
    from_model = predictions_file(spec, TASK) if backend_info(spec).replays_predictions else None
    given = verdicts_option(config)
    from_flag = Path(given).expanduser() if given else None
    if from_model and from_flag and from_model.resolve() != from_flag.resolve():
        raise InputError(
            f"--verdicts {from_flag} and --model predictions:{from_model} name different files"
        )
    return from_flag or from_model


def judge_labels(config: RunConfig) -> tuple[str, ...]:
    """The judge labels a run's verdicts are stored under (also for judge-agreement)."""
    if _verdicts_source(config) is not None:
        return (VERDICTS_FILE_JUDGE,)
    return tuple(spec.label for spec in config.models.panel)


def run_prompt(prompt: JudgePrompt, options: Options) -> JudgePrompt:
    """The judge prompt of a run: with judge_input_tokens its version names the cut, so
    verdicts made on whole inputs are not taken for cut ones (or the other way round)."""
    if options.judge_input_tokens is None:
        return prompt
    return replace(prompt, version=f"{prompt.version}+input{options.judge_input_tokens}")


def load_data(ctx: RunContext) -> Data:
    config = ctx.config
    options = Options.from_config(config.options)
    path = resolve_cases_path(options, ctx.data_root)
    all_cases = load_cases(path)
    cases = select_samples(ctx, all_cases, lambda c: c.case_id)  # --limit, then --shard
    verdicts_path = _verdicts_source(config)
    if verdicts_path is not None:
        if config.judges:
            raise InputError("--judge is not used when scoring a verdicts file; drop it")
        judges: tuple[str, ...] = (VERDICTS_FILE_JUDGE,)
        specs: tuple[ModelSpec, ...] = ()
        judge_is_candidate = False
    else:
        panel = JudgePanel.from_config(config)
        specs, judges = panel.specs, panel.labels
        not_local = [s.label for s in specs if not backend_info(s).templates_own_input]
        if options.judge_input_tokens is not None and not_local:
            # A chat server templates the input itself: its input cannot be cut after the
            # template, where the authors cut theirs, so nothing is cut rather than something.
            raise InputError(
                f"--option {_PREFIX}judge_input_tokens needs hf: judges (a local checkpoint "
                f"that templates and cuts its own input); {not_local[0]} is not one"
            )
        judge_is_candidate = panel.judge_is_candidate
    return Data(
        cases_path=path,
        # also by the ids: a copy of the fixture under another name is still the fixture
        fixture=is_fixture_file(path) or any(c.case_id.startswith(FIXTURE_PREFIX) for c in cases),
        all_cases=tuple(all_cases),
        cases=tuple(cases),
        options=options,
        verdicts_path=verdicts_path,
        judges=judges,
        judge_specs=specs,
        judge_is_candidate=judge_is_candidate,
    )
