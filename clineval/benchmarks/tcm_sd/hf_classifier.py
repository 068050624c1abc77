"""`hf:PATH` for TCM-SD: a local fine-tuned sequence-classification checkpoint, offline, CPU.

Input is the benchmark's sentence pair `[CLS] chief_complaint [SEP] description [SEP]`
(the tokenizer builds it from text / text_pair), truncated longest-first to `max_length`.
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


class HFSyndromeClassifier:
    def __init__(self, path: Path, labels: Sequence[str], max_length: int = 512):
        self.tokenizer, self.model = load_checkpoint(path, "AutoModelForSequenceClassification")
        import torch  # present: load_checkpoint checked

        self.path = path
        self.id_to_name = check_id2label(dict(self.model.config.id2label), labels, path)
        window = getattr(self.model.config, "max_position_embeddings", max_length) or max_length
        self.max_length = min(max_length, int(window))
        self._torch = torch

    def describe(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "architecture": type(self.model).__name__,
            "max_length": self.max_length,
            "num_labels": len(self.id_to_name),
        }

    def predict(self, records: Sequence[TcmRecord]) -> list[str | None]:
        if not records:
            return []
        encoded = self.tokenizer(
            [r.chief_complaint for r in records],
            [r.description for r in records],
            truncation="longest_first",
            max_length=self.max_length,
            padding=True,
            return_tensors="pt",
        )
        with self._torch.inference_mode():
            logits = self.model(**encoded).logits
        return [self.id_to_name[int(i)] for i in logits.argmax(dim=-1).tolist()]
