"""Numbered migrations: applied once, under an advisory lock, into the chosen schema."""

from __future__ import annotations

import multiprocessing

import pytest

from jobdef.backends.postgres.engine import MIGRATIONS, PostgresBackend
from jobdef.backends.records import NewJob
from jobdef.backends.sql import migration_files
from jobdef.errors import BackendError

from . import proc
from .helpers import query, tables_in

TABLES = {
    "jobdef_attempts",
    "jobdef_jobs",
    "jobdef_outbox",
    "jobdef_processed_keys",
    "jobdef_queues",
    "jobdef_schema_version",
    "jobdef_slots",
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
