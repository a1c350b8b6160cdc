"""Benchmarks: each prints medians and the ratio against its named anchor."""
