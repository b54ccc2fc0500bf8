"""Benchmarks: each script prints ratios measured in one run (see the README's table)."""
