"""The model backends: chat servers, llama.cpp, checkpoints, predictions files.

Internal: not part of clineval's public API (`clineval`, `clineval.benchmarks`;
docs/architecture.md, "Public API"). A benchmark package imports what it needs from
`clineval.benchmarks`.
"""
