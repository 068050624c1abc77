"""Generic data handling: downloads, the cache, checksums, archives.

Internal: not part of clineval's public API (`clineval`, `clineval.benchmarks`;
docs/architecture.md, "Public API"). A benchmark package imports what it needs from
`clineval.benchmarks`.
"""
