"""``award_member_points``: add points to a member's balance, exactly once per order.

The balance lives in a SQLite file of its own (``<data_dir>/members.db``), the
"application database". The award and the processed key commit in one
transaction through :func:`jobdef.runtime.first_run`, so a second run of the
same job (after a worker died between the award and reporting it) changes
nothing. ``$JOBDEF_DEMO_POINTS_PAUSE=S`` makes the first attempt pause S seconds
after it committed, so the demo can kill its worker at exactly that moment.
"""

from __future__ import annotations

import os
import sqlite3
import time

from jobdef.examples import data_dir
from jobdef.examples.errors import MemberClosed
from jobdef.runtime.context import Context
from jobdef.runtime.idempotency import first_run

CLOSED_MEMBERS = {9}


def members_db() -> sqlite3.Connection:
    conn = sqlite3.connect(data_dir() / "members.db", timeout=30)
    conn.execute(
        "CREATE TABLE IF NOT EXISTS balances (member_id INTEGER PRIMARY KEY, points INTEGER)"
    )
    return conn


def balance(member_id: int) -> int:
    conn = members_db()
    try:
        row = conn.execute(
            "SELECT points FROM balances WHERE member_id = ?", (member_id,)
        ).fetchone()
    finally:
        conn.close()
    return row[0] if row else 0


def award_member_points(ctx: Context, order_id: int, member_id: int, points: int) -> None:
    if member_id in CLOSED_MEMBERS:
        raise MemberClosed(f"member {member_id} closed their account")
    conn = members_db()
    try:
        with conn:  # one transaction: the key and the award commit together
            if not first_run(ctx, conn):
                ctx.logger.info("order %s already awarded; nothing to do", order_id)
                return
            conn.execute(
                "INSERT INTO balances (member_id, points) VALUES (?, ?) "
                "ON CONFLICT (member_id) DO UPDATE SET points = points + excluded.points",
                (member_id, points),
            )
    finally:
        conn.close()
    pause = float(os.environ.get("JOBDEF_DEMO_POINTS_PAUSE", "0"))
    if pause and ctx.attempt == 1:
        time.sleep(pause)
