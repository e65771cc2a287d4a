"""The percentiles the benches report, computed one way for all of them.

Imported by its siblings (``python bench/x.py`` puts this folder on the path)."""

from __future__ import annotations


def p99(values: list[float]) -> float:
    """The 99th percentile of sorted ``values`` (nearest rank)."""
    return values[min(len(values) - 1, round(0.99 * (len(values) - 1)))]
