"""The TCM-SD syndrome normalization table (`syndrome.txt`, GBK; `syndrome.utf8.csv`, UTF-8).

Each row is ``original, normalized-or-NULL, action, note`` with action one of:
  KEEP       the normalized name (column 2; it may differ from column 1, e.g. a missing 证)
  MERGE      column 2, followed transitively while it names another MERGE row
  DELETE     dropped (no label)
  SUB_MERGE  depends on the record's disease (`lcd_name`): only 脾虚证 has it

Why "transitively while it names another MERGE row": 气机阻滞证 MERGEs into 气滞证, whose own
row is DELETE, yet 气滞证 is one of the 148 labels. So a MERGE chain stops at the first target
that is not itself a MERGE (or SUB_MERGE) row, and that target is the label; only a record
written directly as 气滞证 is deleted. This is the only reading that yields all 148 labels.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from clineval.errors import InputError

ACTIONS = ("KEEP", "MERGE", "DELETE", "SUB_MERGE")

# The table's single SUB_MERGE row carries its rule as a free-text note
# (崩漏（气不摄血证/脾气虚）带下（脾虚湿盛证）); this is that note as data.
SUB_MERGE_RULES: dict[str, dict[str, str]] = {
    "脾虚证": {"崩漏病": "脾气虚证", "带下病": "脾虚湿盛证"},
}


@dataclass(frozen=True)
class NormRule:
    original: str
    target: str | None  # None for NULL
    action: str
    note: str


class NormTable:
    """Raw syndrome name -> normalized label (or None when the benchmark drops it)."""

    def __init__(self, rules: dict[str, NormRule], path: str | Path | None = None):
        self.rules = rules
        self._path = path  # named in errors
        # name -> label (None: dropped); names whose chain ends in a SUB_MERGE row are kept
        # apart, in _by_disease, because their label depends on the record's disease.
        self._resolved: dict[str, str | None] = {}
        self._by_disease: dict[str, str] = {}
        for name in rules:
            end = self._chain_end(name)
            if end in rules and rules[end].action == "SUB_MERGE":
                self._by_disease[name] = end
            elif end == name:  # not a MERGE row: its own KEEP or DELETE decides
                rule = rules[name]
                self._resolved[name] = rule.target if rule.action == "KEEP" else None
            else:
                self._resolved[name] = end

    def _chain_end(self, name: str) -> str | None:
        """Follow MERGE rows from `name`; the first name that is not a MERGE row (None: NULL)."""
        seen: list[str] = []
        target: str | None = name
        while target is not None and target in self.rules and self.rules[target].action == "MERGE":
            if target in seen:
                raise InputError(
                    f"MERGE cycle in the normalization table: {' -> '.join(seen)}", path=self._path
                )
            seen.append(target)
            target = self.rules[target].target
        return target

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.strip() in self.rules

    def names(self) -> list[str]:
        return list(self.rules)

    def normalize(self, raw: str, lcd_name: str | None = None) -> str | None:
        """The normalized label of a raw name in the table; None if the benchmark drops it.

        A name that is not in the table is returned unchanged (stripped): whether it is one of
        the 148 labels is the caller's check, never assumed here.
        """
        name = raw.strip()
        if name not in self.rules:
            return name
        if name in self._by_disease:
            rule = SUB_MERGE_RULES.get(self._by_disease[name], {})
            return rule.get((lcd_name or "").strip())
        return self._resolved[name]


def parse_norm_table(text: str, path: str | Path | None = None) -> NormTable:
    """Parse the table's CSV text (no header, 4 columns)."""
    rules: dict[str, NormRule] = {}
    for lineno, row in enumerate(csv.reader(io.StringIO(text)), start=1):
        if not row or not any(cell.strip() for cell in row):
            continue
        if len(row) < 3:
            raise InputError("expected original,normalized,action[,note]", path=path, line=lineno)
        original, target, action = (cell.strip() for cell in row[:3])
        note = ",".join(row[3:]).strip()
        if action not in ACTIONS:
            raise InputError(
                f"unknown action {action!r} (known: {ACTIONS})", path=path, line=lineno
            )
        if not original:
            raise InputError("empty original syndrome", path=path, line=lineno)
        if original in rules:
            raise InputError(f"duplicate row for {original!r}", path=path, line=lineno)
        rules[original] = NormRule(
            original=original,
            target=None if target in ("", "NULL") else target,
            action=action,
            note=note,
        )
    return NormTable(rules, path=path)


def load_norm_table(path: Path) -> NormTable:
    """Read `syndrome.utf8.csv` (UTF-8) or the original `syndrome.txt` (GBK)."""
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        try:
            text = raw.decode("gbk")
        except UnicodeDecodeError:
            raise InputError("neither UTF-8 nor GBK text", path=path) from None
    return parse_norm_table(text, path=path)
