"""A store made by an older jobdef upgrades in place: its jobs and queue controls survive."""

from __future__ import annotations

import importlib
import json
import sqlite3
from pathlib import Path

import pytest

from jobdef.backends import open_backend
from jobdef.backends.records import ClaimOptions, ErrorInfo, Lease, NewJob
from jobdef.backends.sql import migration_files

MODULES = {"sqlite": "jobdef.backends.sqlite.engine", "postgres": "jobdef.backends.postgres.engine"}
TABLES = {
    "jobdef_attempts",
    "jobdef_jobs",
    "jobdef_outbox",
    "jobdef_processed_keys",
    "jobdef_queues",
    "jobdef_schema_version",
    "jobdef_slots",
    "jobdef_store",
    "jobdef_workers",
}


def _first_migration_store(engine, store, clock, monkeypatch, old_sqlite_schema) -> int:
    """A store at the first migration holding one queued job of queue ``mail``, paused;
    returns the job's id. SQLite's is written as the release of that schema wrote it:
    today's engine no longer reads bare table names."""
    module = importlib.import_module(MODULES[engine])
    if engine == "sqlite":
        path = old_sqlite_schema(Path(store.url.removeprefix("sqlite:///")), 1)
        conn = sqlite3.connect(path)
        with conn:
            cursor = conn.execute(
                "INSERT INTO jobs (job, queue, priority, args, state, max_attempts, run_after, "
                "created_at, updated_at) VALUES ('j', 'mail', 0, ?, 'queued', 3, ?, ?, ?)",
                ('{"n":1}', clock(), clock(), clock()),
            )
            conn.execute("INSERT INTO queue_state (queue, paused) VALUES ('mail', 1)")
        conn.close()
        return int(cursor.lastrowid or 0)
    monkeypatch.setattr(module, "migration_files", lambda package: migration_files(package)[:1])
    old = open_backend(store.url, clock=clock)
    [job] = old.enqueue([NewJob(job="j", args={"n": 1}, queue="mail", max_attempts=3)])
    old.set_paused("mail", True)
    assert old.schema_version() == migration_files(module.MIGRATIONS)[0][0]
    old.close()
    monkeypatch.undo()
    return job.id


def test_a_store_at_the_first_migration_upgrades_and_keeps_its_rows(
    engine, store, clock, monkeypatch: pytest.MonkeyPatch, old_sqlite_schema
) -> None:
    module = importlib.import_module(MODULES[engine])
    every = migration_files(module.MIGRATIONS)
    assert len(every) > 1, "nothing to upgrade to: this test needs a second migration"
    job_id = _first_migration_store(engine, store, clock, monkeypatch, old_sqlite_schema)

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


def _rows(path: Path, sql: str) -> list[dict]:
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    try:
        return [dict(row) for row in conn.execute(sql)]
    finally:
        conn.close()


def _error(row: dict, prefix: str) -> ErrorInfo | None:
    if row[f"{prefix}_type"] is None:
        return None
    return ErrorInfo(
        row[f"{prefix}_type"], row[f"{prefix}_message"] or "", row[f"{prefix}_traceback"] or ""
    )


def _old_attempt(row: dict) -> tuple:
    """An attempts row of the old model as (attempt, worker, started, finished, outcome, error)."""
    columns = ("attempt", "worker_id", "started_at", "finished_at", "outcome")
    return (*(row[name] for name in columns), _error(row, "error"))


def test_a_sqlite_store_of_the_previous_release_upgrades_and_loses_nothing(
    legacy_sqlite_store: Path, clock
) -> None:
    path = legacy_sqlite_store
    old_jobs = _rows(path, "SELECT * FROM jobs ORDER BY id")
    old_attempts = _rows(path, "SELECT * FROM attempts ORDER BY id")
    old_outbox = _rows(path, "SELECT * FROM outbox ORDER BY id")
    old_queues = _rows(path, "SELECT * FROM queue_state ORDER BY queue")
    old_slots = _rows(path, "SELECT * FROM job_slots")
    old_keys = _rows(path, "SELECT * FROM processed_keys")
    assert {job["state"] for job in old_jobs} == {
        "queued", "running", "done", "dead", "resolved", "cancelled"
    }  # fmt: skip

    backend = open_backend(f"sqlite:///{path}", clock=clock)
    try:
        assert backend.schema_version() == backend.latest_version()
        tables = _rows(path, "SELECT name FROM sqlite_master WHERE type = 'table'")
        assert {t["name"] for t in tables} == TABLES | {"sqlite_sequence"}

        # Every job, column by column; errors now one JSON column.
        for old in old_jobs:
            record = backend.get(old["id"])
            assert record is not None
            assert (record.job, record.queue, record.state, record.attempt) == (
                old["job"], old["queue"], old["state"], old["attempt"]
            )  # fmt: skip
            assert (record.worker_id, record.lease_until, record.run_after, record.finished_at) == (
                old["worker_id"], old["lease_until"], old["run_after"], old["finished_at"]
            )  # fmt: skip
            assert (record.note, record.slot, record.last_delay) == (
                old["note"], old["slot"], old["last_delay"]
            )  # fmt: skip
            assert (record.priority, record.idempotency_key, record.max_attempts) == (
                old["priority"], old["idempotency_key"], old["max_attempts"]
            )  # fmt: skip
            assert (record.created_at, record.updated_at) == (old["created_at"], old["updated_at"])
            assert dict(record.args) == json.loads(old["args"])
            assert record.progress == (old["progress"] and json.loads(old["progress"]))
            assert record.last_error == _error(old, "last_error")
        assert len(backend.list_jobs(limit=100)) == len(old_jobs)

        # Every attempt: finished ones as rows, the open one of a running job from the job row.
        for old in old_jobs:
            expected = [_old_attempt(a) for a in old_attempts if a["job_id"] == old["id"]]
            got = [
                (a.attempt, a.worker_id, a.started_at, a.finished_at, a.outcome, a.error)
                for a in backend.attempts(old["id"])
            ]
            assert got == expected, old
        assert all(
            row["finished_at"] is not None for row in _rows(path, "SELECT * FROM jobdef_attempts")
        )

        # Outbox, queue controls, slots and processed keys, row for row.
        assert _rows(path, "SELECT * FROM jobdef_outbox ORDER BY id") == old_outbox
        assert _rows(path, "SELECT * FROM jobdef_queues ORDER BY queue") == old_queues
        assert _rows(path, "SELECT * FROM jobdef_slots") == old_slots
        assert _rows(path, "SELECT * FROM jobdef_processed_keys") == old_keys
        assert [q.paused for q in backend.queues() if q.queue == "mail"] == [True]
        [slotted] = [j for j in old_jobs if j["slot"] is not None]
        again = NewJob(job=slotted["job"], args={}, queue="batch", slot=slotted["slot"])
        assert [(r.id, r.created) for r in backend.enqueue([again])] == [(slotted["id"], False)]
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        assert backend.record_processed_key(conn, old_keys[0]["key"], 99) is False
        conn.execute("ROLLBACK")
        conn.close()

        # Ids go on past the pruned newest job; the running jobs' leases still hold.
        [fresh] = backend.enqueue([NewJob(job="mail", args={}, queue="fresh")])
        assert fresh.id == 15
        running = [j for j in old_jobs if j["state"] == "running"]
        leases = [Lease(j["id"], j["attempt"], j["worker_id"]) for j in running]
        assert backend.complete(leases) == [True] * len(running)
        for job, lease in zip(running, leases, strict=True):
            [*_, last] = backend.attempts(job["id"])
            fence = (lease.job_id, lease.attempt, lease.worker_id)
            [opened] = [
                a for a in old_attempts if (a["job_id"], a["attempt"], a["worker_id"]) == fence
            ]
            assert (last.started_at, last.finished_at, last.outcome) == (
                opened["started_at"], clock(), "done"
            )  # fmt: skip
    finally:
        backend.close()
