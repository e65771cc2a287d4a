"""What a PostgreSQL statement read, from its ``EXPLAIN (ANALYZE, FORMAT JSON)`` plan:
how far a query walks a table, asserted as a count rather than as a time."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def plan_nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """``plan`` and every node under it."""
    yield plan
    for child in plan.get("Plans", []):
        yield from plan_nodes(child)


def entries_read(plan: dict[str, Any], relation: str) -> int:
    """The rows the scans of ``relation`` went through: those they gave and those their
    filter threw away, over all their loops (a node never run counts none)."""
    return sum(
        (node.get("Actual Rows", 0) + node.get("Rows Removed by Filter", 0))
        * node.get("Actual Loops", 0)
        for node in plan_nodes(plan)
        if node.get("Relation Name") == relation
    )
