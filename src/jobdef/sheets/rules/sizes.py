"""Sizes (JD202): a number of bytes, or a whole number with a binary unit (``64KiB``)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from jobdef.policy.fields import JOB_FIELDS
from jobdef.policy.sizes import UNIT_BYTES, format_size, parse_size_or_none
from jobdef.sheets.diagnostics import Diagnostic
from jobdef.sheets.document import Document, Path_
from jobdef.sheets.rules.base import Rule

SIZE_FORMAT = Rule(
    "JD202",
    "size-format",
    "error",
    "KB means 1000 bytes to some readers and 1024 to others; a limit is written in bytes or "
    "in B, KiB or MiB, which mean one thing.",
)
RULES = (SIZE_FORMAT,)

# The size fields of a Job, as paths; a Defaults document writes the same ones.
FIELDS: tuple[Path_, ...] = tuple(
    tuple(field.path.split(".")) for field in JOB_FIELDS if field.kind == "bytes"
)
# Compiled on first use (re keeps it): only a value written wrong needs it.
_WRITTEN = r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]+)\s*$"
# How people write the units, by lower-case word: the binary unit each one is taken to mean.
_UNITS = {
    **dict.fromkeys(("b", "byte", "bytes"), "B"),
    **dict.fromkeys(("k", "kb", "kib", "kilobyte", "kilobytes", "kibibyte", "kibibytes"), "KiB"),
    **dict.fromkeys(("m", "mb", "mib", "megabyte", "megabytes", "mebibyte", "mebibytes"), "MiB"),
}
_DECIMAL = ("kb", "mb", "kilobyte", "kilobytes", "megabyte", "megabytes")


def problem(value: Any) -> str | None:
    """What is wrong with a size value, with what to write instead; None when fine."""
    if isinstance(value, bool) or value is None or isinstance(value, dict | list | int):
        return None  # a wrong type or a bound: the schema says so
    if isinstance(value, float):
        return (
            f"{value!r} is not a whole number of bytes; write an integer, or a size such as 64KiB"
        )
    if not isinstance(value, str) or parse_size_or_none(value) is not None:
        return None
    if value.strip().isdigit():
        return f"{value!r} is quoted; write {value.strip()} (a number of bytes) without quotes"
    written = re.match(_WRITTEN, value)
    unit = _UNITS.get(written.group(2).lower()) if written else None
    if written is None or unit is None:
        return (
            f"{value!r} is not a size; write a number of bytes or a whole number with B, KiB "
            "or MiB, such as 65536 or 64KiB"
        )
    size = float(written.group(1)) * UNIT_BYTES[unit]
    fixed = format_size(int(size)) if size.is_integer() else None
    instead = f"write {fixed} ({int(size)} bytes)" if fixed else "write a whole number of bytes"
    if written.group(2).lower() in _DECIMAL:
        return (
            f"{value!r} is not a size: {written.group(2)} means 1000 bytes to some readers and "
            f"1024 to others; {instead}, or the number of bytes you mean"
        )
    return f"{value!r} is not a size; {instead}"


def check_document(doc: Document) -> Iterator[tuple[Path_, Diagnostic]]:
    if doc.kind not in ("Job", "Defaults"):
        return
    for path in FIELDS:
        node: Any = doc.data
        for part in path:
            node = node.get(part) if isinstance(node, dict) else None
        message = problem(node)
        if message is None:
            continue
        line, column = doc.positions.get(path, (doc.line, 1))
        yield path, SIZE_FORMAT.at(doc.file, line, column, f"{'.'.join(map(str, path))}: {message}")
