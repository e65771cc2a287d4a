"""Handlers of the embedded-worker tests: each run is first committed to a ledger.

The ledger is a SQLite file outside the job store, one row (job id, attempt,
pid) per handler invocation, committed before the handler does its work, so a
run cut short by a kill still leaves its row (as tests/runtime/ledger_handlers.py).
"""

from __future__ import annotations

import os
import sqlite3
import time

SHEET = """\
apiVersion: jobdef/v1
kind: Job
name: steady
handler: embedded_handlers:steady
max_attempts: 3
backoff: {strategy: fixed, initial: 0s, jitter: none}
timeout: 30s
on_reclaim: retry
errors: {default: retry}
args:
  ledger: {type: string}
  index: {type: integer, minimum: 0}
  seconds: {type: number}
retention: {done: 1h, dead: until_resolved}
"""


def create(path: str) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(
            "CREATE TABLE IF NOT EXISTS ledger (job INTEGER, attempt INTEGER, pid INTEGER)"
        )


def entries(path: str) -> list[tuple[int, int, int]]:
    with sqlite3.connect(path, timeout=30) as conn:
        return [tuple(row) for row in conn.execute("SELECT job, attempt, pid FROM ledger")]


def steady(ctx, ledger: str, index: int, seconds: float) -> None:
    conn = sqlite3.connect(ledger, timeout=30)
    try:
        conn.execute("PRAGMA busy_timeout = 30000")
        conn.execute(
            "INSERT INTO ledger (job, attempt, pid) VALUES (?, ?, ?)",
            (ctx.job_id, ctx.attempt, os.getpid()),
        )
        conn.commit()
    finally:
        conn.close()
    time.sleep(seconds)
