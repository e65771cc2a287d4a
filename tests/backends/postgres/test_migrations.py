"""Numbered migrations: applied once, under an advisory lock, into the chosen schema; a
store of the previous release upgrades to the schema a new store gets, keeping its jobs."""

from __future__ import annotations

import json
import multiprocessing
from typing import Any

import pytest

from jobdef.backends.postgres import engine as engine_module
from jobdef.backends.postgres.engine import MIGRATIONS, PostgresBackend
from jobdef.backends.records import ClaimOptions, ErrorInfo, NewJob
from jobdef.backends.rows import error_text
from jobdef.backends.sql import migration_files
from jobdef.errors import BackendError
from support import ManualClock

from . import proc
from .helpers import query, tables_in

TABLES = {
    "jobdef_attempts",
    "jobdef_flows",
    "jobdef_jobs",
    "jobdef_leases",
    "jobdef_outbox",
    "jobdef_processed_keys",
    "jobdef_queues",
    "jobdef_schema_version",
    "jobdef_slots",
    "jobdef_store",
    "jobdef_workers",
}


def test_migrate_creates_every_table_in_the_schema_and_records_the_version(
    postgres_url: str, postgres_schema: str
) -> None:
    with PostgresBackend(postgres_url, schema=postgres_schema) as backend:
        assert backend.schema_version() == 0
        backend.migrate()
        assert backend.schema_version() == backend.latest_version()
    assert tables_in(postgres_url, postgres_schema) == TABLES


def test_migrate_twice_applies_each_migration_once(pg_backend: PostgresBackend) -> None:
    pg_backend.migrate()
    rows = query(
        pg_backend.conninfo,
        f'SELECT version FROM "{pg_backend.schema}".jobdef_schema_version ORDER BY version',
    )
    assert [row[0] for row in rows] == [n for n, _name, _sql in migration_files(MIGRATIONS)]


def test_the_attempts_name_their_job_without_a_foreign_key(pg_backend: PostgresBackend) -> None:
    """Migration 0014: no key is checked at every attempt insert (each is written under
    its job's lock); prune deletes a job's attempts itself (test_housekeeping)."""
    keys = query(
        pg_backend.conninfo,
        "SELECT conname FROM pg_constraint WHERE contype = 'f' AND conrelid = %s::regclass",
        (f'"{pg_backend.schema}".jobdef_attempts',),
    )
    assert keys == []


def test_the_jobs_by_state_index_leaves_out_running_and_done_rows(
    pg_backend: PostgresBackend,
) -> None:
    """Migration 0015: a claim and a completion each write a new version of the job's
    row, which no longer gets an entry in the index of jobs by state; the listings of
    one state read running jobs through jobdef_jobs_running and done ones through the
    primary key (test_housekeeping lists them)."""
    rows = query(
        pg_backend.conninfo,
        "SELECT c.relname, pg_get_expr(i.indpred, i.indrelid) FROM pg_index i "
        "JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = %s::regclass",
        (f'"{pg_backend.schema}".jobdef_jobs',),
    )
    predicates = dict(rows)
    assert "jobdef_jobs_by_state" not in predicates
    assert predicates["jobdef_jobs_state_listing"] == (
        "(state <> ALL (ARRAY['running'::text, 'done'::text]))"
    )


def test_the_args_and_receipt_indexes_leave_out_running_rows(
    pg_backend: PostgresBackend,
) -> None:
    """Migration 0017: a claim's version of a job's row gets entries only in the primary
    key and jobdef_jobs_running; the args search and the receipt lookup find running
    jobs through the latter (test_receipts, test_dashboard_args_rate)."""
    rows = query(
        pg_backend.conninfo,
        "SELECT c.relname, pg_get_expr(i.indpred, i.indrelid), i.indisunique FROM pg_index i "
        "JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = %s::regclass",
        (f'"{pg_backend.schema}".jobdef_jobs',),
    )
    indexes = {name: (predicate, unique) for name, predicate, unique in rows}
    assert "jobdef_jobs_args" not in indexes
    assert "jobdef_jobs_receipt" not in indexes
    assert indexes["jobdef_jobs_args_not_running"] == ("(state <> 'running'::text)", False)
    assert indexes["jobdef_jobs_receipt_not_running"] == (
        "((receipt IS NOT NULL) AND (state <> 'running'::text))",
        True,
    )


# What docs/upgrading.md says to build CONCURRENTLY before a migration that builds an
# index on a large table, and the indexes that migration drops: its version, then
# (index, its build) and the dropped ones. `{schema}` is the quoted schema.
PREBUILT = {
    15: (
        [
            (
                "jobdef_jobs_state_listing",
                "CREATE INDEX CONCURRENTLY jobdef_jobs_state_listing ON {schema}.jobdef_jobs "
                "(state, id) WHERE state NOT IN ('running', 'done')",
            )
        ],
        ["jobdef_jobs_by_state"],
    ),
    17: (
        [
            (
                "jobdef_jobs_args_not_running",
                "CREATE INDEX CONCURRENTLY jobdef_jobs_args_not_running ON {schema}.jobdef_jobs "
                "USING gin (args jsonb_path_ops) WHERE state <> 'running'",
            ),
            (
                "jobdef_jobs_receipt_not_running",
                "CREATE UNIQUE INDEX CONCURRENTLY jobdef_jobs_receipt_not_running "
                "ON {schema}.jobdef_jobs (receipt) "
                "WHERE receipt IS NOT NULL AND state <> 'running'",
            ),
        ],
        ["jobdef_jobs_args", "jobdef_jobs_receipt"],
    ),
}


@pytest.mark.parametrize("version", sorted(PREBUILT))
def test_a_migration_keeps_the_indexes_an_operator_handled_beforehand(
    postgres_url: str, postgres_schema: str, monkeypatch: pytest.MonkeyPatch, version: int
) -> None:
    """docs/upgrading.md's path for a large table: the new indexes built CONCURRENTLY
    and the old ones dropped CONCURRENTLY before the upgrade; the migration keeps the
    ones and does not miss the others. A concurrent build that failed (an invalid
    index) is built again."""
    built, dropped = PREBUILT[version]
    before = [m for m in migration_files(MIGRATIONS) if m[0] < version]
    schema = f'"{postgres_schema}"'
    found = "SELECT indexrelid::int, indisvalid FROM pg_index WHERE indexrelid = to_regclass(%s)"

    def states() -> list[Any]:
        return [query(postgres_url, found, (f"{schema}.{name}",)) for name, _build in built]

    with monkeypatch.context() as patched:
        patched.setattr(engine_module, "migration_files", lambda package: before)
        with PostgresBackend(postgres_url, schema=postgres_schema) as backend:
            backend.migrate()
    for _name, build in built:
        query(postgres_url, build.format(schema=schema))
    for name in dropped:
        query(postgres_url, f"DROP INDEX CONCURRENTLY {schema}.{name}")
    prebuilt = states()
    assert all(len(rows) == 1 for rows in prebuilt)
    with PostgresBackend(postgres_url, schema=postgres_schema) as backend:
        backend.migrate()
        assert backend.schema_version() == backend.latest_version()
    assert states() == prebuilt

    invalidate = "UPDATE pg_index SET indisvalid = false WHERE indexrelid = %s"
    failed = []
    for name, build in built:
        query(postgres_url, f"DROP INDEX {schema}.{name}")
        query(postgres_url, build.format(schema=schema))
        [index] = query(postgres_url, found, (f"{schema}.{name}",))
        query(postgres_url, invalidate, (index[0],))  # as a concurrent build that failed
        failed.append(index)
    query(
        postgres_url,
        f"DELETE FROM {schema}.jobdef_schema_version WHERE version >= %s",
        (version,),
    )
    with PostgresBackend(postgres_url, schema=postgres_schema) as backend:
        backend.migrate()
    for [rebuilt], gone in zip(states(), failed, strict=True):
        assert rebuilt[1] is True
        assert rebuilt[0] != gone[0]
    with PostgresBackend(postgres_url, schema=postgres_schema) as backend:
        [job] = backend.enqueue([NewJob("j", {}, "q")])
        assert [r.id for r in backend.list_jobs(state="queued")] == [job.id]
        found_job = backend.find_receipt(job.token)
        assert found_job is not None
        assert found_job.id == job.id


def test_two_processes_migrating_at_once_both_succeed(
    postgres_url: str, postgres_schema: str
) -> None:
    context = multiprocessing.get_context("spawn")
    with context.Pool(4) as pool:
        versions = pool.starmap(proc.migrate, [(postgres_url, postgres_schema)] * 4)
    assert versions == [migration_files(MIGRATIONS)[-1][0]] * 4
    assert tables_in(postgres_url, postgres_schema) == TABLES


def test_migrate_creates_a_missing_schema(postgres_url: str, postgres_schema: str) -> None:
    schema = postgres_schema + "_new"
    try:
        with PostgresBackend(postgres_url, schema=schema) as backend:
            backend.migrate()
            assert backend.enqueue([NewJob("a", {}, "default")])[0].created
        assert tables_in(postgres_url, schema) == TABLES
    finally:
        query(postgres_url, f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def test_two_schemas_in_one_database_keep_their_jobs_apart(
    postgres_url: str, postgres_schema: str
) -> None:
    other = postgres_schema + "_b"
    try:
        with (
            PostgresBackend(postgres_url, schema=postgres_schema) as first,
            PostgresBackend(f"{postgres_url}?schema={other}") as second,
        ):
            first.migrate()
            second.migrate()
            first.enqueue([NewJob("a", {}, "default"), NewJob("a", {}, "default")])
            second.enqueue([NewJob("b", {}, "default")])
            assert [r.job for r in first.list_jobs()] == ["a", "a"]
            assert [r.job for r in second.list_jobs()] == ["b"]
    finally:
        query(postgres_url, f'DROP SCHEMA IF EXISTS "{other}" CASCADE')


def test_using_an_unmigrated_schema_says_to_run_db_upgrade(
    postgres_url: str, postgres_schema: str
) -> None:
    with (
        PostgresBackend(postgres_url, schema=postgres_schema) as backend,
        pytest.raises(BackendError, match="run `jobdef db upgrade`"),
    ):
        backend.stats()


def test_an_operator_command_on_a_schema_without_tables_creates_nothing(
    postgres_url: str, postgres_schema: str
) -> None:
    from jobdef.backends import open_backend

    with pytest.raises(BackendError, match=r"no jobdef tables in schema .*jobdef db upgrade"):
        open_backend(f"{postgres_url}?schema={postgres_schema}", create=False)
    assert tables_in(postgres_url, postgres_schema) == set()


# The columns each table has at the newest migration: what the engine's queries
# are written for. A migration that adds or drops a column updates this too.
COLUMNS = {
    "jobdef_attempts": {
        "id",
        "job_id",
        "attempt",
        "worker_id",
        "started_at",
        "finished_at",
        "outcome",
        "error",
    },
    "jobdef_jobs": {
        "id",
        "job",
        "queue",
        "priority",
        "args",
        "state",
        "attempt",
        "max_attempts",
        "idempotency_key",
        "run_after",
        "created_at",
        "updated_at",
        "started_at",
        "finished_at",
        "worker_id",
        "lease_until",
        "last_error",
        "last_delay",
        "progress",
        "note",
        "slot",
        "trace_context",
        "positional_args",
        "result",
        "receipt",
        "watched",
        "flow_id",
        "step",
    },
    "jobdef_flows": {
        "id",
        "name",
        "receipt",
        "idempotency_key",
        "args",
        "graph",
        "state",
        "deadline",
        "created_at",
        "finished_at",
        "note",
    },
    "jobdef_leases": {"name", "holder", "generation", "expires_at"},
    "jobdef_outbox": {
        "id",
        "message_id",
        "channel",
        "event",
        "job",
        "payload",
        "attempts",
        "next_at",
        "created_at",
        "lease_until",
        "delivered_at",
        "last_error",
    },
    "jobdef_processed_keys": {"key", "job_id", "created_at"},
    "jobdef_queues": {"queue", "paused", "updated_at", "tokens", "tokens_at"},
    "jobdef_schema_version": {"version", "name", "applied_at"},
    "jobdef_slots": {"job", "slot", "job_id"},
    "jobdef_store": {"id", "created_at"},
    "jobdef_workers": {
        "id",
        "host",
        "pid",
        "queues",
        "concurrency",
        "lease_seconds",
        "version",
        "started_at",
        "last_beat",
        "wake_channel",
    },
}


def schema_of(url: str, schema: str) -> dict[str, Any]:
    """Columns (type, null, default), indexes and constraints of ``schema``, comparable
    between two schemas (the schema's own name is left out)."""
    columns = query(
        url,
        "SELECT table_name, column_name, data_type, is_nullable, column_default"
        " FROM information_schema.columns WHERE table_schema = %s",
        (schema,),
    )
    indexes = query(
        url,
        "SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = %s",
        (schema,),
    )
    constraints = query(
        url,
        "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint"
        " WHERE connamespace = %s::regnamespace",
        (schema,),
    )
    quoted = f'"{schema}".'

    def plain(value: Any) -> Any:
        return (
            value.replace(quoted, "").replace(schema + ".", "") if isinstance(value, str) else value
        )

    return {
        "columns": sorted(tuple(map(plain, row)) for row in columns),
        "indexes": sorted(tuple(map(plain, row)) for row in indexes),
        "constraints": sorted(tuple(map(plain, row)) for row in constraints),
    }


def test_the_migrations_give_the_columns_the_queries_are_written_for(
    pg_backend: PostgresBackend,
) -> None:
    rows = query(
        pg_backend.conninfo,
        "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = %s",
        (pg_backend.schema,),
    )
    found: dict[str, set[str]] = {}
    for table, column in rows:
        found.setdefault(table, set()).add(column)
    assert found == COLUMNS


# The newest migration of the previous release: its stores still have the
# jobdef_queues.concurrency column (0003 drops it) and no lease table (0004).
PREVIOUS_RELEASE = 2


def _previous_release(monkeypatch: pytest.MonkeyPatch) -> int:
    """Make the engine see only the migrations the previous release shipped; return
    that release's version."""
    shipped = [m for m in migration_files(MIGRATIONS) if m[0] <= PREVIOUS_RELEASE]
    monkeypatch.setattr(engine_module, "migration_files", lambda package: shipped)
    return shipped[-1][0]


def test_a_store_of_the_previous_release_upgrades_without_losing_a_job(
    postgres_url: str, postgres_schema: str, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Jobs in every state, their attempts, a paused queue, a slot and an outbox message,
    written by the previous release, survive the upgrade; the upgraded schema is the one
    a new store gets."""
    url = f"{postgres_url}?schema={postgres_schema}"
    previous = _previous_release(monkeypatch)
    with PostgresBackend(url, clock=clock) as old:
        old.migrate()
        assert old.schema_version() == previous
        ids = {state: _job_in(old, state) for state in STATES}
        slotted = _enqueue_as_before(old, "cron", {}, "default", slot=clock.now)
        old.set_paused("mail", True)
        query(old.conninfo, f'UPDATE "{postgres_schema}".jobdef_queues SET concurrency = 3')
        before = {job_id: _snapshot(old, job_id) for job_id in ids.values()}
        running = old.get(ids["running"])
        outbox = old.outbox_pending()
    monkeypatch.undo()

    with PostgresBackend(url, clock=clock) as new:
        new.migrate()
        assert new.schema_version() == new.latest_version()
        assert {job_id: _snapshot(new, job_id) for job_id in ids.values()} == before
        assert new.outbox_pending() == outbox
        assert new.last_slot("cron") == clock.now
        assert [q.paused for q in new.queues() if q.queue == "mail"] == [True]
        # A lease handed out before the upgrade still finishes its job.
        assert running is not None
        assert new.complete([running.lease]) == [True]
        new.set_paused("mail", False)
        claimed = new.claim(ClaimOptions("w2", 30.0, limit=10, queue_limits={"mail": 1}))
        assert sorted(r.id for r in claimed) == [ids["queued"], slotted]

    fresh = postgres_schema + "_fresh"
    try:
        with PostgresBackend(postgres_url, schema=fresh) as backend:
            backend.migrate()
        assert schema_of(postgres_url, postgres_schema) == schema_of(postgres_url, fresh)
    finally:
        query(postgres_url, f'DROP SCHEMA IF EXISTS "{fresh}" CASCADE')


STATES = ("queued", "running", "retried", "done", "dead", "resolved", "cancelled")


def _job_in(backend: PostgresBackend, state: str) -> int:
    """A job of queue ``mail`` brought to ``state`` through the verbs, or as the previous
    release wrote it where a verb writes a column that release's store lacks (``retried``:
    queued again after a failed attempt, in the future)."""
    queue = "mail" if state == "queued" else state
    job_id = _enqueue_as_before(backend, "j", {"state": state}, queue)
    if state in ("queued", "cancelled"):
        if state == "cancelled":
            _as_before(
                backend,
                "UPDATE {schema}.jobdef_jobs SET state = 'cancelled', finished_at = %(now)s,"
                " updated_at = %(now)s WHERE id = %(id)s AND state = 'queued'",
                job_id,
            )
        return job_id
    [record] = backend.claim(ClaimOptions("w1", 30.0, queues=[state]))
    error = ErrorInfo("ValueError", "bad", "Traceback ...")
    if state == "done":
        _complete_as_before(backend, record.id)
    elif state == "retried":
        assert backend.retry(record.lease, error, backend.clock() + 3600, 3600)
    elif state in ("dead", "resolved"):
        _bury_as_before(backend, record.id, error)
        _as_before(  # the message the bury wrote, as the previous release did
            backend,
            "INSERT INTO {schema}.jobdef_outbox (message_id, channel, event, job, payload,"
            " next_at, created_at) VALUES ('dead:' || %(id)s, 'ops', 'dead', 'j',"
            " jsonb_build_object('job_id', %(id)s), %(now)s, %(now)s)",
            job_id,
        )
        if state == "resolved":
            assert backend.resolve(job_id, "handled by hand")
    return job_id


def _as_before(backend: PostgresBackend, statement: str, job_id: int) -> list[tuple[Any, ...]]:
    """Run ``statement`` (its tables named ``{schema}.``) as the previous release would,
    with ``%(id)s`` the job's id and ``%(now)s`` the engine's clock."""
    schema = f'"{backend.schema}"'
    params = {"now": backend.clock(), "id": job_id}
    return query(backend.conninfo, statement.replace("{schema}", schema), params)


def _enqueue_as_before(
    backend: PostgresBackend, job: str, args: dict[str, Any], queue: str, slot: float | None = None
) -> int:
    """Store a queued job as the previous release did: this engine's enqueue also writes
    the job's receipt, a column that release's store does not have yet."""
    schema = f'"{backend.schema}"'
    now = backend.clock()
    [(job_id,)] = query(
        backend.conninfo,
        f"INSERT INTO {schema}.jobdef_jobs (job, queue, priority, args, state, attempt,"
        " max_attempts, run_after, created_at, updated_at, slot)"
        " VALUES (%s, %s, 0, %s::jsonb, 'queued', 0, 3, %s, %s, %s, %s) RETURNING id",
        (job, queue, json.dumps(args), now, now, now, slot),
    )
    if slot is not None:
        query(
            backend.conninfo,
            f"INSERT INTO {schema}.jobdef_slots (job, slot, job_id) VALUES (%s, %s, %s)",
            (job, slot, job_id),
        )
    return int(job_id)


def _bury_as_before(backend: PostgresBackend, job_id: int, error: ErrorInfo) -> None:
    """Bury a running job as the previous release did: this engine's bury also reads
    whether anybody waits for the job, a column that release's store does not have yet."""
    schema = f'"{backend.schema}"'
    query(
        backend.conninfo,
        f"WITH moved AS (UPDATE {schema}.jobdef_jobs"
        " SET state = 'dead', finished_at = %(now)s, last_error = %(error)s::jsonb,"
        " lease_until = NULL, updated_at = %(now)s"
        " WHERE id = %(id)s AND state = 'running' RETURNING id, attempt, worker_id, started_at)"
        f" INSERT INTO {schema}.jobdef_attempts"
        " (job_id, attempt, worker_id, started_at, finished_at, outcome, error)"
        " SELECT id, attempt, worker_id, started_at, %(now)s, 'dead', %(error)s::jsonb FROM moved",
        {"now": backend.clock(), "id": job_id, "error": error_text(error)},
    )
    assert backend.get(job_id).state == "dead"


def _complete_as_before(backend: PostgresBackend, job_id: int) -> None:
    """Finish a running job as the previous release did: this engine's completion also
    writes the job's result, a column that release's store does not have yet."""
    schema = f'"{backend.schema}"'
    query(
        backend.conninfo,
        f"WITH finished AS (UPDATE {schema}.jobdef_jobs"
        " SET state = 'done', finished_at = %(now)s, lease_until = NULL, updated_at = %(now)s"
        " WHERE id = %(id)s AND state = 'running' RETURNING id, attempt, worker_id, started_at)"
        f" INSERT INTO {schema}.jobdef_attempts"
        " (job_id, attempt, worker_id, started_at, finished_at, outcome)"
        " SELECT id, attempt, worker_id, started_at, %(now)s, 'done' FROM finished",
        {"now": backend.clock(), "id": job_id},
    )
    assert backend.get(job_id).state == "done"


def _snapshot(backend: PostgresBackend, job_id: int) -> tuple[Any, ...]:
    return (backend.get(job_id), backend.attempts(job_id))
