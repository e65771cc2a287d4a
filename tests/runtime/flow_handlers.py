"""Handlers of the flow fidelity tests: each run of a step is first written to a ledger.

The ledger (``ledger_handlers``) is a SQLite file outside the job database, so a
test counts how often each step's handler really ran, killed workers included.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from ledger_handlers import record


def flow_step(
    ctx,
    ledger: str,
    step: str,
    *,
    fail: bool = False,
    seconds: float = 0.0,
    v: int = 0,
    marks: str = "",
    linger: float = 0.0,
) -> dict[str, int]:
    """Record the run, take ``seconds``, fail when told (every attempt); return
    ``{"v": job id}`` for the children that read it. Given a folder ``marks``, the
    files ``<job id>.started`` and ``<job id>.finished`` say that the handler began
    and that its sleep ended (a handler stopped in between never writes the second);
    it returns ``linger`` seconds after the second."""
    record(ledger, ctx)
    if marks:
        Path(marks, f"{ctx.job_id}.started").write_text(str(os.getpid()), "utf-8")
    time.sleep(seconds)
    if marks:
        Path(marks, f"{ctx.job_id}.finished").write_text(str(os.getpid()), "utf-8")
    time.sleep(linger)
    if fail:
        raise RuntimeError(f"step {step} fails as its flow says")
    return {"v": ctx.job_id}
