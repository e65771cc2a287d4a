"""Fixtures for the PostgreSQL-only tests: an engine on a schema of its own."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from jobdef.backends.postgres.engine import PostgresBackend

pytestmark = pytest.mark.postgres


class ManualClock:
    """A clock the test moves by hand, so lease expiry needs no sleeping."""

    def __init__(self) -> None:
        # Starts at the real time, so other processes on the real clock agree with it.
        self.now = time.time()

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> ManualClock:
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
