"""Whether a job's args can be stored as they are: plain JSON, bounded in size and depth.

Args are stored as JSON and handed back to the handler decoded, on either engine.
A value JSON does not have would come back as something else, or not at all:
PostgreSQL's driver would store a ``Decimal`` or a ``datetime`` as a string and
SQLite's would raise ``TypeError``; a set or bytes would fail on both, a NUL
character only on PostgreSQL, a non-string key would come back as a string. So
:func:`args_problem` refuses all of them before any engine sees the args, naming
the arg and the type, and the same call gets the same answer on both engines.

Size is the UTF-8 length of the compact JSON text; a sheet may raise the default
with ``limits.args_bytes`` (``jobdef validate`` warns past
:data:`~jobdef.policy.values.ARGS_BYTES_WARN`). Nesting is bounded by
:data:`MAX_ARGS_DEPTH` whatever the sheet says: deeper data is refused before the
encoder or a handler's own code meets it (a loop in the data is refused this way
too).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

# Containers nested in args, the args object itself counting as the first.
MAX_ARGS_DEPTH = 32

# What to pass instead of a value JSON does not have, by type name.
_INSTEAD = {
    "Decimal": "a str (str(value)) or a float",
    "datetime": "an ISO 8601 str (value.isoformat())",
    "date": "an ISO 8601 str (value.isoformat())",
    "time": "an ISO 8601 str (value.isoformat())",
    "timedelta": "a number of seconds (value.total_seconds())",
    "set": "a list (sorted(value))",
    "frozenset": "a list (sorted(value))",
    "bytes": "a str (base64 or hex)",
    "bytearray": "a str (base64 or hex)",
    "UUID": "a str (str(value))",
}


def where(path: tuple[str | int, ...]) -> str:
    """``args.order.items[2]``: a place in the args, as messages name it."""
    return "args" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)


def _text_problem(text: str) -> str | None:
    if "\x00" in text:
        return "holds a NUL character (\\u0000), which PostgreSQL cannot store"
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return "holds a lone surrogate, which is not UTF-8 text"
    return None


def _value_problem(value: Any, path: tuple[str | int, ...]) -> str | None:
    """What is wrong with a leaf (not a dict, list or tuple), or None."""
    if value is None or isinstance(value, bool | int):
        return None
    if isinstance(value, str):
        problem = _text_problem(value)
        return None if problem is None else f"{where(path)} {problem}"
    if isinstance(value, float):
        if math.isfinite(value):
            return None
        return f"{where(path)} is {value}, which JSON does not have; pass a finite number or None"
    kind = type(value).__name__
    instead = _INSTEAD.get(kind, "a dict, list, str, int, float, bool or None")
    return f"{where(path)} is a {kind}, which is not JSON; pass {instead}"


def _flat_and_plain(args: Mapping[str, Any]) -> bool:
    """Whether ``args`` hold no container, and only ints, bools, None, finite floats
    and ASCII strings without NUL under ASCII keys without NUL: JSON holds them as
    they are (the common case, answered without :func:`_shape_problem`'s walk)."""
    for key, value in args.items():
        if type(key) is not str or not key.isascii() or "\x00" in key:
            return False
        kind = type(value)
        if kind is str:
            if not value.isascii() or "\x00" in value:
                return False
        elif kind is float:
            if not math.isfinite(value):
                return False
        elif kind is not int and kind is not bool and value is not None:
            return False
    return True


def _shape_problem(args: Mapping[str, Any], max_depth: int) -> str | None:
    """The first value, key or nesting level of ``args`` that JSON cannot hold as it is."""
    if max_depth >= 1 and _flat_and_plain(args):
        return None
    return _walk_problem(args, max_depth)


def _walk_problem(args: Mapping[str, Any], max_depth: int) -> str | None:
    """:func:`_shape_problem` of any args: every container and leaf in them visited."""
    stack: list[tuple[Any, tuple[str | int, ...], int]] = [(dict(args), (), 1)]
    while stack:
        value, path, depth = stack.pop()
        if isinstance(value, dict):
            items: Any = value.items()
        elif isinstance(value, list | tuple):
            items = enumerate(value)
        else:
            problem = _value_problem(value, path)
            if problem is not None:
                return problem
            continue
        if depth > max_depth:
            return (
                f"{where(path)} is nested more than {max_depth} levels deep; "
                "pass flatter data, or store it elsewhere and pass its id"
            )
        for key, child in items:
            if isinstance(value, dict):
                if not isinstance(key, str):
                    return (
                        f"{where(path)} has the key {key!r}, a {type(key).__name__}: JSON keys "
                        "are strings and it would come back as one; pass a str key"
                    )
                problem = _text_problem(key)
                if problem is not None:
                    return f"a key of {where(path)} {problem}"
            stack.append((child, (*path, key), depth + 1))
    return None


# The stored text of args: compact JSON, other than ASCII kept as it is. One encoder,
# made once: ``json.dumps`` with options builds a new one for every call.
_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _utf8_size(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def encoded_size(args: Mapping[str, Any]) -> int:
    """UTF-8 bytes of ``args`` as compact JSON (for args :func:`args_problem` accepts)."""
    return _utf8_size(_COMPACT.encode(args))


def encode_args(
    args: Mapping[str, Any], *, max_bytes: int, max_depth: int = MAX_ARGS_DEPTH
) -> tuple[str, None] | tuple[None, str]:
    """``(text, None)``: the compact JSON text of ``args``, which an engine stores as it
    is (the text :func:`jobdef.backends.rows.dump_json` makes of them); or ``(None,
    why)`` when they cannot be stored as they are (see :func:`args_problem`). The size
    check and the store share one encode."""
    problem = _shape_problem(args, max_depth)
    if problem is not None:
        return None, problem
    text = _COMPACT.encode(args)
    size = _utf8_size(text)
    if size > max_bytes:
        return None, (
            f"args are {size} bytes as JSON, more than the {max_bytes} this job allows "
            "(limits.args_bytes); store the data elsewhere (a file, a table) and pass its id"
        )
    return text, None


def args_problem(
    args: Mapping[str, Any], *, max_bytes: int, max_depth: int = MAX_ARGS_DEPTH
) -> str | None:
    """Why ``args`` cannot be stored as they are (one sentence naming the arg), or None."""
    return encode_args(args, max_bytes=max_bytes, max_depth=max_depth)[1]
