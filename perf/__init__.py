"""Benchmark scripts: run as modules, print numbers for BENCHMARKS.md."""
