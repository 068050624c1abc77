"""The building blocks a benchmark builds its report section, its per-sample statistics and
its exports from: a run directory read for the report (`rundata`) and for an exporter
(`run_files`), statistics as functions of per-sample counts (`statistics`), inline SVG plots
(`plots`) and the pieces every report section shares (`sections_common`).

These sit below the benchmark packages and import none of them; the rooms that use the
benchmarks (`clineval.report`, `clineval.report.compare`, `clineval.export`) sit above.

Internal: not part of clineval's public API (`clineval`, `clineval.benchmarks`;
docs/architecture.md, "Public API"). A benchmark package imports what it needs from
`clineval.benchmarks`.
"""
