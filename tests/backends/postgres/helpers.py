"""Small helpers for the PostgreSQL tests: look at the database from outside the engine."""

from __future__ import annotations

from typing import Any

import psycopg


def query(url: str, statement: str, params: Any = None) -> list[tuple[Any, ...]]:
    with psycopg.connect(url, autocommit=True) as conn:
        cursor = conn.execute(statement, params)
        return cursor.fetchall() if cursor.description else []


def tables_in(url: str, schema: str) -> set[str]:
    rows = query(url, "SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,))
    return {row[0] for row in rows}


def terminate(url: str, backend_pid: int) -> None:
    """End one server session, as an administrator or a failover would."""
    query(url, "SELECT pg_terminate_backend(%s)", (backend_pid,))
