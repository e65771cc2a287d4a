"""The processed-keys helper: make a second run of the same job change nothing.

Call :func:`first_run` inside the handler's own database transaction, before the
side effect, on the same connection as the side effect::

    with conn:                      # one transaction
        if not first_run(ctx, conn):
            return                  # an earlier run already did this work
        conn.execute("UPDATE balances SET points = points + ? ...", ...)

The key is recorded in a ``processed_keys`` table on that connection, so it
commits (or rolls back) together with the work it guards.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from jobdef.backends import open_backend
from jobdef.backends.protocol import Backend
from jobdef.errors import UsageError
from jobdef.runtime.context import Context


@cache
def _engine(database_url: str) -> Backend:
    """The job store's engine, opened once per process: it knows its dialect's SQL."""
    return open_backend(database_url, create=False, migrate=False)


def first_run(ctx: Context, connection: Any) -> bool:
    """Record ``ctx.idempotency_key``; False when an earlier run already recorded it."""
    if ctx.idempotency_key is None:
        raise UsageError(
            f"job {ctx.job!r} has no idempotency key; add `idempotency: {{key: ...}}` to its "
            "sheet before using first_run()"
        )
    return record_key(ctx.database_url, connection, ctx.idempotency_key, ctx.job_id)


def record_key(database_url: str, connection: Any, key: str, job_id: int) -> bool:
    """Record ``key`` on ``connection`` with the SQL of ``database_url``'s engine."""
    return bool(_engine(database_url).record_processed_key(connection, key, job_id))
