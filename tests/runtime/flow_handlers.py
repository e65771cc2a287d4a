"""Handlers of the flow fidelity tests: each run of a step is first written to a ledger.

The ledger (``ledger_handlers``) is a SQLite file outside the job database, so a
test counts how often each step's handler really ran, killed workers included.
"""

from __future__ import annotations

import time

from ledger_handlers import record


def flow_step(
    ctx, ledger: str, step: str, *, fail: bool = False, seconds: float = 0.0, v: int = 0
) -> dict[str, int]:
    """Record the run, take ``seconds``, fail when told (every attempt); return
    ``{"v": job id}`` for the children that read it."""
    record(ledger, ctx)
    time.sleep(seconds)
    if fail:
        raise RuntimeError(f"step {step} fails as its flow says")
    return {"v": ctx.job_id}
