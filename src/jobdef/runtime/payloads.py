"""Bounds on what a handler hands back to the worker: progress, return values, error text.

A handler's ``ctx.heartbeat(progress)`` value and its return value are stored as
JSON and shown by ``jobdef jobs show``; an error's message and traceback are
stored on the attempt. All come from user code, so all are checked in the child,
before they cross the pipe: a progress value that is not plain JSON (a set, a
datetime, NaN, a lone surrogate, a NUL character), too large or nested too deep
is dropped with one warning, never fatal to the worker; a return value is held
to its sheet's ``result:`` (:mod:`jobdef.runtime.results`), and one that it
refuses fails the attempt; error text longer than :data:`MAX_ERROR_BYTES` is
cut, with a marker saying how much.
"""

from __future__ import annotations

import json
from typing import Any

# Encoded JSON size and nesting depth of one progress value.
MAX_PROGRESS_BYTES = 64 * 1024
MAX_PROGRESS_DEPTH = 32
# Nesting depth of one handler's return value (the job's result); its size is the
# sheet's ``result.max_bytes``.
MAX_RESULT_DEPTH = 32
# Stored error message and traceback, each, in UTF-8 bytes.
MAX_ERROR_BYTES = 64 * 1024


class RefusedPayload(ValueError):
    """A value a handler handed back cannot be stored; the message says why."""


class TooBig(RefusedPayload):
    """The value is plain JSON, but larger than its bound."""


def plain_json(value: Any, *, max_bytes: int, max_depth: int) -> Any:
    """``value`` as plain JSON data (dicts, lists, str, int, float, bool, None), or
    :class:`RefusedPayload` naming the first reason it cannot be stored."""
    return json.loads(json_text(value, max_bytes=max_bytes, max_depth=max_depth))


def json_text(value: Any, *, max_bytes: int, max_depth: int) -> str:
    """``value`` encoded as compact JSON text (what is stored), or :class:`RefusedPayload`
    naming the first reason it cannot be stored."""
    _check_depth(value, max_depth)
    try:
        text = json.dumps(value, allow_nan=False, ensure_ascii=False, separators=(",", ":"))
        size = len(text.encode("utf-8"))
    except TypeError as exc:  # a set, a datetime, bytes, an object
        raise RefusedPayload(f"it is not JSON ({exc})") from None
    except UnicodeEncodeError:
        raise RefusedPayload("it holds a lone surrogate, which is not UTF-8") from None
    except ValueError as exc:  # NaN/Infinity, a circular reference
        raise RefusedPayload(f"it is not JSON ({exc})") from None
    if "\\u0000" in text:
        raise RefusedPayload("it holds a NUL character, which PostgreSQL cannot store")
    if size > max_bytes:
        raise TooBig(f"it is {size} bytes as JSON, more than the {max_bytes} allowed")
    return text


def _check_depth(value: Any, max_depth: int) -> None:
    """Refuse containers nested deeper than ``max_depth`` (without recursing: a deep
    value must not exhaust the stack here either)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    seen = 0
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        if depth > max_depth:
            raise RefusedPayload(f"it is nested more than {max_depth} levels deep")
        seen += 1
        if seen > 1_000_000:
            raise RefusedPayload("it holds more than a million lists and dicts")
        stack.extend((child, depth + 1) for child in children)


def truncated(text: str, limit: int = MAX_ERROR_BYTES, *, keep_end: bool = False) -> str:
    """``text`` cut to at most about ``limit`` UTF-8 bytes, with a marker saying how much
    was cut; ``keep_end`` keeps the end too (a traceback's last lines name the error)."""
    if len(text) <= limit // 4:
        return text
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return text
    marker = f"\n[... {{}} bytes cut by jobdef (limit {limit}) ...]\n"
    room = limit - len(marker) - 20
    if keep_end:
        head, tail = data[: room // 4], data[len(data) - (room - room // 4) :]
    else:
        head, tail = data[:room], b""
    cut = len(data) - len(head) - len(tail)
    return head.decode("utf-8", "ignore") + marker.format(cut) + tail.decode("utf-8", "ignore")
