"""Handlers for the execution-integrity tests: each run leaves a line in a ledger file.

The ledger is an append-only file outside the job database, so a test can count
how often a handler really ran and compare that with the attempts recorded.
"""

from __future__ import annotations

import asyncio
import datetime
import os
import time
from pathlib import Path


def _append(ledger: str, ctx) -> None:
    with open(ledger, "a", encoding="utf-8") as out:
        out.write(f"{ctx.job_id} {ctx.attempt} {os.getpid()}\n")


def ledger(ctx, ledger: str, index: int = 0) -> None:
    _append(ledger, ctx)


def crash_first(ctx, ledger: str, how: str) -> None:
    """Run, then on attempt 1 exit the process or sleep past the sheet's 1s timeout."""
    _append(ledger, ctx)
    if ctx.attempt == 1:
        if how == "exit":
            os._exit(1)
        time.sleep(60)


def chatty(ctx, ledger: str, blob: str, beats: int) -> None:
    """Large args in, many sizeable progress values out."""
    _append(ledger, ctx)
    for step in range(beats):
        ctx.heartbeat({"step": step, "pad": "p" * 10_000})


def _bad(kind: str) -> object:
    if kind == "set":
        return {"x": {1, 2}}
    if kind == "datetime":
        return {"at": datetime.datetime.now()}
    if kind == "nan":
        return {"ratio": float("nan")}
    if kind == "large":
        return {"blob": "x" * 1_000_000}
    if kind == "deep":
        value: object = 1
        for _ in range(200):
            value = [value]
        return value
    if kind == "lambda":
        return {"f": lambda: None}
    raise ValueError(kind)


def bad_progress(ctx, ledger: str, kind: str) -> None:
    """Heartbeat a value that cannot be stored, three times, then a good one."""
    for _ in range(3):
        ctx.heartbeat(_bad(kind))
    ctx.heartbeat({"ok": True})
    _append(ledger, ctx)


def big_error(ctx, size: int) -> None:
    raise ValueError("start " + "word " * (size // 5) + "end")


async def async_ledger(ctx, ledger: str, steps: int = 2) -> None:
    for step in range(1, steps + 1):
        await asyncio.sleep(0.01)
        ctx.heartbeat({"step": step, "of": steps})
    _append(ledger, ctx)


async def async_sleep_first(ctx, ledger: str) -> None:
    _append(ledger, ctx)
    if ctx.attempt == 1:
        await asyncio.sleep(60)


def hold(ctx, marker: str, seconds: float) -> None:
    """Write this process's pid to ``marker.<attempt>``; sleep on attempt 1 only."""
    Path(f"{marker}.{ctx.attempt}").write_text(str(os.getpid()))
    if ctx.attempt == 1:
        time.sleep(seconds)
