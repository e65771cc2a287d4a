"""The worker's capability checks see what the PostgreSQL engine offers."""

from __future__ import annotations

from jobdef.backends.postgres.engine import PostgresBackend
from jobdef.backends.protocol import (
    ElectsMaintainer,
    WakesWorkers,
    can_wait_for_jobs,
    holds_maintenance_lock,
)


def test_the_engine_wakes_idle_workers_and_elects_one_maintainer(
    pg_backend: PostgresBackend, postgres_url: str
) -> None:
    assert isinstance(pg_backend, WakesWorkers)
    assert isinstance(pg_backend, ElectsMaintainer)
    assert can_wait_for_jobs(pg_backend)
    with PostgresBackend(postgres_url, schema=pg_backend.schema) as other:
        assert holds_maintenance_lock(pg_backend)  # the first to ask holds it
        assert not holds_maintenance_lock(other)
