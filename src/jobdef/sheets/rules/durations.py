"""Durations (JD201): strings with a unit, never a bare number or a YAML 1.1 base-60 value."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from jobdef.policy.durations import is_duration
from jobdef.policy.fields import JOB_FIELDS
from jobdef.sheets.diagnostics import Diagnostic
from jobdef.sheets.document import Document, Path_
from jobdef.sheets.rules.base import Rule

DURATION_FORMAT = Rule(
    "JD201",
    "duration-format",
    "error",
    "A bare number (or 1:30, which YAML 1.1 reads as 90) could mean seconds or minutes.",
)
RULES = (DURATION_FORMAT,)

# The duration fields of each kind, as paths; "*" stands for any list index.
_JOB_FIELDS: tuple[Path_, ...] = tuple(
    (*field.path.split("."), *(("*",) if field.kind == "durations" else ()))
    for field in JOB_FIELDS
    if field.kind in ("duration", "durations")
)
FIELDS: dict[str, tuple[Path_, ...]] = {
    "Job": _JOB_FIELDS,
    "Defaults": _JOB_FIELDS,
    "Channel": (("timeout",),),
}
# Compiled on first use (re keeps them): only a value written wrong needs them.
_SEXAGESIMAL = r"^\d+(?::[0-5]?\d)+(?:\.\d*)?$"
_SPACED = r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]+)\s*$"
_UNIT_WORDS = {
    "ms": "ms",
    "msec": "ms",
    "millisecond": "ms",
    "milliseconds": "ms",
    "s": "s",
    "sec": "s",
    "secs": "s",
    "second": "s",
    "seconds": "s",
    "m": "m",
    "min": "m",
    "mins": "m",
    "minute": "m",
    "minutes": "m",
    "h": "h",
    "hr": "h",
    "hrs": "h",
    "hour": "h",
    "hours": "h",
    "d": "d",
    "day": "d",
    "days": "d",
}


def _values(data: Any, path: Path_, prefix: Path_ = ()) -> Iterator[tuple[Path_, Any]]:
    if not path:
        yield prefix, data
        return
    head, rest = path[0], path[1:]
    if head == "*":
        if isinstance(data, list):
            for index, item in enumerate(data):
                yield from _values(item, rest, (*prefix, index))
    elif isinstance(data, dict) and head in data:
        yield from _values(data[head], rest, (*prefix, head))


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def problem(value: Any) -> str | None:
    """What is wrong with a duration value, with what to write instead; None when fine."""
    if isinstance(value, bool) or value is None or isinstance(value, dict | list):
        return None  # a wrong type: the schema says so
    if isinstance(value, int | float):
        return f'{value!r} has no unit; write "{_number(value)}s" (or m, h, ms, d)'
    if not isinstance(value, str) or is_duration(value) or value == "until_resolved":
        return None
    if re.match(_SEXAGESIMAL, value):
        minutes, _, seconds = value.partition(":")
        return (
            f"{value!r} is a YAML 1.1 base-60 number (a YAML 1.1 reader sees "
            f'{_sexagesimal(value)}); write the units, such as "{minutes}m{seconds}s" '
            f'or "{minutes}h{seconds}m"'
        )
    spaced = re.match(_SPACED, value)
    if spaced and spaced.group(2).lower() in _UNIT_WORDS:
        fixed = spaced.group(1) + _UNIT_WORDS[spaced.group(2).lower()]
        return f'{value!r} is not a duration; write "{fixed}"'
    if re.fullmatch(r"\d+(?:\.\d+)?", value.strip()):
        return f'{value!r} has no unit; write "{value.strip()}s" (or m, h, ms, d)'
    return (
        f"{value!r} is not a duration; write a number with a unit (ms, s, m, h, d), "
        'largest unit first, such as "250ms", "30s", "5m" or "1h30m"'
    )


def _sexagesimal(text: str) -> str:
    total = 0.0
    for part in text.split(":"):
        total = total * 60 + float(part)
    return _number(total)


def check_document(doc: Document) -> Iterator[tuple[Path_, Diagnostic]]:
    for pattern in FIELDS.get(doc.kind, ()):
        for path, value in _values(doc.data, pattern):
            message = problem(value)
            if message is None:
                continue
            if path == ("retention", "dead"):
                message += ", or until_resolved to keep dead jobs until an operator resolves them"
            line, column = doc.positions.get(path, (doc.line, 1))
            field = ".".join(str(p) if isinstance(p, str) else f"[{p}]" for p in path)
            field = field.replace(".[", "[")
            yield path, DURATION_FORMAT.at(doc.file, line, column, f"{field}: {message}")
