"""Handlers of the receipt tests (imported by worker child processes)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any


def total(ctx: Any, a: int, b: int) -> dict[str, int]:
    return {"total": a + b}


def gate(ctx: Any, path: str) -> dict[str, bool]:
    """Run until the file ``path`` exists: the test decides when the job ends."""
    while not Path(path).exists():
        time.sleep(0.002)
    return {"opened": True}


def flaky(ctx: Any, succeed_on: int) -> int:
    """Fail every attempt before ``succeed_on`` (with a retryable error)."""
    if ctx.attempt < succeed_on:
        raise ConnectionError(f"attempt {ctx.attempt} fails")
    return ctx.attempt
