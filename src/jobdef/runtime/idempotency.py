"""The processed-keys helper: make a second run of the same job change nothing.

Call :func:`first_run` inside the handler's own database transaction, before the
side effect, on the same connection as the side effect::

    with conn:                      # one transaction
        if not first_run(ctx, conn):
            return                  # an earlier run already did this work
        conn.execute("UPDATE balances SET points = points + ? ...", ...)

The key is recorded in a ``processed_keys`` table on that connection, so it
commits (or rolls back) together with the work it guards.

``connection`` is a DB-API connection (``sqlite3``, psycopg 3, psycopg2) or
Django's connection object (``django.db.connection``, ``connections["alias"]``),
inside the handler's ``transaction.atomic()``; the SQL is chosen by that
connection, not by the job store, which first_run never connects to::

    with transaction.atomic():
        if not first_run(ctx, connection):
            return
        Points.objects.create(...)
"""

from __future__ import annotations

import time
from typing import Any

from jobdef.backends import record_processed_key
from jobdef.errors import UsageError
from jobdef.runtime.context import Context


def first_run(ctx: Context, connection: Any) -> bool:
    """Record ``ctx.idempotency_key``; False when an earlier run already recorded it."""
    if ctx.idempotency_key is None:
        raise UsageError(
            f"job {ctx.job!r} has no idempotency key; add `idempotency: {{key: ...}}` to its "
            "sheet before using first_run()"
        )
    return record_key(
        ctx.database_url, dbapi_connection(connection), ctx.idempotency_key, ctx.job_id
    )


def dbapi_connection(connection: Any) -> Any:
    """The DB-API connection behind ``connection``: itself, or the one Django's connection
    wraps (read by duck typing, so this layer does not import Django).

    A Django connection outside ``transaction.atomic()`` is in autocommit: the key would
    commit before the work it guards, and a crash between them would skip the work for ever.
    """
    if not (hasattr(connection, "ensure_connection") and hasattr(connection, "in_atomic_block")):
        return connection
    if not connection.in_atomic_block:
        raise UsageError(
            "first_run() on a Django connection needs the handler's transaction: call it "
            "inside `with transaction.atomic():`, before the work it guards"
        )
    connection.ensure_connection()
    return connection.connection


def record_key(database_url: str, connection: Any, key: str, job_id: int) -> bool:
    """Record ``key`` on ``connection`` with the SQL of the database it is connected to
    (``database_url``, the job store's, only places the table on PostgreSQL): a psycopg
    handler under a SQLite store, and a sqlite3 one under PostgreSQL, work alike."""
    return record_processed_key(connection, key, job_id, now=time.time(), store_url=database_url)
