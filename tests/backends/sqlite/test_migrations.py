"""SQLite migrations: all or nothing, beside an application's tables, from any old store."""

from __future__ import annotations

import multiprocessing
import re
import sqlite3
from pathlib import Path

import pytest

from jobdef.backends import open_backend, schema_status
from jobdef.backends.sql import migration_files
from jobdef.backends.sqlite import engine
from jobdef.backends.sqlite.engine import MIGRATIONS
from jobdef.errors import BackendError

LATEST = migration_files(MIGRATIONS)[-1][0]


def _query(path: Path, sql: str) -> list[tuple]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def _tables(path: Path) -> set[str]:
    rows = _query(path, "SELECT name FROM sqlite_master WHERE type = 'table'")
    return {name for (name,) in rows} - {"sqlite_sequence"}


def _schema(path: Path) -> dict[str, object]:
    """Every table's columns and every index's columns and condition, by name."""
    conn = sqlite3.connect(path)
    try:
        shape: dict[str, object] = {}
        for kind, name, sql in conn.execute("SELECT type, name, sql FROM sqlite_master"):
            if kind == "table":
                shape[name] = conn.execute(f"PRAGMA table_xinfo('{name}')").fetchall()
            elif kind == "index":
                where = re.search(r"\bWHERE\b(.*)$", sql or "", re.S)
                condition = " ".join(where.group(1).split()) if where else None
                shape[name] = (conn.execute(f"PRAGMA index_xinfo('{name}')").fetchall(), condition)
        return shape
    finally:
        conn.close()


def test_a_new_store_starts_from_the_baseline_which_matches_every_migration_applied(
    tmp_path: Path, old_sqlite_schema
) -> None:
    new = tmp_path / "new.db"
    open_backend(f"sqlite:///{new}").close()
    migrated = old_sqlite_schema(tmp_path / "migrated.db", 3)
    open_backend(f"sqlite:///{migrated}").close()
    assert _schema(new) == _schema(migrated)
    applied = _query(new, "SELECT version, name FROM jobdef_schema_version ORDER BY version")
    assert applied == [(number, name) for number, name, _ in migration_files(MIGRATIONS)]


def test_a_failing_migration_leaves_the_store_at_the_version_before_it(
    legacy_sqlite_store: Path,
) -> None:
    path = legacy_sqlite_store
    before = {table: _query(path, f"SELECT * FROM {table}") for table in _tables(path)}
    # A table of the application's holds a name 0004 needs, late in the migration:
    # the jobs and attempts have been copied and the old tables dropped by then.
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE jobdef_outbox (id INTEGER PRIMARY KEY)")
    with pytest.raises(BackendError) as failed:
        open_backend(f"sqlite:///{path}")
    assert str(failed.value) == (
        f"migration 0004_jobdef_prefix.sql failed on {path}: there is already another table "
        "or index with this name: jobdef_outbox; nothing of it was applied, the database "
        "stays at version 3"
    )
    assert _tables(path) == set(before) | {"jobdef_outbox"}
    assert {table: _query(path, f"SELECT * FROM {table}") for table in before} == before
    assert schema_status(f"sqlite:///{path}").current == 3

    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE jobdef_outbox")
    open_backend(f"sqlite:///{path}").close()
    assert schema_status(f"sqlite:///{path}").current == LATEST


def test_a_later_migration_that_fails_half_way_applies_none_of_its_statements(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'jobs.db'}"
    open_backend(url).close()
    broken = (LATEST + 1, f"{LATEST + 1:04d}_broken.sql", "CREATE TABLE jobdef_x (a);\nNOT SQL;\n")
    monkeypatch.setattr(engine, "migration_files", lambda p: [*migration_files(p), broken])
    with pytest.raises(BackendError, match=rf"stays at version {LATEST}$"):
        open_backend(url)
    assert "jobdef_x" not in _tables(tmp_path / "jobs.db")
    assert schema_status(url).current == LATEST


def test_an_application_table_named_schema_version_is_not_taken_for_jobdefs(
    tmp_path: Path,
) -> None:
    path = tmp_path / "app.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE schema_version (version INTEGER, description TEXT)")
        conn.execute("INSERT INTO schema_version VALUES (12, 'the app at 12')")
    assert schema_status(f"sqlite:///{path}").current == 0
    open_backend(f"sqlite:///{path}").close()
    assert schema_status(f"sqlite:///{path}").current == LATEST
    assert _query(path, "SELECT * FROM schema_version") == [(12, "the app at 12")]


def test_an_open_attempt_row_its_job_no_longer_runs_is_kept_as_it_was(
    legacy_sqlite_store: Path,
) -> None:
    path = legacy_sqlite_store
    with sqlite3.connect(path) as conn:  # a running job requeued by hand, in the old model
        conn.execute("UPDATE jobs SET state = 'queued', worker_id = NULL WHERE id = 3")
    backend = open_backend(f"sqlite:///{path}")
    try:
        [attempt] = backend.attempts(3)
        assert (attempt.worker_id, attempt.finished_at, attempt.outcome) == ("w1", None, None)
    finally:
        backend.close()


def test_keys_an_older_jobdef_recorded_in_a_handler_database_still_count(
    tmp_path: Path,
) -> None:
    handler_db = tmp_path / "app.db"
    with sqlite3.connect(handler_db) as conn:
        conn.execute(
            "CREATE TABLE processed_keys (key TEXT PRIMARY KEY, job_id INTEGER, "
            "processed_at REAL NOT NULL)"
        )
        conn.execute("INSERT INTO processed_keys VALUES ('charge:7', 7, 1.0)")
    backend = open_backend(f"sqlite:///{tmp_path / 'jobs.db'}")
    conn = sqlite3.connect(handler_db, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        assert backend.record_processed_key(conn, "charge:7", 8) is False
        assert backend.record_processed_key(conn, "charge:8", 8) is True
        conn.execute("COMMIT")
    finally:
        conn.close()
        backend.close()
    keys = _query(handler_db, "SELECT key, job_id FROM jobdef_processed_keys ORDER BY key")
    assert keys == [("charge:7", 7), ("charge:8", 8)]


def _open_and_report(url: str) -> int:
    backend = open_backend(url)
    try:
        return backend.get(1) is not None and schema_status(url).current
    finally:
        backend.close()


def test_several_processes_upgrading_an_old_store_at_once_all_succeed(
    legacy_sqlite_store: Path,
) -> None:
    url = f"sqlite:///{legacy_sqlite_store}"
    context = multiprocessing.get_context("spawn")
    with context.Pool(4) as pool:
        versions = pool.map(_open_and_report, [url] * 4)
    assert versions == [LATEST] * 4
    applied = _query(legacy_sqlite_store, "SELECT version FROM jobdef_schema_version")
    assert sorted(version for (version,) in applied) == list(range(1, LATEST + 1))
