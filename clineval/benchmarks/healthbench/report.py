"""HealthBench's report sections: the tag figures with their intervals (themes, axes, the
rest), the worst examples with their criteria, an example browser; for the meta-evaluation
the grader beside each physician."""

from __future__ import annotations

from typing import Any

from clineval.benchmarks import (
    RunData,
    SampleTable,
    base_section,
    finite_number,
    heading_part,
    interval_dots,
    rows_part,
    table_block,
    text_part,
)

GROUPS = (
    ("theme:", "By theme"),
    ("axis:", "By axis"),
    ("physician_agreed_category:", "By physician-agreed category"),
    ("cluster:", "Consensus criteria (by cluster)"),
    ("level:", "By rubric level"),
)
WORST = 10


def _num(value: Any) -> str:
    number = finite_number(value)
    return "" if number is None else f"{number:.4f}"


def _tag_blocks(metrics: dict[str, Any]) -> list[dict[str, Any]]:
    blocks = []
    for prefix, title in GROUPS:
        tags = sorted(k for k in metrics if k.startswith(prefix) and ":" not in k[len(prefix) :])
        found = [(t, finite_number(metrics[t]), metrics.get(f"{t}_ci")) for t in tags]
        shown = [(t, v, ci) for t, v, ci in found if v is not None and isinstance(ci, list)]
        if not found:
            continue
        if shown:
            svg = interval_dots(
                [t[len(prefix) :] for t, _, _ in shown],
                [v for _, v, _ in shown],
                [(float(ci[0]), float(ci[1])) for _, _, ci in shown],
                f"{title} (clipped mean, 95% bootstrap interval)",
                "score",
            )
            blocks.append({"kind": "plot", "title": title, "svg": svg, "small": True})
        rows = [
            [
                t,
                _num(metrics[t]),
                " – ".join(_num(c) for c in ci or []),
                _num(metrics.get(f"{t}:bootstrap_std")),
                str(metrics.get(f"{t}:n_samples", "")),
            ]
            for t, _, ci in found
        ]
        header = ["tag", "score", "95% interval", "bootstrap std", "examples"]
        blocks.append(table_block(title, header, rows, collapsed=prefix == "level:"))
    return blocks


def _verdicts(row: dict[str, Any]) -> list[list[Any]]:
    return [
        [v.get("points"), v.get("criterion"), v.get("met"), v.get("explanation"), v.get("judge")]
        for v in row.get("verdicts") or []
        if isinstance(v, dict)
    ]


def build(run: RunData, task: str) -> dict[str, Any]:
    from clineval.benchmarks.healthbench import BENCHMARK

    metrics = run.results.get(task, {})
    samples = run.samples.get(task, [])
    section = base_section(run, task, "healthbench", BENCHMARK.metrics)
    section["blocks"].extend(_tag_blocks(metrics))
    scored = sorted(
        (r for r in samples if finite_number(r.get("score")) is not None),
        key=lambda r: (r["score"], str(r.get("id"))),
    )
    worst = [
        [str(r.get("id")), _num(r["score"]), f"[{'met' if v[2] else 'not met'}] [{v[0]}] {v[1]}"]
        for r in scored[:WORST]
        for v in _verdicts(r)
    ]
    section["blocks"].append(
        table_block(
            f"The {min(WORST, len(scored))} lowest-scoring examples and their criteria",
            ["example", "score", "criterion"],
            worst,
            sortable=False,
        )
    )
    rows = [
        {
            "id": str(r.get("id")),
            "score": r.get("score"),
            "query": r.get("query") or "",
            "answer": r.get("answer") or "",
            "v": _verdicts(r),
        }
        for r in samples
    ]
    section["table"] = SampleTable(
        element_id=f"{section['anchor']}-samples",
        columns=[{"key": "id", "label": "example"}, {"key": "score", "label": "score"}],
        filters=[],
        search=["query", "answer"],
        detail=[
            heading_part("Example {id}: score {score}"),
            text_part("Conversation", "query"),
            text_part("Answer", "answer"),
            rows_part(
                "Criteria",
                "v",
                [
                    {"label": "points", "index": 0},
                    {"label": "criterion", "index": 1},
                    {
                        "label": "verdict",
                        "index": 2,
                        "labels": {"true": "met", "false": "not met", "null": "judge error"},
                    },
                    {"label": "explanation", "index": 3},
                    {"label": "judge", "index": 4},
                ],
            ),
        ],
        rows=rows,
        title="Example browser",
    )
    return section


def build_meta_eval(run: RunData, task: str) -> dict[str, Any]:
    from clineval.benchmarks.healthbench import META_BENCHMARK

    metrics = run.results.get(task, {})
    section = base_section(run, task, "healthbench-meta", META_BENCHMARK.metrics)
    physicians = metrics.get("physicians") or {}
    rows = [["grader (--model)", _num(metrics.get("balanced_f1")), ""]]
    rows += [
        [str(who), _num(f.get("balanced_f1")), _num(f.get("n"))]
        for who, f in sorted(physicians.items())
    ]
    rows.append(["physicians (n-weighted mean)", _num(metrics.get("physician_mean")), ""])
    section["blocks"].append(
        table_block(
            "Balanced F1: the grader beside each physician (leave-one-out)",
            ["rater", "balanced F1", "n (the authors' count)"],
            rows,
        )
    )
    by_cat = metrics.get("by_category") or {}
    section["blocks"].append(
        table_block(
            "Grader's balanced F1 by category",
            ["category", "balanced F1"],
            [[c, _num(v)] for c, v in sorted(by_cat.items())],
        )
    )
    return section
