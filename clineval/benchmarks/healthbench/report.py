"""HealthBench's report sections: the tag figures with their intervals (themes, axes, the
rest), the worst examples with their criteria; for the meta-evaluation the grader beside each
physician."""

from __future__ import annotations

from typing import Any

from clineval.benchmarks import RunData, base_section, finite_number, table_block

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
    number = finite_number(value)
    return "" if number is None else f"{number:.4f}"


def _tag_row(metrics: dict[str, Any], tag: str) -> list[str]:
    interval = " – ".join(_num(c) for c in metrics.get(f"{tag}_ci") or [])
    std, n = metrics.get(f"{tag}:bootstrap_std"), metrics.get(f"{tag}:n_samples", "")
    return [tag, _num(metrics[tag]), interval, _num(std), str(n)]


def build(run: RunData, task: str) -> dict[str, Any]:
    from clineval.benchmarks.healthbench import BENCHMARK

    metrics, samples = run.results.get(task, {}), run.samples.get(task, [])
    section = base_section(run, task, "healthbench", BENCHMARK.metrics)
    for prefix, title in GROUPS.items():
        tags = sorted(k for k in metrics if k.startswith(prefix) and ":" not in k[len(prefix) :])
        rows = [_tag_row(metrics, tag) for tag in tags]
        if rows:
            block = table_block(title, TAG_HEADER, rows, collapsed=prefix == "level:")
            section["blocks"].append(block)
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
    section["blocks"].append(table_block(title, header, worst, sortable=False))
    return section


def build_meta_eval(run: RunData, task: str) -> dict[str, Any]:
    from clineval.benchmarks.healthbench import META_BENCHMARK

    metrics = run.results.get(task, {})
    section = base_section(run, task, "healthbench-meta", META_BENCHMARK.metrics)
    physicians = sorted((metrics.get("physicians") or {}).items())
    rows = [
        ["grader (--model)", _num(metrics.get("balanced_f1")), _num(metrics.get("balanced_f1_n"))]
    ]
    rows += [[str(who), _num(f.get("balanced_f1")), _num(f.get("n"))] for who, f in physicians]
    rows.append(["physicians (n-weighted mean)", _num(metrics.get("physician_mean")), ""])
    title = "Balanced F1: the grader beside each physician (leave-one-out)"
    header = ["rater", "balanced F1", "n (the authors' count)"]
    section["blocks"].append(table_block(title, header, rows))
    categories = sorted((metrics.get("by_category") or {}).items())
    rows = [
        [c, _num((f or {}).get("balanced_f1")), _num((f or {}).get("n"))] for c, f in categories
    ]
    header[0] = "category"
    section["blocks"].append(table_block("The grader's balanced F1 by category", header, rows))
    return section
