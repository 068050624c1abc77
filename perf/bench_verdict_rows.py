"""A judged task's sample verdict rows made two ways, in one run: through a VerdictRow object
(a VerdictRow's `to_row()`, as before) and directly (`VerdictRow.row_of`, now), for
HealthBench's 48,562 criteria (a met verdict with points and two tags each).

    .venv/bin/python -m perf.bench_verdict_rows [--rows 48562] [--repeats 5]

Each figure is the least CPU of --repeats (the work is the same each time).
"""

from __future__ import annotations

import argparse

from clineval.judge.verdict import VerdictRecord, VerdictRow
from perf.bench_surrogate_check import least


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=48562)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    record = VerdictRecord(met=True, explanation="SYNTHETIC verdict", judge="j", prompt="v1")
    tags = ("axis:accuracy", "level:example")
    ids = [f"c{i}" for i in range(args.rows)]

    def through_object() -> object:
        fields = (record.met, record.explanation, "j", record.error, 5.0, tags, record.grade)
        return [VerdictRow(c, "[5] text", *fields).to_row() for c in ids]

    def directly() -> object:
        return [VerdictRow.row_of(c, "[5] text", "j", record, 5.0, tags) for c in ids]

    assert through_object() == directly()
    before, now = least(through_object, args.repeats), least(directly, args.repeats)
    print(f"{args.rows:,} verdict rows: through a VerdictRow {before:.3f} s, directly "
          f"{now:.3f} s ({now / before:.2f}x)")  # fmt: skip


if __name__ == "__main__":
    main()
