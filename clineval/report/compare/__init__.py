"""`clineval compare` and `clineval.compare`: one comparison of runs, `model.Comparison`
(public: the API returns it), built by `build` with its paired tests (`paired_tests`) and
what differs among the runs (`settings`), rendered by `render`, `html` and `command` (the
command), and handed to Python callers by `api`.

Kept free of imports so that the Python API can name its types without loading the
comparison's machinery.

Internal: not part of clineval's public API (`clineval`, `clineval.benchmarks`;
docs/architecture.md, "Public API"); `clineval.compare` is the public door.
"""
