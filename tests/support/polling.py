"""Waiting for something another thread or process does, without a fixed sleep."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

POLL_INTERVAL = 0.02
"""Seconds between two looks: short, so a test waits little past the moment it may go on."""


def eventually(condition: Callable[[], T], timeout: float = 60.0, what: str = "") -> T:
    """Call ``condition`` until it returns a truthy value, and return that value.

    Raises :class:`AssertionError` naming ``what`` (or the condition itself)
    when ``timeout`` seconds pass first. The condition is always called once
    more after the deadline, so a slow machine fails only on a real timeout.
    """
    deadline = time.monotonic() + timeout
    while True:
        expired = time.monotonic() > deadline
        value = condition()
        if value:
            return value
        if expired:
            raise AssertionError(
                f"timed out after {timeout}s waiting for {what or _name(condition)}"
            )
        time.sleep(POLL_INTERVAL)


def _name(condition: Callable[[], object]) -> str:
    name = getattr(condition, "__qualname__", "")
    return repr(condition) if not name or "<lambda>" in name else name
