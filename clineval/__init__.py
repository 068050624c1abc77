"""clineval: evaluation harness for clinical and Chinese-medical NLP benchmarks."""

__version__ = "0.1.0"
