"""TCM-SD zero-shot prompt for chat models, and the parser that reads a label out of the reply.

The parser accepts what careful graders accept and nothing more:
  * full-width punctuation and spaces (NFKC), quotes, brackets, markdown, `<think>` blocks;
  * a bare label, optionally after a marker such as 答案：/证型：/Answer: (the LAST marked
    answer wins, so a model that reasons first and answers last is read right), or alone on
    the first line of a reply that explains itself below;
  * a name from the benchmark's own normalization table (风痰阻络证 -> 风痰瘀阻证; 脾虚证 by
    the record's disease), and a label missing its final 证 when that is the whole answer;
  * a label inside prose, when the prose names exactly ONE label.
It never guesses: a reply naming two different labels ("不是A，而是B"), a name the table
deletes, or no label at all is invalid, reported with a reason, and scored as wrong.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from clineval.benchmarks.tcm_sd.dataset import TcmRecord
from clineval.benchmarks.tcm_sd.norm import NormTable

TEMPLATE_VERSION = "tcm-sd-zero-shot-v1"
FIELD_TITLES = {"chief_complaint": "主诉", "description": "现病史", "detection": "四诊摘要"}
SYSTEM_PROMPT = "你是一名经验丰富的中医临床医生，擅长辨证论治。"


def build_messages(
    record: TcmRecord, labels: Sequence[str], fields: Sequence[str]
) -> tuple[tuple[str, str], ...]:
    """(role, content) pairs: the candidate labels, the record, one-label answer format."""
    parts = [f"{FIELD_TITLES.get(f, f)}：{getattr(record, f)}" for f in fields]
    user = (
        "请根据下面的病历进行中医辨证，从候选证型中选出最符合的一个。\n"
        f"候选证型（共{len(labels)}个）：{'、'.join(labels)}\n\n"
        "病历：\n" + "\n".join(parts) + "\n\n"
        "只回答一个证型名称，必须与候选证型中的写法完全一致，不要解释。\n证型："
    )
    return (("system", SYSTEM_PROMPT), ("user", user))


@dataclass(frozen=True)
class ParsedAnswer:
    label: str | None  # one of the labels, or None (invalid)
    status: str  # exact | normalized | found | invalid
    reason: str = ""


_THINK = re.compile(r"<think>.*?(</think>|$)", re.DOTALL | re.IGNORECASE)
_DECOR = re.compile(r"[\"'`*#_~|<>\[\](){}「」『』【】〔〕〖〗《》〈〉“”‘’]")
_MARKER = re.compile(
    r"(?:最终答案|答案|证型|辨证结果|辨证|中医证型|诊断|结论|final answer|answer|syndrome)"
    r"\s*(?:是|为)?\s*[:：=]\s*",
    re.IGNORECASE,
)
_EDGE = " \t\r\n.,;:!?。，；：！？、…-"


def _clean(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    text = _THINK.sub(" ", text)
    return _DECOR.sub(" ", text)


class AnswerParser:
    """Built once per run: the label set, the table's names and one search pattern."""

    def __init__(self, labels: Sequence[str], norm: NormTable | None = None):
        self.labels = list(labels)
        self.label_set = set(labels)
        self.norm = norm
        names = set(self.labels) | (set(norm.names()) if norm else set())
        # Longest first, so 脾肾阳虚证 wins over any shorter name inside it at the same place.
        ordered = sorted(names, key=lambda s: (-len(s), s))
        self._names = re.compile("|".join(re.escape(n) for n in ordered))

    def _resolve(self, name: str, lcd_name: str | None) -> tuple[str | None, str]:
        """A whole candidate string -> (label, status) or (None, reason)."""
        name = name.strip(_EDGE)
        if name in self.label_set:
            return name, "exact"
        if self.norm is not None and name in self.norm:
            target = self.norm.normalize(name, lcd_name)
            if target in self.label_set:
                return target, "normalized"
            return None, f"the normalization table drops {name!r}"
        if name and not name.endswith("证") and name + "证" in self.label_set:
            return name + "证", "normalized"
        return None, ""

    def _search(self, text: str, lcd_name: str | None) -> ParsedAnswer:
        found: dict[str, None] = {}
        dropped: list[str] = []
        for match in self._names.finditer(text):
            label, _ = self._resolve(match.group(0), lcd_name)
            if label is None:
                dropped.append(match.group(0))
            else:
                found.setdefault(label, None)
        if len(found) == 1 and not dropped:
            return ParsedAnswer(next(iter(found)), "found")
        if len(found) + len(dropped) > 1:
            names = list(found) + dropped
            return ParsedAnswer(None, "invalid", f"names {len(names)} syndromes: {names[:4]}")
        if dropped:
            return ParsedAnswer(None, "invalid", f"the normalization table drops {dropped[0]!r}")
        return ParsedAnswer(None, "invalid", "no syndrome label found")

    def parse(self, text: str | None, lcd_name: str | None = None) -> ParsedAnswer:
        if text is None or not text.strip():
            return ParsedAnswer(None, "invalid", "empty answer")
        cleaned = _clean(text)
        whole, status = self._resolve(cleaned, lcd_name)
        if whole is not None:
            return ParsedAnswer(whole, status)
        markers = list(_MARKER.finditer(cleaned))
        if markers:
            tail = cleaned[markers[-1].end() :]
            line = tail.strip(_EDGE).splitlines()[0] if tail.strip(_EDGE) else ""
            label, status = self._resolve(line, lcd_name)
            if label is not None:
                return ParsedAnswer(label, status)
            answer = self._search(line, lcd_name)
            if answer.label is not None or "names" in answer.reason:
                return answer
        # "LABEL" on a line of its own, then an explanation (which may name other labels)
        first = next((ln for ln in cleaned.splitlines() if ln.strip(_EDGE)), "")
        label, status = self._resolve(first, lcd_name)
        if label is not None:
            return ParsedAnswer(label, status)
        return self._search(cleaned, lcd_name)
