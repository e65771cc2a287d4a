"""Result retention as a maintenance service, on an injected clock, on both engines: a
done job's stored result is cleared once ``result.retention`` has passed since it
ended (the row stays until ``retention.done``), in bounded batches, and only for the
jobs whose results go before their rows."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from runtime_workers import HERE

from jobdef.backends import open_backend
from jobdef.backends.protocol import Backend
from jobdef.backends.records import ClaimOptions, NewJob, ResultRetention
from jobdef.policy.registry import Registry
from jobdef.runtime.maintenance import MAINTENANCE, MaintenanceContext
from jobdef.runtime.maintenance.results import ResultExpirer, result_retentions
from jobdef.sheets.pipeline import load_registry
from support import ManualClock
from support.stores import ENGINES, engine_db_url

SHEETS = HERE / "result_sheets"
START = 1_700_000_000.0


@pytest.fixture(params=ENGINES)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return engine_db_url(request, tmp_path)


@pytest.fixture
def registry() -> Registry:
    return load_registry([SHEETS])


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture
def store(url: str, clock: ManualClock) -> Iterator[Backend]:
    opened = open_backend(url, clock=clock)
    try:
        yield opened
    finally:
        opened.close()


def _done(store: Backend, job: str, values: list[object]) -> list[int]:
    """Jobs of ``job`` ended done now, each with its value as its result."""
    store.enqueue([NewJob(job, {"value": v}, "default", max_attempts=2) for v in values])
    claimed = store.claim(ClaimOptions("w", 30, limit=len(values)))
    results = {r.id: f'{{"total": {i}}}' for i, r in enumerate(claimed)}
    assert all(store.complete([r.lease for r in claimed], None, results))
    return [r.id for r in claimed]


def test_the_worker_runs_the_result_expirer(registry: Registry) -> None:
    assert ResultExpirer in MAINTENANCE
    # Only `kept` has a result.retention (1h) shorter than its retention.done (30d); the
    # others' results live as long as their rows, which pruning removes.
    assert result_retentions(registry) == [ResultRetention("kept", 3600.0)]


def test_results_are_cleared_once_their_retention_passed_and_rows_stay(
    store: Backend, registry: Registry, clock: ManualClock
) -> None:
    ctx = MaintenanceContext(store, registry, "maint", clock, random.Random(1))
    expirer = ResultExpirer(ctx, batch_size=2)  # several batches
    early = _done(store, "kept", [1, 2, 3, 4, 5])
    clock.advance(1800)
    late = _done(store, "kept", [6])
    other = _done(store, "dropped", [7])  # no result.retention: kept as long as its row
    clock.advance(1800)
    assert expirer.tick(clock.now) == 0  # exactly an hour: not older than it yet
    assert all(store.get(i).result is not None for i in early)
    clock.advance(1)
    assert expirer.tick(clock.now) == 5
    for job_id in early:
        record = store.get(job_id)
        assert record is not None
        assert (record.state, record.result) == ("done", None)
    assert store.get(late[0]).result == {"total": 0}
    assert store.get(other[0]).result == {"total": 0}
    clock.advance(1800)
    assert expirer.tick(clock.now) == 1
    assert store.get(late[0]).result is None
    assert store.get(other[0]).result == {"total": 0}
    assert expirer.tick(clock.now) == 0


def test_clearing_reads_only_rows_that_have_a_result_on_sqlite(tmp_path: Path) -> None:
    """SQLite's statement names the index (PostgreSQL's planner picks one itself)."""
    import sqlite3

    path = tmp_path / "jobs.db"
    open_backend(f"sqlite:///{path}").close()
    conn = sqlite3.connect(path)
    try:
        plan = conn.execute(
            "EXPLAIN QUERY PLAN SELECT id FROM jobdef_jobs INDEXED BY jobdef_jobs_results "
            "WHERE job = 'kept' AND result IS NOT NULL AND finished_at < 1 LIMIT 10"
        ).fetchall()
    finally:
        conn.close()
    assert "jobdef_jobs_results" in str(plan)
