"""Handlers the runtime tests steer into each outcome (imported by worker child processes)."""

from __future__ import annotations

import ctypes
import os
import sys
import time
from pathlib import Path


def noop(ctx, n: int = 0) -> None:
    pass


def store_url(ctx, n: int = 0) -> str:
    return ctx.database_url


def imported(ctx, module: str) -> bool:
    """Whether the handler's process has imported ``module``."""
    return module in sys.modules


def sleep(ctx, seconds: float, marker: str = "") -> None:
    """Sleep; with ``marker``, first create that file so a test knows the attempt began."""
    if marker:
        Path(f"{marker}.{ctx.attempt}").touch()
    time.sleep(seconds)


def wide_args(ctx, payload: str, seconds: float) -> None:
    """Sleep, holding args of the size of ``payload``."""
    time.sleep(seconds)


def sleep_first(ctx, seconds: float) -> None:
    """Sleep past the timeout on attempt 1 only."""
    if ctx.attempt == 1:
        time.sleep(seconds)


def exit_first(ctx, how: str) -> None:
    """Kill the handler's own process on attempt 1: os._exit or a segfault."""
    if ctx.attempt == 1:
        if how == "segfault":
            ctypes.string_at(0)
        os._exit(7)


def fail(ctx, kind: str) -> None:
    errors = {"connection": ConnectionError, "permission": PermissionError, "value": ValueError}
    raise errors[kind](f"{kind} failed on attempt {ctx.attempt}")


def progress(ctx, steps: int) -> None:
    """Report progress through the heartbeat at every step."""
    for step in range(1, steps + 1):
        ctx.heartbeat({"step": step, "of": steps})
