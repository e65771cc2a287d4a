"""Handlers the PostgreSQL worker tests run (imported by the worker's child processes)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any


def noop(ctx: Any, n: int = 0) -> None:
    """Do nothing: the tests count what the worker and the store did."""


def slow_first_attempt(ctx: Any, marker: str, seconds: float = 60.0) -> None:
    """Announce the attempt in ``marker`` (attempt and pid), then sleep on the first one.

    The test kills the worker, or its database sessions, while the first attempt sleeps.
    """
    Path(marker).write_text(f"{ctx.attempt} {os.getpid()}\n")
    if ctx.attempt == 1:
        time.sleep(seconds)


def pause(ctx: Any, marker: str, seconds: float) -> None:
    """Announce the start in ``marker``, then take ``seconds``."""
    Path(marker).write_text(f"{ctx.attempt} {os.getpid()}\n")
    time.sleep(seconds)


def fail_first(ctx: Any, n: int = 0) -> None:
    """Fail the first attempt (its sheet retries it after a short backoff)."""
    if ctx.attempt == 1:
        raise ConnectionError("the first attempt fails")
