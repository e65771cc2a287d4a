"""Durations as sheets write them: strings with a unit, such as ``"1h30m"``.

Durations are held as ``float`` seconds everywhere inside jobdef. A bare number
is refused on purpose: ``timeout: 30`` could mean seconds or minutes, and a
YAML 1.1 reader turns ``1:30`` into the integer 90.
"""

from __future__ import annotations

import math
import re

from jobdef.errors import DurationError

UNIT_SECONDS: dict[str, float] = {
    "ms": 0.001,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
    "d": 86400.0,
}

# One or more <number><unit> parts, largest unit first ("1h30m", "1.5s", "250ms").
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_WHOLE = re.compile(r"^(?:\d+(?:\.\d+)?(?:ms|s|m|h|d))+$")
_UNIT_ORDER = ["d", "h", "m", "s", "ms"]


def is_duration(text: object) -> bool:
    """Tell whether ``text`` is a well-formed duration string."""
    return isinstance(text, str) and parse_duration_or_none(text) is not None


def parse_duration_or_none(text: str) -> float | None:
    """Parse ``text`` into seconds, or return ``None`` when it is not a duration."""
    compact = text.strip()
    if not _WHOLE.match(compact):
        return None
    parts = _PART.findall(compact)
    ranks = [_UNIT_ORDER.index(unit) for _, unit in parts]
    if ranks != sorted(ranks) or len(set(ranks)) != len(ranks):
        return None  # "30m1h" or "1m1m": refuse rather than guess
    return sum(float(number) * UNIT_SECONDS[unit] for number, unit in parts)


def parse_duration(value: object) -> float:
    """Parse a sheet duration into seconds.

    >>> parse_duration("1h30m")
    5400.0
    """
    if isinstance(value, bool) or not isinstance(value, str):
        raise DurationError(
            f"expected a duration string with a unit, got {value!r}; "
            'write it with a unit, such as "30s", "5m" or "1h30m"'
        )
    seconds = parse_duration_or_none(value)
    if seconds is None:
        raise DurationError(
            f"{value!r} is not a duration; write a number with a unit "
            '(ms, s, m, h, d), such as "250ms", "30s" or "1h30m"'
        )
    return seconds


_EN_UNITS = [("d", 86400.0), ("h", 3600.0), ("m", 60.0), ("s", 1.0)]
_JA_UNITS = {"d": "日", "h": "時間", "m": "分", "s": "秒", "ms": "ミリ秒"}


def _split(seconds: float) -> list[tuple[str, float]]:
    """Split seconds into (unit, amount) parts, largest first, dropping zero parts."""
    if seconds < 1 and seconds != 0:
        return [("ms", round(seconds * 1000, 3))]
    parts: list[tuple[str, float]] = []
    rest = round(seconds, 3)
    for unit, size in _EN_UNITS:
        amount = math.floor(rest / size) if unit != "s" else rest
        if amount:
            parts.append((unit, amount))
            rest = round(rest - amount * size, 3)
    return parts or [("s", 0)]


def _number(amount: float) -> str:
    return str(int(amount)) if float(amount).is_integer() else f"{amount:g}"


def format_duration(seconds: float, lang: str = "en") -> str:
    """Format seconds the way a person writes them: ``5400`` -> ``"1h30m"`` (``"1時間30分"``)."""
    parts = _split(seconds)
    if lang == "ja":
        return "".join(f"{_number(amount)}{_JA_UNITS[unit]}" for unit, amount in parts)
    return "".join(f"{_number(amount)}{unit}" for unit, amount in parts)


def format_wait(seconds: float) -> str:
    """A wait for a log line: tenths of a second below a minute (``4.6s``), else whole
    seconds as a duration (``59m59s``, ``1h``)."""
    if seconds < 60:
        return f"{max(seconds, 0.0):.1f}s"
    return format_duration(round(seconds))
