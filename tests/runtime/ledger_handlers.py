"""Handlers for the ledger fidelity tests: each invocation is first written to a ledger.

The ledger is a SQLite file of its own, outside the job database: one row
(job id, attempt, pid) per handler invocation, inserted and committed before
the handler does anything else, so a run that is later killed, timed out or
exits still leaves its row. A test then compares the ledger with the attempts
the queue recorded.
"""

from __future__ import annotations

import os
import sqlite3
import time

SCHEMA = "CREATE TABLE IF NOT EXISTS ledger (job INTEGER, attempt INTEGER, pid INTEGER)"


def create(path: str) -> None:
    """Create the ledger's table, before any worker starts."""
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(SCHEMA)


def record(path: str, ctx) -> None:
    """Append this invocation: one INSERT, committed; waits out other writers' locks."""
    conn = sqlite3.connect(path, timeout=30)
    try:
        conn.execute("PRAGMA busy_timeout = 30000")
        conn.execute(
            "INSERT INTO ledger (job, attempt, pid) VALUES (?, ?, ?)",
            (ctx.job_id, ctx.attempt, os.getpid()),
        )
        conn.commit()
    finally:
        conn.close()


def entries(path: str) -> list[tuple[int, int, int]]:
    """Every row of the ledger: (job id, attempt, pid)."""
    with sqlite3.connect(path, timeout=30) as conn:
        return [tuple(row) for row in conn.execute("SELECT job, attempt, pid FROM ledger")]


def quick(ctx, ledger: str, index: int = 0) -> None:
    record(ledger, ctx)


def steady(ctx, ledger: str, seconds: float = 0.05) -> None:
    """A job that takes a little while, so a worker can be killed mid-drain."""
    record(ledger, ctx)
    time.sleep(seconds)


def large(ctx, ledger: str, blob: str) -> None:
    record(ledger, ctx)
    assert len(blob) >= 1_000_000


def sleep_first(ctx, ledger: str) -> None:
    """Sleep past the sheet's 1s timeout on attempt 1; succeed after."""
    record(ledger, ctx)
    if ctx.attempt == 1:
        time.sleep(60)


def exit_first(ctx, ledger: str) -> None:
    """Exit the child process on attempt 1; succeed after."""
    record(ledger, ctx)
    if ctx.attempt == 1:
        os._exit(1)


def gated(ctx, ledger: str, gate: str) -> None:
    """Hold until the file ``gate`` exists, so a test chooses when the runs finish."""
    record(ledger, ctx)
    while not os.path.exists(gate):
        time.sleep(0.01)


def hold_first(ctx, ledger: str) -> None:
    """Hold attempt 1 (25s, within the 30s timeout) so it can be killed mid-handler."""
    record(ledger, ctx)
    if ctx.attempt == 1:
        time.sleep(25)
