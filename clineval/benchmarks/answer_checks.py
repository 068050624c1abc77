"""Answers a judge should not be trusted to grade: cut at max_tokens, empty, or repeating.

A small model that loops fills its reply cap with the same words, and a judge (the same
small model, self-judged) may still find criteria "met" in it: a score over such answers
says nothing of the model's medicine. The judging kit counts them in every judged task's
results (`answer_checks`), the end of a run prints them and the report shows them:

- `cut_at_max_tokens`: the reply stopped at its token cap (`finish_reason` "length");
- `empty`: the answer is empty or white space only;
- `repeating`: at least `MIN_CHARS` characters, and under half of its `GRAM`-character
  sequences are distinct (a text that loops repeats most of them; prose, English or
  Chinese, repeats almost none).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from clineval.judge.verdict import AnswerRecord

GRAM = 8  # characters in a sequence
MIN_CHARS = 64  # shorter answers are never called repeating
MAX_DISTINCT_SHARE = 0.5  # distinct sequences / all sequences under this: repeating
CHECKS_KEY = "answer_checks"  # the counts, in a judged task's results
NOTE_KEY = "answers_note"  # one sentence, when any answer is flagged


def is_repeating(text: str) -> bool:
    """Whether `text` loops (module docstring)."""
    if len(text) < MIN_CHARS:
        return False
    grams = [text[i : i + GRAM] for i in range(len(text) - GRAM + 1)]
    return len(set(grams)) / len(grams) < MAX_DISTINCT_SHARE


def answer_checks(records: Iterable[AnswerRecord | None]) -> dict[str, Any]:
    """The counts over the answers there are (an item without one is not counted here)."""
    counts = {"answers": 0, "cut_at_max_tokens": 0, "empty": 0, "repeating": 0}
    for record in records:
        if record is None or record.text is None:
            continue
        counts["answers"] += 1
        counts["cut_at_max_tokens"] += record.finish_reason == "length"
        counts["empty"] += not record.text.strip()
        counts["repeating"] += is_repeating(record.text)
    return counts


def answers_note(counts: dict[str, Any]) -> str | None:
    """One sentence naming the flagged answers, or None when there are none."""
    parts = [
        f"{counts[key]:,} {what}"
        for key, what in (
            ("cut_at_max_tokens", 'cut at max_tokens (finish_reason "length")'),
            ("empty", "empty"),
            ("repeating", "repeating themselves"),
        )
        if counts.get(key)
    ]
    if not parts:
        return None
    return (
        f"of {counts['answers']:,} answers, " + ", ".join(parts) + ": the judge graded them as "
        "they are; raise --max-tokens or use a stronger model before reading these scores"
    )


def add_answer_checks(metrics: dict[str, Any], records: Iterable[AnswerRecord | None]) -> None:
    """`answer_checks` (the counts) and, when any answer is flagged, `answers_note` into a
    judged task's results."""
    counts = answer_checks(records)
    metrics[CHECKS_KEY] = counts
    note = answers_note(counts)
    if note is not None:
        metrics[NOTE_KEY] = note
