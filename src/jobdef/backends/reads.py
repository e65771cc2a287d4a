"""What the engines' readers share: the queries they take from the verbs' file, and how
an args qualifier's value is matched."""

from __future__ import annotations

import json
import math
from typing import Any

from jobdef.backends.sql import load_queries

# Reads the engine makes too (jobdef queues, the gauges), taken from its queries.sql
# so each has one text: the queue depths and one job's dead count.
SHARED_QUERIES = ("queue_depths", "dead_count")


def dashboard_queries(engine: str) -> dict[str, str]:
    """The dashboard's named queries on ``engine`` (``sqlite`` or ``postgres``)."""
    queries = load_queries(f"jobdef.backends.{engine}", "reader.sql")
    shared = load_queries(f"jobdef.backends.{engine}", "queries.sql")
    return {**queries, **{name: shared[name] for name in SHARED_QUERIES}}


# The JSON literals an args qualifier's value may spell, beside its text.
_LITERALS = ("true", "false", "null")
INT64 = 2**63


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


def arg_match(engine: str, key: str, value: str) -> dict[str, Any]:
    """The query parameters of the qualifier ``args.KEY:VALUE`` on ``engine``.

    It matches a job whose arg at KEY (dots go into nested objects) is the string
    VALUE, or the JSON number, ``true``, ``false`` or ``null`` that VALUE spells:
    ``args.id:42`` finds ``{"id": 42}`` and ``{"id": "42"}``, ``42`` also finds
    ``42.0`` (numbers compare by value). On PostgreSQL both forms are jsonb
    documents for ``args @>`` (containment, which the GIN index jsonb_path_ops
    answers); on SQLite a JSON path and the typed forms for json_type/json_extract.
    """
    parts = key.split(".")
    number = arg_number(value)
    literal = value if value in _LITERALS else None
    if engine == "sqlite":
        if isinstance(number, int) and not -INT64 <= number < INT64:
            # Beyond SQLite's integers: compared as a REAL, or, past a float's range,
            # as no number at all (no stored arg can hold one).
            try:
                number = float(number)
            except OverflowError:
                number = None
        return {
            "arg_path": "$." + ".".join(f'"{part}"' for part in parts),
            "arg_text": value,
            "arg_number": number,
            "arg_literal": literal,
            # What json_extract reads a JSON true or false as.
            "arg_truth": {"true": 1, "false": 0}.get(value),
        }
    # The number keeps the digits as written (jsonb's numeric is exact).
    typed = value if number is not None or literal is not None else json.dumps(value)
    as_text, as_typed = json.dumps(value), typed
    for part in reversed(parts):
        as_text = "{" + json.dumps(part) + ": " + as_text + "}"
        as_typed = "{" + json.dumps(part) + ": " + as_typed + "}"
    return {"arg_text": as_text, "arg_typed": as_typed}
