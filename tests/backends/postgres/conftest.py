"""Fixtures for the PostgreSQL-only tests: an engine on a schema of its own."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from jobdef.backends.postgres.engine import PostgresBackend
from support import ManualClock


@pytest.fixture
def clock() -> ManualClock:
    # Starts at the real time, so other processes on the real clock agree with it.
    return ManualClock()


@pytest.fixture
def pg_backend(
    postgres_url: str, postgres_schema: str, clock: ManualClock
) -> Iterator[PostgresBackend]:
    backend = PostgresBackend(postgres_url, schema=postgres_schema, clock=clock)
    backend.migrate()
    try:
        yield backend
    finally:
        backend.close()
