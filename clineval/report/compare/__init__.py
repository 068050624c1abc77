"""`clineval compare` and `clineval.compare`: one comparison of runs (`model`), its paired
tests (`paired_tests`), what differs among the runs (`settings`), its renderings (`render`,
`html`), the command (`command`) and the Python API's view of it (`api`).

Kept free of imports so that the Python API can name its types without loading the
comparison's machinery.

Internal: not part of clineval's public API (`clineval`, `clineval.benchmarks`;
docs/architecture.md, "Public API"); `clineval.compare` is the public door.
"""
