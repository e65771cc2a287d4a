"""Sizes in bytes as sheets write them: an integer, or a whole number with a unit (``64KiB``).

The units are binary, as the sheet's own defaults are: ``B``, ``KiB`` (1024 bytes)
and ``MiB`` (1024 KiB). Decimal ``KB`` and ``MB`` are refused, not guessed: one
writer means 1000, another 1024, and a limit must not depend on which.
"""

from __future__ import annotations

import re

UNIT_BYTES: dict[str, int] = {"B": 1, "KiB": 1024, "MiB": 1024 * 1024}

# The pattern the sheet schema's ``bytes`` definition holds a string to.
SIZE_PATTERN = r"^[0-9]+(B|KiB|MiB)$"
# Compiled on first use (re keeps it): most sheets write no size.
_SIZE = SIZE_PATTERN


def parse_size_or_none(value: object) -> int | None:
    """``value`` in bytes (``"64KiB"`` -> 65536, ``4096`` -> 4096), or None when it is no size."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if not isinstance(value, str):
        return None
    match = re.match(_SIZE, value)
    if match is None:
        return None
    return int(value[: match.start(1)]) * UNIT_BYTES[match.group(1)]


def parse_size(value: object) -> int:
    """A sheet size in bytes; raises ValueError for anything :func:`parse_size_or_none` refuses."""
    size = parse_size_or_none(value)
    if size is None:
        raise ValueError(
            f"{value!r} is not a size; write a number of bytes or a whole number with "
            "B, KiB or MiB, such as 65536 or 64KiB"
        )
    return size


def format_size(size: int) -> str:
    """Bytes as a sheet writes them, in the largest unit that divides them: ``65536`` ->
    ``64KiB``, ``1048576`` -> ``1MiB``, ``1000`` -> ``1000B``."""
    for unit in ("MiB", "KiB"):
        if size and size % UNIT_BYTES[unit] == 0:
            return f"{size // UNIT_BYTES[unit]}{unit}"
    return f"{size}B"
