"""Handlers for the queue tests, imported by the worker's child processes by name."""

from __future__ import annotations

import os
import time
from pathlib import Path

from jobdef.runtime.context import Context

GATE_TIMEOUT = 60.0


def hold(ctx: Context, gate: str) -> None:
    """Run until the file ``gate`` exists (a slow job that the test lets finish)."""
    deadline = time.monotonic() + GATE_TIMEOUT
    while not Path(gate).exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"gate {gate} never opened")
        time.sleep(0.01)


def nap(ctx: Context, seconds: float) -> None:
    """Take a little while, so that jobs overlap when the limit lets them."""
    time.sleep(seconds)


def touch(ctx: Context, path: str) -> None:
    """Leave a mark that the job ran."""
    Path(path).write_text(str(ctx.job_id), encoding="utf-8")


def record_slot(ctx: Context) -> None:
    """Write the slot the job runs for into ``$SLOT_OUT/<job id>`` (batch jobs take no args)."""
    out = Path(os.environ["SLOT_OUT"]) / str(ctx.job_id)
    out.write_text(ctx.slot.isoformat() if ctx.slot else "none", encoding="utf-8")
