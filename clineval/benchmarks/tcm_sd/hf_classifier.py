"""`hf:PATH` for TCM-SD: a local fine-tuned sequence-classification checkpoint, offline, CPU.

Input is the benchmark's sentence pair `[CLS] chief_complaint [SEP] description [SEP]`
(the tokenizer builds it from text / text_pair), truncated longest-first to `max_length`: the
authors' `run_tcm.py` input (`encode_plus(chief_complaint, description)`; `detection` is read
there but never used). Their script defaults to `--max_seq_length 128`, clineval to
`tcm.max_length=512` (capped by the checkpoint's position window); `--option
tcm.max_length=128` is the authors' setting. The length used is recorded in the manifest.
The checkpoint's `id2label` must name exactly the 148 labels (any order: predictions go
through the names, never through the class index), otherwise it was trained for something
else and we refuse to score it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from clineval.benchmarks.tcm_sd.dataset import TcmRecord
from clineval.errors import InputError
from clineval.models.hf_checkpoint import load_checkpoint


def check_id2label(id2label: dict[Any, Any], labels: Sequence[str], path: Path) -> list[str]:
    """The label name of each class index 0..K-1; InputError on any mismatch with `labels`."""
    try:
        names = {int(k): str(v) for k, v in id2label.items()}
    except (TypeError, ValueError):
        raise InputError(
            "config id2label keys are not class indices", path=path / "config.json"
        ) from None
    if sorted(names) != list(range(len(names))):
        raise InputError("config id2label is not indexed 0..K-1", path=path / "config.json")
    ordered = [names[i] for i in range(len(names))]
    expected = set(labels)
    unknown = [n for n in ordered if n not in expected]
    absent = [label for label in labels if label not in set(ordered)]
    if unknown or absent or len(ordered) != len(labels):
        detail = []
        if unknown:
            detail.append(f"{len(unknown)} labels not among the {len(labels)}, e.g. {unknown[0]!r}")
        if absent:
            detail.append(f"{len(absent)} of the {len(labels)} missing, e.g. {absent[0]!r}")
        if len(ordered) != len(labels):
            detail.append(f"{len(ordered)} classes instead of {len(labels)}")
        raise InputError(
            "the checkpoint's id2label does not match the TCM-SD labels: " + "; ".join(detail),
            path=path / "config.json",
        )
    return ordered


# The authors' run_tcm.py default (--max_seq_length 128); clineval's default is the option's.
AUTHORS_MAX_LENGTH = 128


def longest_first_keep(first: int, second: int, budget: int) -> tuple[int, int]:
    """How many tokens of each part survive transformers 2.3.0's `longest_first` cut (the
    library the TCM-SD authors ran): one token at a time from the end of the longer part, from
    the second part when both are equally long, until both fit `budget` together."""
    budget = max(budget, 0)
    while first + second > budget:
        if first > second:
            first -= 1
        else:
            second -= 1
    return first, second


class HFSyndromeClassifier:
    def __init__(self, path: Path, labels: Sequence[str], max_length: int = 512):
        self.tokenizer, self.model = load_checkpoint(path, "AutoModelForSequenceClassification")
        import torch  # present: load_checkpoint checked

        self.path = path
        self.id_to_name = check_id2label(dict(self.model.config.id2label), labels, path)
        window = getattr(self.model.config, "max_position_embeddings", max_length) or max_length
        self.requested_max_length = max_length
        self.max_length = min(max_length, int(window))
        self._torch = torch

    def describe(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "architecture": type(self.model).__name__,
            # the tokens each record was cut to, and what was asked (the window may cap it)
            "max_length": self.max_length,
            "max_length_requested": self.requested_max_length,
            "authors_max_length": AUTHORS_MAX_LENGTH,
            "input": "pair (chief_complaint, description), cut longest-first as transformers "
            "2.3.0 cuts it (ties from the description)",
            "num_labels": len(self.id_to_name),
        }

    def encode(self, records: Sequence[TcmRecord]) -> Any:
        """The model inputs of a batch, each record cut as the authors' transformers 2.3.0 cut
        it (`longest_first_keep`), padded to the batch's longest (padding is masked, so a
        record's logits equal those of the authors' pad-to-max_length input).

        Current tokenizers cut an odd budget between two long parts the other way round (the
        first part loses the extra token), so the library's truncation is not used: the pair
        is encoded whole and each part's tail dropped by position (`sequence_ids`)."""
        encoded = self.tokenizer(
            [r.chief_complaint for r in records],
            [r.description for r in records],
            truncation=False,
            verbose=False,  # whole records exceed the window before they are cut here
        )
        budget = self.max_length - self.tokenizer.num_special_tokens_to_add(pair=True)
        rows = []
        for i in range(len(records)):
            parts = encoded.sequence_ids(i)
            keep = longest_first_keep(parts.count(0), parts.count(1), budget)
            seen = [0, 0]
            chosen = []
            for position, part in enumerate(parts):
                if part is not None:
                    seen[part] += 1
                    if seen[part] > keep[part]:
                        continue
                chosen.append(position)
            rows.append({k: [encoded[k][i][j] for j in chosen] for k in encoded})
        return self.tokenizer.pad(rows, padding=True, return_tensors="pt")

    def predict(self, records: Sequence[TcmRecord]) -> list[str | None]:
        if not records:
            return []
        encoded = self.encode(records)
        with self._torch.inference_mode():
            logits = self.model(**encoded).logits
        return [self.id_to_name[int(i)] for i in logits.argmax(dim=-1).tolist()]
