"""The processed-keys helper: make a second run of the same job change nothing.

Call :func:`first_run` inside the handler's own database transaction, before the
side effect, on the same connection as the side effect::

    with conn:                      # one transaction
        if not first_run(ctx, conn):
            return                  # an earlier run already did this work
        conn.execute("UPDATE balances SET points = points + ? ...", ...)

The key is recorded in a ``processed_keys`` table on that connection, so it
commits (or rolls back) together with the work it guards.

``connection`` is a DB-API connection (``sqlite3``, psycopg 3) or Django's
connection object (``django.db.connection``, ``connections["alias"]``), inside
the handler's ``transaction.atomic()``::

    with transaction.atomic():
        if not first_run(ctx, connection):
            return
        Points.objects.create(...)
"""

from __future__ import annotations

import threading
from typing import Any

from jobdef.backends import open_backend
from jobdef.backends.protocol import Backend
from jobdef.errors import UsageError
from jobdef.runtime.context import Context

# The job store's engines first_run opened, one per URL, kept for the process's life
# (a worker's children call first_run for every job) until close_engines().
_ENGINES: dict[str, Backend] = {}
_ENGINES_LOCK = threading.Lock()


def _engine(database_url: str) -> Backend:
    """The job store's engine, opened once per process: it knows its dialect's SQL."""
    with _ENGINES_LOCK:
        engine = _ENGINES.get(database_url)
        if engine is None:
            engine = _ENGINES[database_url] = open_backend(
                database_url, create=False, migrate=False
            )
        return engine


def close_engines() -> None:
    """Close every engine :func:`first_run` opened in this process, and forget them: a
    later call opens its engine again. For a process that outlives its stores (a test
    session); a worker never needs it."""
    with _ENGINES_LOCK:
        engines = list(_ENGINES.values())
        _ENGINES.clear()
    for engine in engines:
        engine.close()


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
    """Record ``key`` on ``connection`` with the SQL of ``database_url``'s engine."""
    return bool(_engine(database_url).record_processed_key(connection, key, job_id))
