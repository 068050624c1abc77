"""A SYNTHETIC TCM-SD dataset of the official shape, for tests, demos and perf.

The real splits are not on this machine, so the project generates a stand-in: the same
record format, the same split sizes (43,180 / 5,486 / 5,486 at full scale), the official
per-class split (dev = ceil(0.1 n), test = ceil(0.1 n), train = rest), heavy-tailed class sizes
with at least 11 records a class, and text composed from the real knowledge corpus: each record
mixes some of its syndrome's typical symptoms with symptoms of a similar syndrome, symptoms
common across syndromes and negated findings, so a classifier has real work to do.

Every record has `synthetic: true` and a `synthetic-` id; the files are `*.synthetic.json`; a
README in the output says what it is. Scores on it are fixture scores, never benchmark results.
The same seed (and scale) gives byte-identical files.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from clineval.benchmarks.tcm_sd.dataset import (
    KNOWLEDGE_NAMES,
    NORM_TABLE_NAMES,
    VOCAB_NAME,
    KnowledgeEntry,
    find_file,
    read_knowledge,
    read_vocab,
)
from clineval.benchmarks.tcm_sd.norm import SUB_MERGE_RULES, NormTable, load_norm_table
from clineval.data.checksums import sha256_file
from clineval.datapaths import resolve_data_root
from clineval.errors import InputError
from clineval.rundir import atomic_write_text, make_dir

FULL_TOTAL = 54_152  # records of the release after the class-size filter
FULL_DEV = 5_486  # = test size; train = 43,180
ID_PREFIX = "synthetic-"
# The 18 unambiguous names among the authors' 19 most frequent syndromes (docs/data-sources.md),
# most frequent first; the synthetic class sizes follow this order at the head.
KNOWN_HEAD = (
    *("气虚血瘀证", "湿热下注证", "气滞血瘀证", "风痰瘀阻证", "肝胃郁热证", "痰湿蕴肺证"),
    *("肝肾亏虚证", "热毒蕴结证", "脾肾两虚证", "气阴两虚证", "湿热瘀阻证", "肾虚证"),
    *("肝胃不和证", "风寒袭肺证", "脾胃阳虚证", "湿热蕴结证", "阳虚水泛证", "痰瘀痹阻证"),
)

_SPLIT = re.compile(r"[，,。；;、：:\n\s]+")
_LEAD = re.compile(r"^(或见|或有|或|兼有|兼见|伴有|伴|甚则|甚至|并见|可见|症见|常见|以|及|和)")
_BAD = re.compile(r"[0-9A-Za-z《》（）()“”\"]|证|指|常见|治|方|中医|西医|疾病|患者|本|医学|病名")
_TONGUE = re.compile(r"[舌苔脉]")


def _phrases(text: str) -> list[str]:
    out = []
    for part in _SPLIT.split(text):
        part = _LEAD.sub("", part.strip()).removesuffix("等")
        if 2 <= len(part) <= 10 and not _BAD.search(part):
            out.append(part)
    return out


def _symptoms(entry: KnowledgeEntry) -> list[str]:
    """Typical symptoms of a syndrome, most specific source first, without repeats."""
    disease_text = "。".join(
        s for s in entry.common_disease.split("。") if "治宜" not in s and "方用" not in s
    )
    seen: dict[str, None] = {}
    for text in (entry.typical_performance, entry.definition, disease_text):
        for p in _phrases(text):
            seen.setdefault(p, None)
    return list(seen)


def _diseases(entry: KnowledgeEntry) -> list[str]:
    names = re.findall(r"(?:^|\n)\s*\d+[、.．]\s*([^\n]{2,12})", entry.common_disease)
    return [n.strip() for n in names if n.strip()]


@dataclass(frozen=True)
class SplitSizes:
    labels: list[str]  # in size order, largest first
    n: list[int]
    dev: list[int]  # = test

    @property
    def train(self) -> list[int]:
        return [n - 2 * d for n, d in zip(self.n, self.dev, strict=True)]


def class_sizes(vocab: list[str], rng: random.Random, scale: float = 1.0) -> SplitSizes:
    """Heavy-tailed per-class sizes whose official per-class split hits the target totals.

    Choose each class's dev size d (>= 2) first, then n in [10d - 9, 10d] so ceil(n/10) = d:
    the dev and test totals are then exact and the total is reached through the remainders.
    """
    k = len(vocab)
    dev_total = max(2 * k, round(FULL_DEV * scale))
    total = round(FULL_TOTAL * scale) if scale != 1.0 else FULL_TOTAL
    total = min(max(total, 10 * dev_total - 9 * k), 10 * dev_total)
    head = [label for label in KNOWN_HEAD if label in vocab]
    rest = [label for label in vocab if label not in head]
    rng.shuffle(rest)
    order = head + rest
    # Zipf-Mandelbrot shape: a few very large classes, a long tail down to the 11-record floor.
    weights = 1.0 / (np.arange(k) + 6.0) ** 2.0 - 1.0 / (k + 5.0) ** 2.0
    extra = dev_total - 2 * k
    share = weights / weights.sum() * extra
    dev = np.floor(share).astype(int)
    for i in np.argsort(-(share - dev), kind="stable")[: extra - int(dev.sum())]:
        dev[i] += 1
    dev += 2
    remainder = 10 * dev_total - total  # sum of (10 d - n) over classes, each in [0, 9]
    r = [rng.randrange(10) for _ in range(k)]
    while sum(r) > remainder:
        i = rng.randrange(k)
        if r[i] > 0:
            r[i] -= 1
    while sum(r) < remainder:
        i = rng.randrange(k)
        if r[i] < 9:
            r[i] += 1
    n = [int(10 * d - ri) for d, ri in zip(dev, r, strict=True)]
    return SplitSizes(labels=order, n=n, dev=[int(d) for d in dev])


class _Composer:
    """Builds the three text fields of one record of a syndrome."""

    def __init__(self, vocab: list[str], knowledge: dict[str, KnowledgeEntry], rng: random.Random):
        self.rng = rng
        self.own: dict[str, list[str]] = {}
        self.own_tongue: dict[str, list[str]] = {}
        for label in vocab:
            phrases = _symptoms(knowledge[label]) if label in knowledge else []
            self.own[label] = [p for p in phrases if not _TONGUE.search(p)] or ["不适"]
            self.own_tongue[label] = [p for p in phrases if _TONGUE.search(p)]
        counts: Counter[str] = Counter()
        for entry in knowledge.values():
            counts.update(_symptoms(entry))  # already unique; a set would vary by hash seed
        common = [p for p, c in counts.most_common(400) if c >= 3]
        self.shared = [p for p in common if not _TONGUE.search(p)] or ["乏力"]
        self.shared_tongue = [p for p in common if _TONGUE.search(p)] or ["舌淡红", "脉弦"]
        self.negatable = [p for p in self.shared if len(p) <= 4] or self.shared
        # Similar syndromes (shared symptoms or name characters) supply confusing symptoms.
        sets = {label: set(self.own[label]) for label in vocab}
        self.similar: dict[str, list[str]] = {}
        for label in vocab:
            scored = sorted(
                (
                    len(sets[label] & sets[o]) + 0.5 * len(set(label[:-1]) & set(o[:-1])),
                    o,
                )
                for o in vocab
                if o != label
            )
            self.similar[label] = [o for _, o in scored[-5:]]
        self.diseases: dict[str, list[str]] = {
            label: _diseases(knowledge[label]) if label in knowledge else [] for label in vocab
        }

    def _pick(self, items: list[str], k: int) -> list[str]:
        return self.rng.sample(items, min(k, len(items)))

    def compose(self, label: str) -> tuple[str, str, str, str]:
        rng = self.rng
        own = self._pick(self.own[label], rng.randint(1, 3))
        sibling = rng.choice(self.similar[label])
        confusing = self._pick(self.own[sibling], rng.randint(1, 3)) if rng.random() < 0.8 else []
        shared = self._pick(self.shared, rng.randint(1, 3))
        negated = self._pick(self.negatable, rng.randint(0, 3))
        symptoms = own + confusing + shared
        rng.shuffle(symptoms)
        lead = symptoms[0]
        unit = rng.choice(("天", "周", "月", "年"))
        chief = f"{rng.choice(('反复', '', ''))}{lead}{rng.randint(1, 12)}{unit}"
        if rng.random() < 0.4:
            chief += f"，加重{rng.randint(1, 7)}天"
        chief += "。"
        negation = "，".join(f"无{p}" for p in negated)
        cause = rng.choice(("无明显诱因下", "劳累后", "受凉后", ""))
        description = (
            f"患者{rng.randint(1, 12)}{unit}前{cause}"
            f"出现{'，'.join(symptoms)}"
            + (f"，{negation}" if negation else "")
            + f"。{rng.choice(('今为求进一步诊治收入院。', '遂来我院就诊。', '门诊拟收住入院。'))}"
        )
        tongue_pool = self.own_tongue[label] if rng.random() < 0.5 else []
        tongue = self._pick(tongue_pool or self.shared_tongue, rng.randint(1, 2))
        detection = f"神志清晰，精神{rng.choice(('尚可', '欠佳', '一般'))}，{'，'.join(tongue)}。"
        diseases = self.diseases[label]
        disease = rng.choice(diseases) if diseases else "未分类"
        return chief, description, detection, disease


def _raw_names(norm: NormTable | None, vocab: list[str]) -> dict[str, list[str]]:
    """label -> raw names the normalization table maps to it (so raw `syndrome` varies)."""
    out: dict[str, list[str]] = {label: [] for label in vocab}
    if norm is None:
        return out
    for name in norm.names():
        target = norm.normalize(name)
        if target in out and target != name:
            out[target].append(name)
    return out


def generate(
    vocab: list[str],
    knowledge: dict[str, KnowledgeEntry],
    seed: int = 0,
    scale: float = 1.0,
    norm: NormTable | None = None,
    shared_dev_ids: int = 19,
) -> dict[str, list[dict[str, object]]]:
    """The synthetic splits as lists of official-format JSON objects (plus `synthetic`)."""
    missing = [label for label in vocab if label not in knowledge]
    if missing:
        raise InputError(f"knowledge corpus lacks {len(missing)} labels, e.g. {missing[0]!r}")
    rng = random.Random(seed)
    sizes = class_sizes(vocab, rng, scale)
    composer = _Composer(vocab, knowledge, rng)
    raw_names = _raw_names(norm, vocab)
    # Labels the table would drop if a doctor wrote them verbatim (气滞证 is DELETE; its records
    # come from 气机阻滞证): such a record's raw syndrome is always another name.
    not_raw = {label for label in vocab if norm is not None and norm.normalize(label) != label}
    by_disease = {
        target: (raw, disease)
        for raw, rule in SUB_MERGE_RULES.items()
        for disease, target in rule.items()
        if norm is not None and raw in norm and target in vocab
    }
    disease_ids: dict[str, str] = {}
    splits: dict[str, list[dict[str, object]]] = {"train": [], "dev": [], "test": []}
    serial = 0
    for label, n, d in zip(sizes.labels, sizes.n, sizes.dev, strict=True):
        per_class = []
        for _ in range(n):
            serial += 1
            chief, description, detection, disease = composer.compose(label)
            raw = label
            if raw_names[label] and (label in not_raw or rng.random() < 0.1):
                raw = rng.choice(raw_names[label])
            elif label in by_disease and rng.random() < 0.1:
                # the table's SUB_MERGE: 脾虚证 in 崩漏病 / 带下病 records
                raw, disease = by_disease[label]
            lcd_id = disease_ids.setdefault(disease, f"SYN{len(disease_ids) + 1:04d}")
            per_class.append(
                {
                    "user_id": f"{ID_PREFIX}{serial:06d}",
                    "lcd_id": lcd_id,
                    "lcd_name": disease,
                    "syndrome": raw,
                    "chief_complaint": chief,
                    "description": description,
                    "detection": detection,
                    "norm_syndrome": label,
                    "synthetic": True,
                }
            )
        # The official split, per class in file order: train = rest, then dev, then test.
        n_train = n - 2 * d
        splits["train"].extend(per_class[:n_train])
        splits["dev"].extend(per_class[n_train : n_train + d])
        splits["test"].extend(per_class[n_train + d :])
    # Like the release (19 user_ids shared by train and dev): a few dev rows are exact copies
    # of train rows of the same class, so --dedupe and the duplicate report have work to do.
    by_label: dict[str, list[int]] = {}
    for i, row in enumerate(splits["train"]):
        by_label.setdefault(str(row["norm_syndrome"]), []).append(i)
    dev_positions = rng.sample(range(len(splits["dev"])), min(shared_dev_ids, len(splits["dev"])))
    for pos in dev_positions:
        label = str(splits["dev"][pos]["norm_syndrome"])
        splits["dev"][pos] = dict(splits["train"][rng.choice(by_label[label])])
    for rows in splits.values():
        rng.shuffle(rows)
    return splits


def _readme(seed: int, scale: float, counts: dict[str, int], knowledge_sha: str) -> str:
    return (
        "# SYNTHETIC TCM-SD fixture (not the benchmark)\n\n"
        "Generated by `clineval data synth tcm-sd`. Every record is synthetic "
        f"(`synthetic: true`, ids `{ID_PREFIX}*`). Scores on it are fixture scores, never TCM-SD "
        "results.\n\n"
        f"- seed: {seed}\n- scale: {scale}\n"
        f"- records: train {counts['train']}, dev {counts['dev']}, test {counts['test']}\n"
        f"- text composed from the TCM-SD knowledge corpus (sha256 {knowledge_sha}), "
        "a derivative of the ZY-BERT release: CC BY-NC-SA 4.0 (non-commercial, attribution, "
        "share-alike). Cite Ren et al., TCM-SD, CCL 2022.\n"
        "- `syndrome_vocab.txt` is the benchmark's 148-label list in its original order.\n"
    )


def write_synthetic(
    out: Path, seed: int = 0, data_dir: str | Path | None = None, scale: float = 1.0
) -> list[Path]:
    """Write `<out>/tcm-sd/{train,dev,test}.synthetic.json` (+ vocab, README); return paths.

    `out` then works as a `--data-dir`. `scale` < 1 makes a smaller fixture (tests); each class
    keeps at least 11 records.
    """
    if not 0 < scale <= 1:
        raise InputError(f"scale must be in (0, 1], got {scale}")
    root = resolve_data_root(data_dir, required=True)
    assert root is not None
    vocab_path = find_file([root], (VOCAB_NAME,))
    knowledge_path = find_file([root], KNOWLEDGE_NAMES)
    if vocab_path is None or knowledge_path is None:
        raise InputError(
            f"need {VOCAB_NAME} and the knowledge corpus ({' or '.join(KNOWLEDGE_NAMES)}) "
            "under the data root's tcm-sd/ folder",
            path=root,
        )
    norm_path = find_file([root], NORM_TABLE_NAMES)
    vocab = read_vocab(vocab_path)
    splits = generate(
        vocab,
        read_knowledge(knowledge_path),
        seed=seed,
        scale=scale,
        norm=load_norm_table(norm_path) if norm_path else None,
    )
    folder = Path(out) / "tcm-sd"
    make_dir(folder)
    written: list[Path] = []
    for split, rows in splits.items():
        path = folder / f"{split}.synthetic.json"
        # the one writer (clineval.rundir): a place that cannot be written is one line
        atomic_write_text(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
        written.append(path)
    vocab_out = folder / VOCAB_NAME
    atomic_write_text(vocab_out, "".join(f"{label}\r\n" for label in vocab))
    written.append(vocab_out)
    knowledge_sha = sha256_file(knowledge_path)
    readme = folder / "SYNTHETIC_README.md"
    counts = {split: len(rows) for split, rows in splits.items()}
    atomic_write_text(readme, _readme(seed, scale, counts, knowledge_sha))
    written.append(readme)
    return written
