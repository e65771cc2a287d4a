"""What the engines' readers share: the queries they take from the verbs' file, and what
an args qualifier means.

The qualifier ``args.KEY:VALUE`` matches a job whose arg at KEY (dots go into
nested objects) is the string VALUE, or the JSON number, ``true``, ``false`` or
``null`` that VALUE spells: ``args.id:42`` finds ``{"id": 42}`` and
``{"id": "42"}``, ``42`` also finds ``42.0`` (numbers compare by value). Each
engine's reader turns it into the parameters of its own SQL
(:meth:`~jobdef.backends.protocol.Reader.args_params`).
"""

from __future__ import annotations

import json
import math

from jobdef.backends.sql import load_queries

# Reads the engine makes too (jobdef queues, the gauges), taken from its queries.sql
# so each has one text: the queue depths and one job's dead count.
SHARED_QUERIES = ("queue_depths", "dead_count")
# The JSON literals an args qualifier's value may spell, beside its text.
LITERALS = ("true", "false", "null")


def reader_queries(package: str) -> dict[str, str]:
    """The reader's named queries of the engine in ``package``: its ``reader.sql``, and
    the :data:`SHARED_QUERIES` of its ``queries.sql``."""
    queries = load_queries(package, "reader.sql")
    shared = load_queries(package, "queries.sql")
    return {**queries, **{name: shared[name] for name in SHARED_QUERIES}}


def arg_number(value: str) -> int | float | None:
    """The JSON number ``value`` spells (``42``, ``-1.5``, ``1e3``), or None: ``NaN``,
    ``Infinity``, ``042`` and ``0x2a`` are not JSON numbers, they stay text."""

    def refuse(constant: str) -> None:
        raise ValueError(constant)

    try:
        number = json.loads(value, parse_constant=refuse)
    except ValueError:
        return None
    if isinstance(number, bool) or not isinstance(number, int | float):
        return None
    if isinstance(number, float) and not math.isfinite(number):
        return None
    return number


def arg_literal(value: str) -> str | None:
    """The JSON literal ``value`` spells (``true``, ``false``, ``null``), or None."""
    return value if value in LITERALS else None
