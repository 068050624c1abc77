"""`gliner:PATH`: a local GLiNER checkpoint (the `gliner` package), run offline, as a span tagger.

Input: documents' texts and, per entity type, the label texts the model is prompted with
(`TaggerSettings.prompts`: type -> prompts; a prompt the model answers with maps back to its
type). Output: typed character spans per document. The model knows no task: the caller says
which types exist and how to prompt for them.

Words are the benchmark's regex tokens (clineval.benchmarks.ner.bio.word_offsets), handed to the
model already split, so the model's words and the benchmark's tokens are the same list and
every span starts and ends on a token boundary; its character offsets are those tokens'
offsets in the text as given (nothing is re-read from strings). A document longer than the
model's input (`max_len` words, and its encoder's subword limit once the label prompts are in)
is cut into overlapping windows on token boundaries and the windows' spans merged as
clineval.benchmarks.ner.span_windows describes; the overlap is above the model's longest span
(`max_width` words), so no span it can predict is cut at a window edge.

Windows of several documents go through the model together (`BATCH_SIZE` per forward pass,
on the model's device as loaded: CPU). Decoding is the package's: `threshold` (None = the
package's own default) and flat (non-overlapping) spans unless `flat=False`.

`chunking="ncer"` (`--option ner.chunking=ncer`) runs a document as NCER's extractor does
instead (`ncer_pieces`): the package's own `predict_entities` on non-overlapping character
pieces, the pieces' spans shifted and concatenated unmerged, the labels prompted in the order
NCER's `list(set(...))` gives them. It reproduces NCER's GLiNER spans, not clineval's windows.

Loading is offline (`local_files_only=True`): a directory without `gliner_config.json`, a
checkpoint the package cannot read, or a missing `gliner` package are one-line InputErrors.
"""

from __future__ import annotations

import inspect
import json
import math
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clineval.benchmarks.ner.bio import word_offsets
from clineval.benchmarks.ner.options import HASH_SEED_MAX
from clineval.benchmarks.ner.records import Span
from clineval.benchmarks.ner.span_windows import TokenSpan, merge
from clineval.benchmarks.windows import Window, plan_windows
from clineval.errors import InputError
from clineval.jsonio import read_json_file
from clineval.models.gliner_checkpoint import (
    GLINER_CONFIG,
    INSTALL_HINT,
    check_checkpoint_dir,
    require_package,
)

BATCH_SIZE = 8  # windows per forward pass
_NO_LIMIT = 10**6  # tokenizers without a configured limit report a huge sentinel (~1e30)
_FALLBACK_THRESHOLD = 0.5


@dataclass(frozen=True)
class TaggerSettings:
    prompts: Mapping[str, tuple[str, ...]]  # entity type -> label texts, in prompt order
    threshold: float | None = None  # None: the package's default
    flat: bool = True
    chunking: str = "windows"  # "windows" (clineval's) | "ncer" (NCER's extractor)
    # The prompt order with chunking "ncer", computed by the caller (ncer_label_order, from the
    # label texts in the order given); empty: NCER's order in this process of the prompts'
    # own order
    label_order: tuple[str, ...] = ()
    hash_seed: int | None = None  # the seed label_order was computed under (None: the process's)

    def ncer_order(self) -> list[str]:
        """The labels as NCER's extractor prompts them (every label text exactly once)."""
        texts = self.prompt_types()
        if not self.label_order:
            return ncer_label_order(list(texts))
        if sorted(self.label_order) != sorted(texts):
            raise InputError("the label order does not hold every label text exactly once")
        return list(self.label_order)

    def order_source(self) -> str:
        """Which hash seed ordered the labels, for the manifest."""
        if self.hash_seed is not None:
            return f"ner.hash_seed={self.hash_seed}"
        seed = os.environ.get("PYTHONHASHSEED")
        return f"PYTHONHASHSEED={seed}" if seed else "this process's random hash seed"

    def prompt_types(self) -> dict[str, str]:
        """Label text -> entity type; one text must not stand for two types."""
        out: dict[str, str] = {}
        for entity_type, prompts in self.prompts.items():
            for prompt in prompts:
                if out.setdefault(prompt, entity_type) != entity_type:
                    raise InputError(
                        f"label text {prompt!r} is given for both {out[prompt]!r} and "
                        f"{entity_type!r}: the model's answer could not be mapped back"
                    )
        if not out:
            raise InputError("no label text to prompt the GLiNER model with")
        return out


def ncer_pieces(text: str, n_words: int, n_types: int, max_len: int) -> list[str]:
    """NCER's cut of a document (`SpanExtractor.__call__`, `split_text_into_parts`), restated
    from its rules: when words + 2 x types exceed the model's `max_len`, the text is cut into
    ceil((words + 2 x types) / max_len) parts of at most ceil(len / parts) characters, each
    piece ending at the last newline of its stretch, else the last period, else the last
    space (the delimiter stays in the piece), else at the stretch's end; the pieces join back
    into the text, and there may be more of them than parts."""
    expected = n_words + 2 * n_types
    if expected <= max_len or not text:  # (NCER would loop forever on an empty text)
        return [text]
    length = math.ceil(len(text) / math.ceil(expected / max_len))
    pieces = []
    rest = text
    while len(rest) > length:
        head = rest[:length]
        cut = next((at for at in (head.rfind(d) for d in ("\n", ".", " ")) if at != -1), -1)
        cut = length - 1 if cut == -1 else cut
        pieces.append(rest[: cut + 1])
        rest = rest[cut + 1 :]
    pieces.append(rest)
    return pieces


# Run in a fresh interpreter: the labels (JSON on stdin) -> the positions of `list(set(labels))`.
# -S (no site) and -P (no script directory on sys.path) so that nothing but the standard
# library is imported; not -E or -I, which would ignore PYTHONHASHSEED itself.
_SET_ORDER_SCRIPT = (
    "import json, sys; labels = json.load(sys.stdin); "
    "print(*[labels.index(x) for x in set(labels)])"
)


def ncer_label_order(labels: Sequence[str], hash_seed: int | None = None) -> list[str]:
    """The order NCER prompts its labels in: `list(set(label_map.keys()))`, the set built from
    empty by adding its config's label texts in the config's order (`labels` must be in that
    order: the insertion history decides where colliding strings land). A set of strings
    iterates in an order fixed by that history and by the strings' hashes, which CPython salts
    with PYTHONHASHSEED. `hash_seed` None: the order of this process (its own seed, random per
    process unless PYTHONHASHSEED is set); a seed: the order a fresh interpreter started with
    PYTHONHASHSEED=hash_seed gives, computed in one (a running process cannot change its
    seed). Either equals NCER's order under that seed on the same string hash (SipHash-1-3,
    every Python clineval supports; Python 3.10's SipHash-2-4 gives other orders)."""
    unique = list(dict.fromkeys(labels))  # adding a member again leaves a set as it was
    if hash_seed is None:
        return list(set(unique))
    if not 0 <= hash_seed <= HASH_SEED_MAX:
        raise InputError(f"hash seed {hash_seed} is outside 0..{HASH_SEED_MAX}")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONHASHSEED"] = str(hash_seed)
    where = f"NCER's label order under PYTHONHASHSEED={hash_seed} ({sys.executable})"
    try:
        done = subprocess.run(
            [sys.executable, "-S", "-P", "-c", _SET_ORDER_SCRIPT],
            input=json.dumps(unique),
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise InputError(f"cannot compute {where}: {exc}") from None
    words = done.stdout.split()
    positions = [int(w) for w in words if w.isascii() and w.isdigit()]
    if (
        done.returncode != 0
        or len(positions) != len(words)
        or sorted(positions) != list(range(len(unique)))
    ):
        reason = " ".join(done.stderr.split())[-300:] or f"exit status {done.returncode}"
        raise InputError(f"cannot compute {where}: {reason}")
    return [unique[i] for i in positions]


class GlinerTagger:
    """A loaded checkpoint; `predict(texts)` returns each text's spans."""

    def __init__(self, model: Any, settings: TaggerSettings, path: Path) -> None:
        self.model = model
        self.settings = settings
        self.path = path
        self.prompt_types = settings.prompt_types()
        self.labels = list(self.prompt_types)
        if settings.chunking == "ncer":
            self.labels = settings.ncer_order()
        config = model.config
        self.max_words = int(getattr(config, "max_len", 384))
        self.max_width = int(getattr(config, "max_width", 12))
        # Twice the longest span the model predicts: every span it can predict lies whole in
        # some window with context on both sides (capped at half a window by plan_windows).
        self.overlap = 2 * self.max_width
        self.threshold = (
            settings.threshold if settings.threshold is not None else _package_threshold(model)
        )
        processor = getattr(model, "data_processor", None)
        tokenizer = getattr(processor, "transformer_tokenizer", None)
        self._tokenizer = tokenizer if getattr(tokenizer, "is_fast", False) else None
        self.subword_limit = _subword_limit(config, self._tokenizer)
        self.subword_budget = self._subword_budget()
        self._collator = model.create_collator()

    @classmethod
    def load(cls, path: str | Path, settings: TaggerSettings) -> GlinerTagger:
        directory = check_checkpoint_dir(path)
        require_package()
        settings.prompt_types()  # a bad label set fails before the model is read
        try:
            from gliner import GLiNER
        except ImportError as exc:  # installed but broken (e.g. a torch it cannot load)
            raise InputError(f"cannot import the gliner package ({INSTALL_HINT}): {exc}") from None
        try:
            model = GLiNER.from_pretrained(str(directory), local_files_only=True)
        except Exception as exc:
            # The package reads the user's directory through json, torch (UnpicklingError),
            # safetensors (SafetensorError), tokenizers and transformers, each with its own
            # error types: whichever of them fails, the directory is not a loadable checkpoint.
            # transformers says "couldn't connect" (an OSError) when it looks for the encoder
            # on the hub: say which encoder and why it is looked for
            missing = _missing_encoder(directory) if isinstance(exc, OSError) else None
            reason = missing or " ".join(str(exc).split())[:300]
            raise InputError(
                f"cannot load the GLiNER checkpoint: {reason or type(exc).__name__}",
                path=directory,
            ) from None
        model.eval()
        return cls(model, settings, directory)

    def describe(self) -> dict[str, Any]:
        """What the manifest records about this model and how it was run."""
        import gliner

        if self.settings.chunking == "ncer":
            return {
                "gliner_version": getattr(gliner, "__version__", None),
                "architecture": type(self.model).__name__,
                "labels": {prompt: t for prompt, t in self.prompt_types.items()},
                "chunking": "ncer",
                "label_order": self.labels,
                "label_order_seed": self.settings.order_source(),
                "threshold": self.threshold,
                "flat": self.settings.flat,
                "max_len": self.max_words,
            }
        return {
            "gliner_version": getattr(gliner, "__version__", None),
            "architecture": type(self.model).__name__,
            "labels": {prompt: t for prompt, t in self.prompt_types.items()},
            "threshold": self.threshold,
            "flat": self.settings.flat,
            "window_words": self.max_words,
            "window_subwords": self.subword_limit,
            "overlap_words": self.overlap,
            "batch_size": BATCH_SIZE,
        }

    def _subword_budget(self) -> int | None:
        """Subwords left for the text once the label prompts (and special tokens) are in."""
        if self._tokenizer is None or self.subword_limit is None:
            return None
        config = self.model.config
        if getattr(config, "labels_encoder", None):  # bi-encoder: labels are encoded apart
            overhead = int(self._tokenizer.num_special_tokens_to_add(pair=False))
        else:
            prompt: list[str] = []
            for label in self.labels:
                prompt += [str(config.ent_token), label]
            prompt.append(str(config.sep_token))
            encoded = self._tokenizer(prompt, is_split_into_words=True, add_special_tokens=True)
            overhead = len(encoded["input_ids"])
        budget = self.subword_limit - overhead
        if budget < 1:
            raise InputError(
                f"the {len(self.labels)} label prompts alone take {overhead} of the model's "
                f"{self.subword_limit} subwords; prompt with fewer or shorter labels",
                path=self.path,
            )
        return budget

    def _costs(self, words: list[str]) -> list[int]:
        """Subwords per word (1 each when the tokenizer cannot say)."""
        if self._tokenizer is None or not words:
            return [1] * len(words)
        # verbose=False: a whole document is longer than the encoder takes, which is the point
        # (it is only counted here), not the warning transformers would print
        encoded = self._tokenizer(
            words, is_split_into_words=True, add_special_tokens=False, verbose=False
        )
        counts = [0] * len(words)
        for word in encoded.word_ids():
            if word is not None:
                counts[word] += 1
        return counts

    def windows(self, words: list[str]) -> list[Window]:
        budget = self.subword_budget if self.subword_budget is not None else self.max_words
        return plan_windows(self._costs(words), budget, self.max_words, self.overlap)

    def ncer_words(self, text: str) -> int:
        """How many words NCER counts in `text`: the model's own words splitter."""
        splitter = getattr(getattr(self.model, "data_processor", None), "words_splitter", None)
        if splitter is None:
            return len(word_offsets(text))
        return sum(1 for _ in splitter(text))

    def predict_ncer(self, text: str) -> list[Span]:
        """One document as NCER's GLiNER extractor runs it (see `ncer_pieces`): spans of each
        piece in the package's order, shifted by the piece's start, pieces in text order."""
        n_types = len(set(self.prompt_types.values()))
        pieces = ncer_pieces(text, self.ncer_words(text), n_types, self.max_words)
        spans: list[Span] = []
        start = 0
        for piece in pieces:
            found = self.model.predict_entities(
                piece, self.labels, flat_ner=self.settings.flat, threshold=self.threshold
            )
            for entity in found:
                entity_type = self.prompt_types.get(str(entity["label"]))
                if entity_type is not None:  # NCER drops labels outside its map too
                    a, b = int(entity["start"]), int(entity["end"])
                    spans.append(Span(a + start, b + start, entity_type))
            start += len(piece)
        return spans

    def predict(self, texts: Sequence[str]) -> list[list[Span]]:
        """Each text's spans, sorted by (start, end, type) (with NCER's chunking: in NCER's
        order)."""
        if self.settings.chunking == "ncer":
            return [self.predict_ncer(text) for text in texts]
        offsets = [word_offsets(text) for text in texts]
        words = [[text[a:b] for a, b in offs] for text, offs in zip(texts, offsets, strict=True)]
        plans = [self.windows(w) for w in words]
        jobs = [(d, k) for d, plan in enumerate(plans) for k in range(len(plan))]
        found: dict[tuple[int, int], list[TokenSpan]] = {}
        for first in range(0, len(jobs), BATCH_SIZE):
            chunk = jobs[first : first + BATCH_SIZE]
            inputs = [words[d][plans[d][k].start : plans[d][k].end] for d, k in chunk]
            for (d, k), spans in zip(chunk, self._forward(inputs), strict=True):
                shift = plans[d][k].start
                found[(d, k)] = [
                    TokenSpan(s.start + shift, s.end + shift, s.type, s.score) for s in spans
                ]
        out: list[list[Span]] = []
        for d, plan in enumerate(plans):
            merged = merge(
                plan, [found[(d, k)] for k in range(len(plan))], len(words[d]), self.settings.flat
            )
            out.append(
                [Span(offsets[d][s.start][0], offsets[d][s.end - 1][1], s.type) for s in merged]
            )
        return out

    def _forward(self, inputs: list[list[str]]) -> list[list[TokenSpan]]:
        """The model's spans for each window (window token indices, end exclusive)."""
        rows = [{"tokenized_text": tokens, "ner": None} for tokens in inputs]
        batch = self.model.collate_batch(rows, self.labels, self._collator)
        output = self.model.run_batch(batch, threshold=self.threshold)
        decoded = self.model.decode_batch(
            output, batch, threshold=self.threshold, flat_ner=self.settings.flat, multi_label=False
        )
        results: list[list[TokenSpan]] = []
        for tokens, spans in zip(inputs, decoded, strict=True):
            row: list[TokenSpan] = []
            for span in spans:
                entity_type = self.prompt_types.get(str(span.entity_type))
                start, end = int(span.start), int(span.end) + 1  # the package's end is inclusive
                if entity_type is None or not 0 <= start < end <= len(tokens):
                    continue  # not one of our prompts, or outside the window: never guessed at
                row.append(TokenSpan(start, end, entity_type, float(span.score)))
            results.append(row)
        return results


def _missing_encoder(directory: Path) -> str | None:
    """Why loading failed when the checkpoint does not embed its encoder's config: the package
    then reads the encoder it names from the local Hugging Face cache (offline, never the hub)."""
    try:
        config = read_json_file(directory / GLINER_CONFIG, GLINER_CONFIG)
    except InputError:
        return None
    if not isinstance(config, dict) or config.get("encoder_config"):
        return None
    encoder = config.get("model_name") or "microsoft/deberta-v3-small"
    return (
        f"its {GLINER_CONFIG} embeds no encoder config, so the gliner package reads the encoder "
        f"{encoder!r} from the local Hugging Face cache, which does not hold it (download "
        "that encoder too, or a checkpoint that embeds it)"
    )


def _package_threshold(model: Any) -> float:
    """The threshold the package's own `inference` uses when none is given."""
    try:
        default = inspect.signature(model.inference).parameters["threshold"].default
    except (AttributeError, KeyError, TypeError, ValueError):
        return _FALLBACK_THRESHOLD
    return float(default) if isinstance(default, int | float) else _FALLBACK_THRESHOLD


def _subword_limit(config: Any, tokenizer: Any) -> int | None:
    """The most subwords the encoder takes: its tokenizer's limit and its position table."""
    limits = []
    configured = getattr(tokenizer, "model_max_length", None)
    if isinstance(configured, int) and 0 < configured < _NO_LIMIT:
        limits.append(configured)
    positions = getattr(getattr(config, "encoder_config", None), "max_position_embeddings", None)
    if isinstance(positions, int) and positions > 0:
        limits.append(positions)
    return min(limits) if limits else None
