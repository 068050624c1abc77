"""The built-in NER baseline: a linear-chain CRF (sklearn-crfsuite) over the benchmark's tokens.

One model per dataset, trained on the splits the task asks for (the NER task uses train only,
`clineval.benchmarks.ner.task.TRAIN_SPLITS`) with BIO tags over the regex tokens
`\\w+(?:[-_]\\w+)*|\\S`, so the baseline sees exactly the units the token metric scores. Features
are plain lexical ones (lowercase form, affixes, word shape, character classes, a +-2 window and
word bigrams); each document is one sequence, since abstracts are short enough for crfsuite.

A trained model is the crfsuite model file itself (bytes), not a pickle: loading it back runs
no code from the store. The artifact name carries the dataset, the training splits and
`FEATURE_VERSION` + the hyperparameters, so changing any of them retrains instead of reusing a
stale model.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any

import pycrfsuite
import sklearn_crfsuite

from clineval.benchmarks.ner.bio import bio_to_spans, spans_to_bio, word_offsets
from clineval.benchmarks.ner.records import NerDocument, Span
from clineval.store import stable_hash

# Bump when the features change: old stored models then no longer match.
FEATURE_VERSION = "lex-v1"

Features = dict[str, str | float]


@dataclass(frozen=True)
class CrfConfig:
    """Training hyperparameters (L-BFGS with elastic-net regularisation)."""

    # Chosen on the dev splits (models trained on train only). (c1, c2) tried: (0.05, 0.01),
    # (0.1, 0.05), (0.2, 0.05), (0.1, 0.2), (0.3, 0.01); (0.05, 0.01) had the best span
    # partial F1 on NCBI, BC5CDR and BioRED dev. 60 L-BFGS iterations instead of 100 cost
    # 0.4-0.8 points of dev partial F1 on each corpus and save 40% of the optimisation time,
    # which keeps the 4-corpus demo inside its 3-minute budget on a busy 2-core machine
    # (BENCHMARKS.md, NER demo).
    c1: float = 0.05
    c2: float = 0.01
    max_iterations: int = 60
    feature_version: str = FEATURE_VERSION

    def as_dict(self) -> dict[str, float | int | str]:
        return asdict(self)

    def artifact_name(self, dataset: str, splits: Sequence[str]) -> str:
        key = stable_hash(
            {
                "c1": self.c1,
                "c2": self.c2,
                "it": self.max_iterations,
                "fv": self.feature_version,
            }
        )[:12]
        return f"ner-crf/{dataset}/{'+'.join(splits)}/{self.feature_version}/{key}"


# Shape classes for ASCII; other characters keep themselves (Greek letters etc. are telling).
_SHAPE = str.maketrans(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
    "X" * 26 + "x" * 26 + "d" * 10,
)
_RUNS = re.compile(r"(.)\1+")


def _token_base(word: str) -> tuple[str, str, str]:
    """(lowercase, full shape, collapsed shape) of one token."""
    shape = word.translate(_SHAPE)
    return word.lower(), shape, _RUNS.sub(r"\1", shape)


def document_features(text: str, tokens: Sequence[tuple[int, int]]) -> list[Features]:
    """One feature dict per token (crfsuite treats `key=value` strings as binary features)."""
    words = [text[s:e] for s, e in tokens]
    base = [_token_base(w) for w in words]
    n = len(words)
    out: list[Features] = []
    for i, word in enumerate(words):
        lower, shape, short = base[i]
        feats: Features = {
            "bias": 1.0,
            "w": lower,
            "p2": lower[:2],
            "p3": lower[:3],
            "s2": lower[-2:],
            "s3": lower[-3:],
            "s4": lower[-4:],
            "sh": shape if len(shape) <= 8 else short,
            "ss": short,
            "len": str(min(len(word), 8)),
        }
        if word.isupper():
            feats["upper"] = 1.0
        if word[:1].isupper():
            feats["cap"] = 1.0
        if any(c.isdigit() for c in word):
            feats["digit"] = 1.0
        if "-" in word:
            feats["hyphen"] = 1.0
            feats["hlast"] = lower.rsplit("-", 1)[-1]
        # whitespace before the token: tells "(" in "IL(2)" from " (" in prose
        feats["gap"] = "1" if tokens[i][0] > 0 and text[tokens[i][0] - 1].isspace() else "0"
        for offset in (-2, -1, 1, 2):
            j = i + offset
            if 0 <= j < n:
                feats[f"{offset}w"] = base[j][0]
                feats[f"{offset}ss"] = base[j][2]
                if abs(offset) == 1:
                    feats[f"{offset}s3"] = base[j][0][-3:]
            else:
                feats[f"{offset}w"] = "<pad>"
        if i > 0:
            feats["bg-"] = base[i - 1][0] + "|" + lower
        if i + 1 < n:
            feats["bg+"] = lower + "|" + base[i + 1][0]
        out.append(feats)
    return out


def training_sequences(
    documents: Sequence[NerDocument],
) -> Iterator[tuple[list[Features], list[str]]]:
    for doc in documents:
        tokens = word_offsets(doc.text)
        yield document_features(doc.text, tokens), spans_to_bio(doc.entities, tokens)


# The named parts of a training, as its progress reports them: (part, done, total).
FEATURES = "feature generation"
FEATURES_CRFSUITE = "feature generation (crfsuite)"
LBFGS = "training (L-BFGS)"
PART_UNITS = {FEATURES: "documents", FEATURES_CRFSUITE: "%", LBFGS: "iterations"}
Report = Callable[[str, int, int | None], None]
# Feature generation reports every this many documents (each report may cross processes).
_REPORT_EVERY = 20


def _trainer_class(report: Report | None, max_iterations: int) -> type[pycrfsuite.Trainer]:
    """A crfsuite trainer that reports its feature generation and each L-BFGS iteration (for
    the progress display), silently."""

    class _Trainer(pycrfsuite.Trainer):  # type: ignore[misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            # crfsuite only parses its log (and so calls the hooks) when verbose; the hooks
            # below keep it quiet. sklearn-crfsuite's own verbose flag stays off (it would
            # add a tqdm bar).
            kwargs["verbose"] = True
            super().__init__(*args, **kwargs)
            self._iterations = 0

        def on_iteration(self, log: object, info: object) -> None:
            self._iterations += 1
            if report is not None:
                report(LBFGS, self._iterations, max_iterations)

        def on_start(self, log: object) -> None:
            if report is not None:
                report(FEATURES_CRFSUITE, 0, 100)

        def on_featgen_progress(self, log: object, percent: object) -> None:
            if report is not None and isinstance(percent, int):
                report(FEATURES_CRFSUITE, max(0, min(percent, 100)), 100)

        def on_featgen_end(self, log: object) -> None:
            return None

        def on_prepared(self, log: object) -> None:
            if report is not None:
                report(LBFGS, 0, max_iterations)

        def on_optimization_end(self, log: object) -> None:
            return None

        def on_end(self, log: object) -> None:
            return None

    return _Trainer


def train_crf(
    documents: Sequence[NerDocument], config: CrfConfig, report: Report | None = None
) -> bytes:
    """Train on the documents and return the crfsuite model file's bytes; `report` hears each
    part of the training: (FEATURES, documents done, documents), then crfsuite's own feature
    generation in percent, then (LBFGS, iteration, max_iterations)."""
    with tempfile.TemporaryDirectory(prefix="clineval-crf-") as tmp:
        path = os.path.join(tmp, "model.crfsuite")
        crf = sklearn_crfsuite.CRF(
            algorithm="lbfgs",
            c1=config.c1,
            c2=config.c2,
            max_iterations=config.max_iterations,
            all_possible_transitions=True,
            model_filename=path,
            trainer_cls=_trainer_class(report, config.max_iterations),
        )
        # Each document's features go to crfsuite as they are made (sklearn-crfsuite's fit
        # zips X with y and appends pair by pair): the features of a corpus are never all held
        # at once, and the progress counts the documents crfsuite has taken in.
        labels: deque[list[str]] = deque()
        n = len(documents)

        def features() -> Iterator[list[Features]]:
            if report is not None:
                report(FEATURES, 0, n)
            for i, (x, y) in enumerate(training_sequences(documents), 1):
                labels.append(y)
                yield x
                if report is not None and (i % _REPORT_EVERY == 0 or i == n):
                    report(FEATURES, i, n)

        def tags() -> Iterator[list[str]]:
            while labels:  # zip asks features() first: the pair's labels are waiting here
                yield labels.popleft()

        crf.fit(features(), tags())
        with open(path, "rb") as fh:
            return fh.read()


class CrfTagger:
    """A trained model, opened from its bytes; use as a context manager (temp file)."""

    def __init__(self, model: bytes):
        self._model = model
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._crf: sklearn_crfsuite.CRF | None = None

    def __enter__(self) -> CrfTagger:
        self._tmp = tempfile.TemporaryDirectory(prefix="clineval-crf-")
        path = os.path.join(self._tmp.name, "model.crfsuite")
        with open(path, "wb") as fh:
            fh.write(self._model)
        self._crf = sklearn_crfsuite.CRF(model_filename=path)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._crf is not None and self._crf.tagger_ is not None:
            self._crf.tagger_.close()
        if self._tmp is not None:
            self._tmp.cleanup()
        self._crf, self._tmp = None, None

    @property
    def labels(self) -> list[str]:
        assert self._crf is not None, "use CrfTagger as a context manager"
        return list(self._crf.classes_ or [])

    def predict(self, text: str) -> list[Span]:
        """Character spans for one document."""
        assert self._crf is not None, "use CrfTagger as a context manager"
        tokens = word_offsets(text)
        if not tokens:
            return []
        tags = self._crf.predict_single(document_features(text, tokens))
        return bio_to_spans(tags, tokens)


@contextmanager
def open_tagger(model: bytes) -> Iterator[CrfTagger]:
    with CrfTagger(model) as tagger:
        yield tagger
