"""Clinical NER (the NCER benchmark): `ner:ncbi`, `ner:bc5cdr`, `ner:biored`, `ner:chia`.

load      the test split, prepared as NCER does (clineval.benchmarks.ner.corpora), after checking
          its files' sha256; its notes into the manifest; `--limit N` keeps the first N docs.
predict   by model backend, one store record per document (kind "prediction", value
          {"entities": [[start, end, type], ...]}); documents already stored are skipped:
            baseline:crf      CRF trained on the train split (a store artifact; the first
                              NER task of a run trains every missing model of the run's NER
                              tasks at once, one process per core)
            predictions:FILE  JSONL of spans or BIO tags (clineval.benchmarks.ner.predictions),
                              re-read on every run; documents it lacks count as missing
            hf:PATH           local token-classification checkpoint (hf_tagger.py)
            gliner:PATH       local GLiNER checkpoint, a span tagger prompted with the
                              dataset's types (clineval.benchmarks.ner.span_tagger)
            openai:/llamacpp: NER by extraction with a chat model (clineval.benchmarks.ner.llm)
evaluate  reads only the store: token macro F1 (primary), span partial (nervaluate ent_type)
          and exact (strict) F1, per type, plus one samples.jsonl row per document
          (clineval.benchmarks.ner.scoring). Options: `ner.tokenizer=model` (hf only) adds
          `token_macro_f1_model_tokens`; `ner.crf_workers=N`; `ner.label_map=L:type,...` (hf);
          `ner.response_format=json_schema|json_object|none` (LLM); `ner.labels`,
          `ner.threshold`, `ner.flat` (gliner).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clineval.benchmarks.base import DataFileStatus, RunContext, Task, TaskResult
from clineval.benchmarks.kit import (
    PREDICTION,
    pending,
    plan_by_chat,
    predictions_path,
    read_predictions,
    select_samples,
)
from clineval.benchmarks.ner.options import NER_OPTIONS, TOKENIZER_OPTION
from clineval.benchmarks.ner.records import DATASET_TYPES, NerDocument, PreparedSplit, Span
from clineval.errors import InputError
from clineval.models.backends import ModelKind
from clineval.plan import CallPlan
from clineval.progress import Step, step

TEST_SPLIT = "test"
# What the CRF baseline trains on. Dev is left out: it chose the hyperparameters, and training
# on train alone keeps the 4-corpus demo well inside its time budget on a 2-core machine.
TRAIN_SPLITS = ("train",)


@dataclass
class NerData:
    split: PreparedSplit  # the whole test split (predictions files are validated against it)
    documents: list[NerDocument]  # what this run scores (after --limit)


def spans_to_json(spans: Iterable[Span]) -> list[list[Any]]:
    return [[s.start, s.end, s.type] for s in spans]


def spans_from_json(rows: Iterable[Sequence[Any]]) -> list[Span]:
    return [Span(int(r[0]), int(r[1]), str(r[2])) for r in rows]


def _model_tokenizer(ctx: RunContext) -> bool:
    """True for `--option ner.tokenizer=model`; a misspelt value is an error, not "regex"."""
    return bool(NER_OPTIONS.value(ctx.config.options, "tokenizer") == "model")


@contextmanager
def _bar(
    description: str, total: int | None, unit: str = "documents"
) -> Iterator[Callable[[], None]]:
    """The progress of a step (no model calls): over documents, or loading a model."""
    with step(description, total, unit=unit) as current:
        yield current.advance


def verify_files(root: Path | None, dataset: str, splits: Iterable[str]) -> None:
    """InputError (exit 2) when a data file is in neither the data root nor the fetch cache,
    or its sha256 differs from the manifest."""
    from clineval.benchmarks.ner.corpora import data_files, optional_data_files
    from clineval.data.checksums import require_verified
    from clineval.datapaths import data_file

    optional = optional_data_files(dataset)
    for split in splits:
        for relative in data_files(dataset, split):
            if relative in optional and data_file(root, relative) is None:
                continue  # recomputed by the loader (a note in the manifest says so)
            require_verified(root, relative)


class NerTask(Task[NerData]):
    family = "ner"
    option_group = NER_OPTIONS

    def __init__(self, name: str) -> None:
        """The task `name`, "ner:DATASET" (one of the declaration's tasks)."""
        dataset = name.removeprefix(f"{self.family}:")
        self.dataset = dataset
        self.name = f"{self.family}:{dataset}"
        self.types = DATASET_TYPES[dataset]
        self.description = f"Clinical NER on {dataset} test ({', '.join(self.types)})"

    # ---- data ------------------------------------------------------------------------------
    def data_status(self, data_root: Path | None) -> list[DataFileStatus]:
        from clineval.benchmarks.ner.corpora import data_files, optional_data_files
        from clineval.data.checksums import file_status

        seen: list[str] = []
        for split in (TEST_SPLIT, *TRAIN_SPLITS):
            seen.extend(p for p in data_files(self.dataset, split) if p not in seen)
        statuses = [DataFileStatus(p, file_status(data_root, p)) for p in seen]
        # a missing optional file is recomputed by the loader: nothing to do about it
        optional = optional_data_files(self.dataset)
        return [s for s in statuses if not (s.relative_path in optional and s.status == "missing")]

    def load(self, ctx: RunContext) -> NerData:
        from clineval.benchmarks.ner.corpora import load_ner_split

        # None: no data root; the files are then read from the fetch cache (clineval.datapaths)
        root = ctx.data_root
        _model_tokenizer(ctx)  # a misspelt option stops the run before any model call
        verify_files(root, self.dataset, (TEST_SPLIT,))
        # The test gold only: the CRF baseline trains on clineval's preparation either way.
        preparation = str(NER_OPTIONS.value(ctx.config.options, "preparation"))
        split = load_ner_split(self.dataset, TEST_SPLIT, root, preparation)
        # --limit first, then --shard I/N of those (the rule every task follows: clineval.shard)
        documents = select_samples(ctx, split.documents, lambda d: d.id)
        if ctx.backend.kind is ModelKind.SPAN_TAGGER:
            from clineval.benchmarks.ner.span_tagger import tagger_settings

            tagger_settings(ctx, self.types)  # label texts that clash: refused before any write
        ctx.note(self.name, "test_split", split.notes)
        ctx.note(self.name, "documents_scored", len(documents))
        return NerData(split=split, documents=documents)

    # ---- predict ---------------------------------------------------------------------------
    def predict(self, ctx: RunContext, data: NerData) -> None:
        kind = ctx.backend.kind
        if kind is ModelKind.PREDICTIONS:
            self._predict_from_file(ctx, data)
            return
        stored = ctx.store.records(self.name, PREDICTION)
        todo = pending(ctx, self.name, data.documents, lambda d: d.id)
        if kind is ModelKind.BASELINE:
            todo = self._crf_todo(ctx, data, stored)
        elif kind is ModelKind.SPAN_TAGGER:
            from clineval.benchmarks.ner.span_tagger import span_tagger_todo

            todo = span_tagger_todo(ctx, data.documents, stored, self.types)
        ctx.note(self.name, "predicted_now", len(todo))
        if kind is ModelKind.BASELINE:
            self._predict_crf(ctx, todo)
        elif kind is ModelKind.CHAT:  # a server, a GGUF, or hf:PATH of a causal LM
            self._predict_llm(ctx, todo)
        elif kind is ModelKind.SPAN_TAGGER:
            self._predict_span_tagger(ctx, todo)
        else:  # an hf token-classification checkpoint
            self._predict_hf(ctx, todo)

    def plan(self, ctx: RunContext, data: NerData, calls: CallPlan) -> None:
        if not ctx.backend.is_chat or not data.documents:
            return
        from clineval.benchmarks.ner.llm import format_option, make_request

        fmt = format_option(ctx)
        todo = pending(ctx, self.name, data.documents, lambda d: d.id)
        requests = [(d.id, make_request(ctx, d.text, self.types, fmt)) for d in todo]
        plan_by_chat(ctx, self.name, calls, requests, len(data.documents) - len(todo))

    def _put(self, ctx: RunContext, rows: list[tuple[str, dict[str, Any]]]) -> None:
        if rows:
            ctx.store.put_records(self.name, PREDICTION, rows)

    def _predict_from_file(self, ctx: RunContext, data: NerData) -> None:
        """The file is the source of truth: it is re-read and re-validated on every run."""
        from clineval.benchmarks.ner.predictions import TypeNames, row_parser

        by_id = {doc.id: doc for doc in data.split.documents}
        names = TypeNames(self.types)
        path = predictions_path(ctx, self.name)
        predictions = read_predictions(path, by_id, parse=row_parser(by_id, names), noun="document")
        if names.notes():  # corpus type names the file used, mapped or dropped
            ctx.note(self.name, "predictions_types", names.notes())
        rows: list[tuple[str, dict[str, Any]]] = []
        for doc in data.documents:
            spans = predictions.get(doc.id)
            value: dict[str, Any] = {"entities": spans_to_json(spans or [])}
            if spans is None:
                value["missing"] = True
            rows.append((doc.id, value))
        self._put(ctx, rows)

    def _crf_artifact(self, ctx: RunContext) -> str:
        from clineval.benchmarks.ner.crf import CrfConfig

        if ctx.model.name != "crf":
            raise InputError(f"unknown baseline {ctx.model.name!r} for {self.name} (known: crf)")
        return CrfConfig().artifact_name(self.dataset, TRAIN_SPLITS)

    def _crf_todo(
        self, ctx: RunContext, data: NerData, stored: dict[str, Any]
    ) -> list[NerDocument]:
        """Documents without a prediction of the current model (a run directory made with
        other CRF settings or features keeps its records, but they are predicted again)."""
        artifact = self._crf_artifact(ctx)
        return [
            doc
            for doc in data.documents
            if doc.id not in stored or stored[doc.id].get("model") != artifact
        ]

    def _predict_crf(self, ctx: RunContext, todo: list[NerDocument]) -> None:
        from clineval.benchmarks.ner.crf import open_tagger

        artifact = self._crf_artifact(ctx)
        ctx.note(self.name, "crf_artifact", artifact)
        model = ctx.store.get_artifact(artifact)
        if model is None and todo:
            _train_missing_crfs(ctx, self.dataset)
            model = ctx.store.get_artifact(artifact)
        elif "crf_trained_now" not in ctx.manifest_notes.get(self.name, {}):
            ctx.note(self.name, "crf_trained_now", False)  # (an earlier task may have trained it)
        if not todo:
            return
        assert model is not None
        batch: list[tuple[str, dict[str, Any]]] = []
        with (
            open_tagger(model) as tagger,
            _bar(f"{self.name} CRF predict", len(todo)) as advance,
        ):
            for doc in todo:
                spans = spans_to_json(tagger.predict(doc.text))
                batch.append((doc.id, {"entities": spans, "model": artifact}))
                advance()
                if len(batch) >= 50:  # stored as it goes: an interrupted run keeps its work
                    self._put(ctx, batch)
                    batch = []
            self._put(ctx, batch)

    def _predict_hf(self, ctx: RunContext, todo: list[NerDocument]) -> None:
        from clineval.benchmarks.ner.hf_tagger import LABEL_MAP_OPTION, HfTagger

        if not todo:
            return
        with _bar(f"{self.name} {ctx.model.label}: loading the model", 1, "model") as loaded:
            label_map = ctx.config.options.get(LABEL_MAP_OPTION)
            tagger = HfTagger.load(ctx.model.name, self.types, label_map)
            loaded()
        ctx.note(self.name, "hf_label_map", tagger.label_map_note())
        keep_tokens = _model_tokenizer(ctx)
        batch: list[tuple[str, dict[str, Any]]] = []
        with _bar(f"{self.name} HF predict", len(todo)) as advance:
            for doc in todo:
                result = tagger.predict(doc.text)
                value: dict[str, Any] = {"entities": spans_to_json(result.spans)}
                if keep_tokens:
                    value["model_tokens"] = [list(t) for t in result.model_tokens]
                batch.append((doc.id, value))
                advance()
                if len(batch) >= 16:
                    self._put(ctx, batch)
                    batch = []
        self._put(ctx, batch)

    def _predict_span_tagger(self, ctx: RunContext, todo: list[NerDocument]) -> None:
        from clineval.benchmarks.ner.span_tagger import load_span_tagger, predict_span_tagger

        if not todo:
            return
        with _bar(f"{self.name} {ctx.model.label}: loading the model", 1, "model") as loaded:
            tagger = load_span_tagger(ctx, self.name, self.types)
            loaded()
        with _bar(f"{self.name} GLiNER predict", len(todo)) as advance:
            predict_span_tagger(tagger, todo, lambda rows: self._put(ctx, rows), advance)

    def _predict_llm(self, ctx: RunContext, todo: list[NerDocument]) -> None:
        from clineval.benchmarks.ner.llm import extract_entities_for_documents

        if not todo:
            return
        summary = extract_entities_for_documents(ctx, self.name, todo, self.types)
        ctx.note(self.name, "llm", summary)

    # ---- evaluate --------------------------------------------------------------------------
    def evaluate(self, ctx: RunContext, data: NerData) -> TaskResult:
        from clineval.benchmarks.ner.scoring import score_documents

        stored = ctx.store.records(self.name, PREDICTION)
        preds: list[list[Span]] = []
        model_tokens: list[list[tuple[int, int]]] | None = []
        absent: list[str] = []  # no prediction: scored as empty, and the run fails
        for doc in data.documents:
            record = stored.get(doc.id)
            if record is None or record.get("missing"):
                absent.append(doc.id)
            preds.append(spans_from_json(record["entities"]) if record else [])
            tokens = (record or {}).get("model_tokens")
            if tokens is None or model_tokens is None:
                model_tokens = None
            else:
                model_tokens.append([(int(s), int(e)) for s, e in tokens])
        use_model_tokens = _model_tokenizer(ctx)
        if use_model_tokens and model_tokens is None:
            if ctx.backend.kind is ModelKind.CHECKPOINT and absent:
                raise InputError(
                    f"--option {TOKENIZER_OPTION}=model: {len(absent)} document(s) have no stored "
                    f"prediction of {ctx.model.label}, so their model tokens are unknown; run "
                    "the same `clineval run` again to predict them"
                )
            raise InputError(
                f"--option {TOKENIZER_OPTION}=model needs a model with its own tokenizer "
                f"(hf:PATH); {ctx.model.label} stored no model tokens"
            )
        metrics, samples = score_documents(
            data.documents,
            preds,
            self.types,
            model_tokens=model_tokens if use_model_tokens else None,
        )
        metrics["missing_predictions"] = len(absent)
        metrics["model"] = ctx.model.label
        if ctx.backend.is_chat:
            # Replies without usable JSON score as empty predictions; say how many there were.
            parses = [stored[d.id].get("parse") for d in data.documents if d.id in stored]
            metrics["invalid_outputs"] = sum(p == "invalid" for p in parses)
            metrics["invalid_output_rate"] = metrics["invalid_outputs"] / max(len(parses), 1)
            for row in samples:
                record = stored.get(row["id"])
                if record is not None:
                    row["model_output"] = {
                        key: record[key]
                        for key in ("raw_output", "parse", "not_found")
                        if key in record
                    }
        return TaskResult(metrics=metrics, samples=samples, missing=absent)


# Largest training sets first, so that two workers finish close together.
_TRAIN_ORDER = ("chia", "biored", "bc5cdr", "ncbi")


def _train_missing_crfs(ctx: RunContext, dataset: str) -> None:
    """Train the CRF of `dataset` and of every other NER task of this run that lacks one.

    The models are trained in parallel (one process per core, `--option ner.crf_workers=N`),
    stored as artifacts, and each task's manifest notes say that it was trained in this run.
    """
    from clineval.benchmarks.ner.crf import CrfConfig
    from clineval.benchmarks.ner.crf_jobs import CrfJob, default_workers, train_many

    config = CrfConfig()
    wanted = {dataset} | {
        name.split(":", 1)[1]
        for name in ctx.config.tasks
        if name.startswith("ner:") and name.split(":", 1)[1] in DATASET_TYPES
    }
    missing = [
        d
        for d in sorted(wanted, key=lambda d: (*_TRAIN_ORDER, d).index(d))
        if ctx.store.get_artifact(config.artifact_name(d, TRAIN_SPLITS)) is None
    ]
    for name in missing:
        verify_files(ctx.data_root, name, TRAIN_SPLITS)
    root = None if ctx.data_root is None else str(ctx.data_root)
    jobs = [CrfJob(d, root, TRAIN_SPLITS, config) for d in missing]
    chosen = NER_OPTIONS.value(ctx.config.options, "crf_workers")
    workers = default_workers() if chosen is None else int(chosen)
    # One step over the models (it starts before the worker processes, whose start-up took
    # half a minute on a busy machine), and a row per model with its named parts.
    with (
        step(f"CRF training ({', '.join(missing)})", len(jobs), unit="models") as overall,
        _CrfDisplay() as display,
    ):
        for trained in train_many(jobs, workers, display.on_event):
            display.finished(trained.job.dataset)
            overall.advance()
            name = f"ner:{trained.job.dataset}"
            ctx.store.put_artifact(
                config.artifact_name(trained.job.dataset, TRAIN_SPLITS),
                trained.model,
                trained.meta(),
            )
            ctx.note(name, "crf_trained_now", True)
            ctx.note(name, "crf_train_seconds", trained.seconds)
            ctx.note(name, "crf_train_documents", trained.documents)
            ctx.note(name, "crf_train_workers", min(max(workers, 1), len(jobs)))


class _CrfDisplay:
    """One progress row per CRF being trained, its part named (reading, feature generation,
    L-BFGS): a training that sat at 0 iterations for a minute said nothing of its features."""

    def __init__(self) -> None:
        self._steps: dict[str, Step] = {}

    def __enter__(self) -> _CrfDisplay:
        return self

    def on_event(self, event: tuple[str, str, int, int | None]) -> None:
        from clineval.benchmarks.ner.crf import PART_UNITS

        dataset, part, done, total = event
        description = f"ner:{dataset} CRF {part}"
        unit = PART_UNITS.get(part, "splits")
        current = self._steps.get(dataset)
        if current is None:
            current = self._steps[dataset] = Step(description, total, unit=unit)
            current.open()
        elif current.description != description:
            current.phase(description, total, unit)
        if done > current.done:
            current.advance(done - current.done)

    def finished(self, dataset: str) -> None:
        current = self._steps.pop(dataset, None)
        if current is not None:
            current.close("done")

    def __exit__(self, *exc: object) -> None:
        for dataset in list(self._steps):
            self._steps.pop(dataset).close("stopped")
