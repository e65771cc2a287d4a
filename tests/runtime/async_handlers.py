"""Coroutine handlers for the tests of handler processes that run many at once."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from jobdef.runtime.context import Context


async def wait(ctx: Context, seconds: float) -> dict[str, Any]:
    """Wait on the event loop, as an HTTP call would; return what the test reads back."""
    await asyncio.sleep(seconds)
    return {"job": ctx.job_id, "waited": seconds}


async def wait_first(ctx: Context, seconds: float) -> None:
    """Wait ``seconds`` on the first attempt only."""
    if ctx.attempt == 1:
        await asyncio.sleep(seconds)


async def block_first(ctx: Context, seconds: float) -> None:
    """Block the event loop with sync code on the first attempt only."""
    if ctx.attempt == 1:
        time.sleep(seconds)


async def beat(ctx: Context, steps: int) -> None:
    """Report progress at each step."""
    for step in range(1, steps + 1):
        await asyncio.sleep(0.05)
        ctx.heartbeat({"step": step})


def nap(ctx: Context, seconds: float) -> None:
    """A sync handler: it runs alone in its process."""
    time.sleep(seconds)


def run_own_loop(ctx: Context) -> str:
    """A sync handler that runs an event loop of its own (asyncio.run), as sync code
    calling an async library does: refused inside a running loop."""
    return asyncio.run(_answer())


async def _answer() -> str:
    await asyncio.sleep(0)
    return "ran"


async def shrug(ctx: Context, seconds: float) -> None:
    """Ignore cancellation: wait on until ``seconds`` have passed."""
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        try:
            await asyncio.sleep(left)
        except asyncio.CancelledError:
            continue
