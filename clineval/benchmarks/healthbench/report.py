"""HealthBench's report sections: the tag figures with their intervals (themes, axes, the
rest), the worst examples with their criteria; for the meta-evaluation the grader beside each
physician."""

from __future__ import annotations

from typing import Any

from clineval.benchmarks import RunData, base_section, finite_number, table_block
from clineval.benchmarks.healthbench import BENCHMARK, META_BENCHMARK

GROUPS = {
    "theme:": "By theme",
    "axis:": "By axis",
    "cluster:": "Consensus criteria (by cluster)",
    "physician_agreed_category:": "By physician-agreed category",
    "level:": "By rubric level",
}
WORST = 10
TAG_HEADER = ["tag", "score", "95% interval", "bootstrap std", "examples"]


def _num(value: Any) -> str:
    return "" if (number := finite_number(value)) is None else f"{number:.4f}"


def _tag_row(metrics: dict[str, Any], tag: str) -> list[str]:
    interval = " – ".join(_num(c) for c in metrics.get(f"{tag}_ci") or [])
    std, n = metrics.get(f"{tag}:bootstrap_std"), metrics.get(f"{tag}:n_samples", "")
    return [tag, _num(metrics[tag]), interval, _num(std), str(n)]


def _f1_row(name: Any, figures: Any, n: str = "n", key: str = "balanced_f1") -> list[str]:
    return [str(name), _num((figures or {}).get(key)), _num((figures or {}).get(n))]


def build(run: RunData, task: str) -> dict[str, Any]:
    metrics, samples = run.results.get(task, {}), run.samples.get(task, [])
    section = base_section(run, task, "healthbench", BENCHMARK.metrics)
    blocks = section["blocks"]
    for prefix, title in GROUPS.items():
        tags = sorted(k for k in metrics if k.startswith(prefix) and ":" not in k[len(prefix) :])
        if rows := [_tag_row(metrics, tag) for tag in tags]:
            blocks.append(table_block(title, TAG_HEADER, rows, collapsed=prefix == "level:"))
    scored = [r for r in samples if finite_number(r.get("score")) is not None]
    scored.sort(key=lambda r: (r["score"], str(r.get("id"))))
    worst = [
        [str(r.get("id")), _num(r["score"]), "met" if v.get("met") else "not met",
         f"[{v.get('points')}] {v.get('criterion')}", str(v.get("explanation") or "")]
        for r in scored[:WORST]
        for v in r.get("verdicts") or []
        if isinstance(v, dict)
    ]  # fmt: skip
    title = f"The {min(WORST, len(scored))} lowest-scoring examples and their criteria"
    header = ["example", "score", "verdict", "criterion", "explanation"]
    blocks.append(table_block(title, header, worst, sortable=False))
    return section


def build_meta_eval(run: RunData, task: str) -> dict[str, Any]:
    metrics = run.results.get(task, {})
    section = base_section(run, task, "healthbench-meta", META_BENCHMARK.metrics)
    rows = [_f1_row("grader (--model)", metrics, "balanced_f1_n")]
    if "majority_f1_n" in metrics:  # healthbench.meta_reference=majority (inspect_evals)
        label = "grader vs each row's physician majority (macro F1; n rows)"
        rows.append(_f1_row(label, metrics, "majority_f1_n", "majority_f1"))
    rows += [_f1_row(who, f) for who, f in sorted((metrics.get("physicians") or {}).items())]
    rows.append(["physicians (n-weighted mean)", _num(metrics.get("physician_mean")), ""])
    title = "Balanced F1: the grader beside each physician (leave-one-out)"
    header = ["rater", "balanced F1", "n (the authors' count)"]
    section["blocks"].append(table_block(title, header, rows))
    rows = [_f1_row(c, f) for c, f in sorted((metrics.get("by_category") or {}).items())]
    header[0] = "category"
    section["blocks"].append(table_block("The grader's balanced F1 by category", header, rows))
    return section
