"""Reproducible benchmarks: each measures the product and a baseline in the same run and
prints the ratio. Run with ``python -m bench [--json] [--only NAME]`` or ``make bench``."""
