"""A store made by an older jobdef upgrades in place: its jobs and queue controls survive."""

from __future__ import annotations

import importlib

import pytest

from jobdef.backends import open_backend
from jobdef.backends.records import ClaimOptions
from jobdef.backends.sql import migration_files

MODULES = {"sqlite": "jobdef.backends.sqlite.engine", "postgres": "jobdef.backends.postgres.engine"}


def _first_migration_store(engine, store, clock, monkeypatch) -> int:
    """A store at the engine's first migration holding one queued job of queue ``mail``,
    paused; returns the job's id."""
    module = importlib.import_module(MODULES[engine])
    monkeypatch.setattr(module, "migration_files", lambda package: migration_files(package)[:1])
    old = open_backend(store.url, clock=clock)
    old.set_paused("mail", True)
    assert old.schema_version() == migration_files(module.MIGRATIONS)[0][0]
    old.close()
    monkeypatch.undo()
    # Stored as that release's enqueue did: today's writes the receipt, a later column.
    conn = store.connect()
    try:
        [(job_id,)] = store.raw(
            "INSERT INTO {prefix}jobs (job, queue, priority, args, state, attempt, max_attempts,"
            " run_after, created_at, updated_at) VALUES ('j', 'mail', 0, '{{\"n\": 1}}',"
            " 'queued', 0, 3, {p}, {p}, {p}) RETURNING id",
            clock.now,
            clock.now,
            clock.now,
            connection=conn,
        )
        conn.commit()
    finally:
        conn.close()
    return int(job_id)


def test_a_store_at_the_first_migration_upgrades_and_keeps_its_rows(
    engine, store, clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = importlib.import_module(MODULES[engine])
    every = migration_files(module.MIGRATIONS)
    assert len(every) > 1, "nothing to upgrade to: this test needs a second migration"
    job_id = _first_migration_store(engine, store, clock, monkeypatch)

    new = open_backend(store.url, clock=clock)
    try:
        assert new.schema_version() == every[-1][0]
        record = new.get(job_id)
        assert record is not None
        assert (record.state, dict(record.args)) == ("queued", {"n": 1})
        assert [q.paused for q in new.queues() if q.queue == "mail"] == [True]
        new.set_paused("mail", False)
        options = ClaimOptions("w1", 30.0, limit=5, queue_rates={"mail": 1.0})
        assert [r.id for r in new.claim(options)] == [job_id]
    finally:
        new.close()
