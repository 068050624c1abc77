"""Benchmarks: one package per family (ner/, tcm_sd/, clinconsensus/) and the registry."""
