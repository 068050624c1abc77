"""`hf:PATH`: a local Hugging Face token-classification checkpoint, run offline on CPU.

Words are the benchmark's regex tokens; the tokenizer splits them into subwords
(`is_split_into_words=True`) and each word takes the label of its FIRST subword, the usual
alignment for BIO-trained checkpoints. A document longer than the model's window is cut at word
boundaries into consecutive windows of at most `max_length - special tokens` subwords
(`clineval.benchmarks.windows`, no overlap: a word's tag comes from the one window holding it;
a single word longer than a window is truncated to its first pieces, only the first is read).

Labels come from the checkpoint's `id2label`: a `B-`/`I-` (also `S-`/`U-` = B, `E-`/`L-` = I)
prefix, then an entity name that is mapped to the dataset's types: the type itself
(case-insensitive), a corpus type the NCER preparation maps (Disease -> condition, Chemical ->
drug, ...), or `--option ner.label_map=Disease:condition,Chemical:drug`. Labels that map to no
type of the dataset become O and are listed in the manifest (`hf_label_map`).

The model's own tokens (each subword's character span in the document) are returned too, for
the token metric over the model's tokenizer (`--option ner.tokenizer=model`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from clineval.benchmarks.ner.bio import OUTSIDE, bio_to_spans, word_offsets
from clineval.benchmarks.ner.records import Span
from clineval.benchmarks.windows import plan_windows
from clineval.errors import InputError
from clineval.models.hf_checkpoint import load_checkpoint

LABEL_MAP_OPTION = "ner.label_map"
_BEGIN = {"B", "S", "U"}
_INSIDE = {"I", "E", "L"}


def parse_label_map(text: str | None) -> dict[str, str]:
    """`Disease:condition,Chemical:drug` -> {"disease": "condition", "chemical": "drug"}."""
    out: dict[str, str] = {}
    for item in (text or "").split(","):
        if not item.strip():
            continue
        source, sep, target = item.partition(":")
        if not sep or not source.strip() or not target.strip():
            raise InputError(f"--option {LABEL_MAP_OPTION}: {item!r} is not LABEL:type")
        out[source.strip().lower()] = target.strip()
    return out


@dataclass
class LabelMapping:
    """Checkpoint label id -> BIO tag over the dataset's types (or O)."""

    tags: dict[int, str]
    unmapped: list[str] = field(default_factory=list)

    @classmethod
    def build(
        cls, id2label: dict[int, str], types: Sequence[str], extra: dict[str, str] | None = None
    ) -> LabelMapping:
        from clineval.benchmarks.ner.corpora import type_names

        by_name = {t.lower(): t for t in types}  # a type's own name wins over any alias
        aliases = {**type_names(types), **(extra or {})}
        tags: dict[int, str] = {}
        unmapped: list[str] = []
        for index, label in sorted(id2label.items()):
            prefix, sep, name = label.partition("-")
            if not sep or prefix.upper() not in _BEGIN | _INSIDE:
                prefix, name = "B", label  # an IO label set: every label opens or continues
            if label.upper() == OUTSIDE:
                tags[index] = OUTSIDE
                continue
            target = by_name.get(name.lower()) or aliases.get(name.lower())
            if target is None or target not in types:
                tags[index] = OUTSIDE
                unmapped.append(label)
                continue
            tags[index] = ("I-" if prefix.upper() in _INSIDE else "B-") + target
        if all(tag == OUTSIDE for tag in tags.values()):
            raise InputError(
                f"none of the checkpoint's labels ({', '.join(id2label.values())}) maps to "
                f"this dataset's types ({', '.join(types)}); pass --option "
                f"{LABEL_MAP_OPTION}=LABEL:type,..."
            )
        return cls(tags=tags, unmapped=unmapped)


@dataclass
class HfPrediction:
    spans: list[Span]
    model_tokens: list[tuple[int, int]]  # each subword's character span in the document


class HfTagger:
    """A loaded checkpoint; `predict(text)` tags one document."""

    def __init__(self, tokenizer: Any, model: Any, mapping: LabelMapping, path: str):
        self.tokenizer = tokenizer
        self.model = model
        self.mapping = mapping
        self.path = path
        n_special = int(tokenizer.num_special_tokens_to_add(pair=False))
        limits = [
            int(getattr(model.config, "max_position_embeddings", 512) or 512),
            int(getattr(tokenizer, "model_max_length", 512) or 512),
        ]
        # Tokenizers without a configured limit report a huge sentinel; the model's wins then.
        self.max_length = min(limit for limit in limits if limit > 0)
        self.budget = self.max_length - n_special

    @classmethod
    def load(cls, path: str, types: Sequence[str], label_map: str | None = None) -> HfTagger:
        tokenizer, model = load_checkpoint(path, "AutoModelForTokenClassification")
        if not getattr(tokenizer, "is_fast", False):
            raise InputError(
                "the checkpoint's tokenizer has no fast (Rust) version, which word alignment needs",
                path=path,
            )
        id2label = {int(k): str(v) for k, v in model.config.id2label.items()}
        mapping = LabelMapping.build(id2label, types, parse_label_map(label_map))
        return cls(tokenizer, model, mapping, path)

    def label_map_note(self) -> dict[str, Any]:
        id2label = self.model.config.id2label
        return {
            "labels": {str(id2label[i]): tag for i, tag in sorted(self.mapping.tags.items())},
            "unmapped": self.mapping.unmapped,
            "max_length": self.max_length,
        }

    def predict(self, text: str) -> HfPrediction:
        import torch

        offsets = word_offsets(text)
        if not offsets:
            return HfPrediction([], [])
        words = [text[s:e] for s, e in offsets]
        pieces = self.tokenizer(
            words, is_split_into_words=True, add_special_tokens=False, return_offsets_mapping=True
        )
        piece_words = pieces.word_ids()
        counts = [0] * len(words)
        model_tokens: list[tuple[int, int]] = []
        for k, w in enumerate(piece_words):
            if w is None:
                continue
            counts[w] += 1
            a, b = pieces["offset_mapping"][k]
            if b > a:  # offsets are relative to the word
                model_tokens.append((offsets[w][0] + a, offsets[w][0] + b))
        tags = [OUTSIDE] * len(words)
        for start, end in plan_windows(counts, self.budget):
            encoded = self.tokenizer(
                words[start:end],
                is_split_into_words=True,
                truncation=True,
                max_length=self.max_length,
                return_tensors="pt",
            )
            word_ids = encoded.word_ids()
            with torch.inference_mode():
                logits = self.model(
                    input_ids=encoded["input_ids"], attention_mask=encoded["attention_mask"]
                ).logits[0]
            best = logits.argmax(dim=-1).tolist()
            previous: int | None = None
            for position, w in enumerate(word_ids):
                if w is None or w == previous:
                    continue  # special token, or a later subword of the same word
                tags[start + w] = self.mapping.tags.get(int(best[position]), OUTSIDE)
                previous = w
        return HfPrediction(bio_to_spans(tags, offsets), model_tokens)
