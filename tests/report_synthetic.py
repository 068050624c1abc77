"""Synthetic run directories for the report's tests and benchmark (named and flagged synthetic).

They have the shape the task families write (results.json metrics, samples.jsonl rows) at any
size, with optional hostile strings (script tags, event handlers, `</script>`) in every field
that in a real run comes from a model, a dataset or a user. The metrics are computed from the
generated samples, so a report of them is self-consistent; they measure nothing real.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np

from clineval.reportkit import statistics as st
from clineval.rundir import MANIFEST, RESULTS, SAMPLES, write_json, write_jsonl

# Each would set window.__pwned or change the title if it ever ran.
HOSTILE = (
    "<script>window.__pwned=1;document.title='pwned'</script>",
    "<img src=x onerror=\"window.__pwned=2;document.title='pwned'\">",
    "</script><script>window.__pwned=3</script>",
    '<svg onload="window.__pwned=4"></svg>',
    "\u2028<!-- x -->&amp;",
)
_CJK = "患者发热咳嗽头痛乏力舌红苔黄脉数胸闷心悸失眠腹痛腹泻口干口苦恶心呕吐纳差便秘尿频"


def _manifest(task: str, model: str, seed: int, n: int) -> dict[str, Any]:
    return {
        "clineval_version": "synthetic",
        "git_revision": None,
        "config": {"tasks": [task], "model": model, "seed": seed, "data_dir": "synthetic"},
        "seed": seed,
        "status": "finished",
        "started": "2026-01-01T00:00:00+0000",
        "tasks": {
            task: {
                "synthetic": True,
                "files": {"synthetic-data.jsonl": {"sha256": "0" * 64, "records": n}},
            }
        },
    }


def _cjk(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(_CJK) for _ in range(n))


def _write(out: Path, task: str, model: str, seed: int, metrics: dict[str, Any], rows: list[Any]):
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / MANIFEST, _manifest(task, model, seed, len(rows)))
    write_json(out / RESULTS, {task: metrics})
    write_jsonl(out / SAMPLES, ({"task": task, **r} for r in rows))
    return out


def tcm_run(
    out: Path, n: int = 5486, seed: int = 0, hostile: bool = False, skill: float = 0.6
) -> Path:
    """A TCM-SD-shaped run over 148 synthetic labels with heavy-tailed class sizes."""
    rng = random.Random(seed)
    np_rng = np.random.default_rng(seed)
    labels = [f"合成证{i:03d}" for i in range(148)]
    rows: list[dict[str, Any]] = []
    if hostile:
        labels[5] = HOSTILE[0]
    weights = 1.0 / np.arange(1, 149) ** 1.1
    gold_idx = np_rng.choice(148, size=n, p=weights / weights.sum())
    for i, g in enumerate(gold_idx):
        r = rng.random()
        if r < 0.02:
            pred, raw, valid = None, "无法判断 " + (rng.choice(HOSTILE) if hostile else ""), False
        elif r < 0.02 + skill * (1 - g / 300):
            pred, raw, valid = labels[g], f"证型：{labels[g]}", True
        else:
            p = int(np_rng.choice(148, p=weights / weights.sum()))
            pred, raw, valid = labels[p], f"证型：{labels[p]}", True
        rows.append(
            {
                "id": f"synthetic-{i:05d}",
                "gold": labels[g],
                "pred": pred,
                "raw_output": raw,
                "valid": valid,
                "correct": pred == labels[g],
            }
        )
    ids = [r["id"] for r in rows]
    gold = [r["gold"] for r in rows]
    pred = [r["pred"] for r in rows]
    f1_stat = st.macro_f1_statistic(ids, gold, pred, labels)
    acc_stat = st.mean_statistic(ids, [float(r["correct"]) for r in rows])
    per_class: dict[str, Any] = {}
    sums = f1_stat.counts.total()
    train = {lab: int(5000 * w) + 11 for lab, w in zip(labels, weights, strict=True)}
    for c, lab in enumerate(labels):
        tp, fp, fn = sums[c], sums[148 + c], sums[296 + c]
        prec = float(tp / (tp + fp)) if tp + fp else 0.0
        rc = float(tp / (tp + fn)) if tp + fn else 0.0
        per_class[lab] = {
            "precision": prec,
            "recall": rc,
            "f1": 2 * prec * rc / (prec + rc) if prec + rc else 0.0,
            "support": int(tp + fn),
            "train_count": train[lab],
        }
    confusions: dict[tuple[str, str], int] = {}
    for row in rows:
        if row["pred"] is not None and row["pred"] != row["gold"]:
            key = (str(row["gold"]), str(row["pred"]))
            confusions[key] = confusions.get(key, 0) + 1
    metrics = {
        "macro_f1": f1_stat.point(),
        "accuracy": acc_stat.point(),
        "invalid_rate": sum(not r["valid"] for r in rows) / n,
        "n": n,
        "macro_f1_ci": list(st.bootstrap_interval(f1_stat, 200, seed)),
        "accuracy_ci": list(st.bootstrap_interval(acc_stat, 200, seed)),
        "per_class": per_class,
        "confusions": [
            {"gold": g, "pred": p, "count": c}
            for (g, p), c in sorted(confusions.items(), key=lambda kv: -kv[1])[:30]
        ],
        "fixture": True,
    }
    return _write(out, "tcm-sd", "baseline:synthetic", seed, metrics, rows)


def ner_run(out: Path, n_docs: int = 100, seed: int = 0, hostile: bool = False) -> Path:
    """An NER-shaped run (task ner:ncbi, SYNTHETIC data): English-like text, gold and perturbed
    spans."""
    rng = random.Random(seed)
    words = [
        "the",
        "patient",
        "with",
        "acute",
        "renal",
        "failure",
        "received",
        "cisplatin",
        "and",
        "developed",
        "severe",
    ]
    types = ("condition", "drug")
    rows = []
    for d in range(n_docs):
        tokens = [rng.choice(words) for _ in range(rng.randint(40, 120))]
        if hostile and d < len(HOSTILE):
            tokens.insert(5, HOSTILE[d])
        text = " ".join(tokens)
        starts = [0]
        for t in tokens[:-1]:
            starts.append(starts[-1] + len(t) + 1)
        gold, pred = [], []
        for i in range(0, len(tokens) - 2, rng.randint(6, 10)):
            s, e, t = starts[i], starts[i] + len(tokens[i]), rng.choice(types)
            gold.append([s, e, t])
            r = rng.random()
            if r < 0.6:
                pred.append([s, e, t])
            elif r < 0.7:
                pred.append([s, starts[i + 1] + len(tokens[i + 1]), t])  # boundary
            elif r < 0.8:
                pred.append([s, e, types[1 - types.index(t)]])  # type
            elif r < 0.9:
                pred.append([starts[i + 2], starts[i + 2] + len(tokens[i + 2]), t])  # fp + miss
        rows.append({"id": f"synthetic-doc-{d:04d}", "text": text, "gold": gold, "pred": pred})
    per_type = {
        t: {
            scheme: {
                "precision": 0.7 + 0.05 * j,
                "recall": 0.65 + 0.05 * j,
                "f1": 0.67 + 0.05 * j,
                "support": 100 + j,
            }
            for j, scheme in enumerate(("token", "partial", "exact"))
        }
        for t in types
    }
    metrics = {
        "token_macro_f1": 0.7123,
        "span_partial_f1": 0.7456,
        "span_exact_f1": 0.6012,
        "per_type": per_type,
        "fixture": True,
    }
    return _write(out, "ner:ncbi", "baseline:synthetic", seed, metrics, rows)


def cc_run(
    out: Path,
    n_cases: int = 900,
    seed: int = 0,
    hostile: bool = False,
    answer_chars: int = 500,
    explanation_chars: int = 40,
) -> Path:
    """A ClinConsensus-shaped run: n_cases x 30 judge verdicts with Chinese text."""
    rng = random.Random(seed)
    n_crit = 30
    difficulties = ("low", "medium", "high")
    subjects = ("心内科", "呼吸科", "消化科", "儿科", "中医科")
    tasks = ("诊断", "治疗", "用药咨询", "健康教育")
    roles = ("医生", "患者", "家属")
    rows: list[dict[str, Any]] = []
    s_all = []
    met_total = judged_total = errors_total = 0
    for c in range(n_cases):
        ability = rng.random()
        verdicts = []
        s = 0
        for j in range(n_crit):
            r = rng.random()
            met: bool | None = None if r < 0.005 else r < 0.3 + 0.6 * ability
            s += met is True
            errors_total += met is None
            judged_total += met is not None
            met_total += met is True
            explanation = _cjk(rng, explanation_chars)
            if hostile and c == 0 and j < len(HOSTILE):
                explanation = HOSTILE[j] + explanation
            verdicts.append(
                {
                    "criterion_id": f"c{j + 1:02d}",
                    "criterion": "回答是否" + _cjk(rng, 20),
                    "met": met,
                    "explanation": explanation,
                    "judge": "synthetic-judge",
                }
            )
        answer = _cjk(rng, answer_chars)
        if hostile and c < len(HOSTILE):
            answer = HOSTILE[c] + answer
        rows.append(
            {
                "id": f"synthetic-case-{c:04d}",
                "difficulty": rng.choice(difficulties),
                "subject": rng.choice(subjects),
                "task": rng.choice(tasks),
                "user_role": rng.choice(roles),
                "query": _cjk(rng, 200) + "\n\n" + _cjk(rng, 40),
                "answer": answer,
                "s": s,
                "verdicts": verdicts,
            }
        )
        s_all.append(s)
    ids = [r["id"] for r in rows]
    s_arr = np.asarray(s_all, dtype=np.float64)
    metrics: dict[str, Any] = {"n_cases": n_cases, "n_criteria": n_crit}
    for k in (7, 10):
        terms = 100.0 * np.maximum(0.0, s_arr - k + 1) / (n_crit - k + 1)
        stat = st.mean_statistic(ids, terms)
        metrics[f"cacs@{k}"] = stat.point()
        metrics[f"cacs@{k}_ci95"] = list(st.bootstrap_interval(stat, 200, seed))
        metrics[f"pass@{k}"] = float((s_arr >= k).mean())
    metrics["rubric_accuracy"] = met_total / judged_total
    metrics["judge_error_rate"] = errors_total / (n_cases * n_crit)
    metrics["judge_errors"] = errors_total
    metrics["fixture"] = True
    return _write(out, "clinconsensus", "baseline:synthetic", seed, metrics, rows)
