"""SQLite migrations: all or nothing, beside an application's tables, once however many
processes start at once."""

from __future__ import annotations

import multiprocessing
import re
import sqlite3
from pathlib import Path

import pytest

from jobdef.backends import open_backend, schema_status
from jobdef.backends.records import ClaimOptions, ErrorInfo, NewJob, RetentionRule
from jobdef.backends.sql import migration_files
from jobdef.backends.sqlite import engine
from jobdef.backends.sqlite.engine import MIGRATIONS
from jobdef.errors import BackendError

FIRST = migration_files(MIGRATIONS)[0][0]
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


def test_a_new_store_applies_and_records_every_migration_from_the_first(
    tmp_path: Path,
) -> None:
    new = tmp_path / "new.db"
    open_backend(f"sqlite:///{new}").close()
    applied = _query(new, "SELECT version, name FROM jobdef_schema_version ORDER BY version")
    assert applied == [(number, name) for number, name, _ in migration_files(MIGRATIONS)]
    assert applied[0] == (FIRST, f"{FIRST:04d}_initial.sql")


def test_a_failing_migration_leaves_the_store_at_the_version_before_it(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    # A table of the application's holds a name the first migration needs, late in it:
    # the jobs and attempts tables have been made by then.
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE jobdef_outbox (id INTEGER PRIMARY KEY)")
        conn.execute("INSERT INTO jobdef_outbox VALUES (7)")
    with pytest.raises(BackendError) as failed:
        open_backend(f"sqlite:///{path}")
    assert str(failed.value) == (
        f"migration {FIRST:04d}_initial.sql failed on {path}: table jobdef_outbox already "
        "exists; nothing of it was applied, the database stays at version 0"
    )
    assert _tables(path) == {"jobdef_outbox"}
    assert _query(path, "SELECT * FROM jobdef_outbox") == [(7,)]
    assert schema_status(f"sqlite:///{path}").current == 0

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


def _open_and_report(url: str) -> int:
    backend = open_backend(url)
    try:
        return schema_status(url).current
    finally:
        backend.close()


@pytest.mark.slow
def test_several_processes_creating_a_store_at_once_all_succeed(tmp_path: Path) -> None:
    path = tmp_path / "jobs.db"
    url = f"sqlite:///{path}"
    context = multiprocessing.get_context("spawn")
    with context.Pool(4) as pool:
        versions = pool.map(_open_and_report, [url] * 4)
    assert versions == [LATEST] * 4
    applied = _query(path, "SELECT version FROM jobdef_schema_version")
    assert sorted(version for (version,) in applied) == list(range(FIRST, LATEST + 1))


STATES = ("waiting", "queued", "running", "done", "dead", "resolved", "cancelled")


def test_the_state_checks_of_a_store_of_the_previous_version_become_comparisons(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """0014 rebuilds jobdef_jobs with its state CHECK and the finished rows' index
    condition written without an IN list (SQLite builds one per row written inside
    them): the CHECK admits the same states, the index holds the same rows, ids are not
    handed out again, and a connection opened before the upgrade reads the new
    definition."""
    path = tmp_path / "jobs.db"
    url = f"sqlite:///{path}"
    monkeypatch.setattr(engine, "migration_files", lambda p: migration_files(p)[:-1])
    old = open_backend(url)
    old.enqueue([NewJob("j", {"n": n}, "default", max_attempts=1) for n in range(4)])
    done, dead, _ = old.claim(ClaimOptions("w1", 60.0, limit=3))
    assert old.complete([done.lease]) == [True]
    assert old.bury(dead.lease, ErrorInfo("E", "boom"))
    old.close()
    monkeypatch.undo()
    assert schema_status(url).current == 13
    before_upgrade = sqlite3.connect(path)
    with before_upgrade:  # the newest id is gone: the next must not be handed out again
        before_upgrade.execute("DELETE FROM jobdef_jobs WHERE id = 4")

    new = open_backend(url)
    try:
        [(table,)] = _query(path, "SELECT sql FROM sqlite_master WHERE name = 'jobdef_jobs'")
        check = re.search(r"CHECK \((.*?)\)\)?,\n", table, re.S)
        assert check is not None
        assert " IN " not in check.group(1)
        assert _schema(path)["jobdef_jobs_finished"][1] == "finished_at IS NOT NULL"
        assert _query(path, "PRAGMA integrity_check") == [("ok",)]
        # The index holds the rows that ended, as before: dead_count and prune read it.
        assert new.dead_count("j", 10) == 1
        [receipt] = new.enqueue([NewJob("j", {"n": 4}, "default", max_attempts=1)])
        assert receipt.id == 5
        assert new.prune([RetentionRule("j", done=-1.0, dead=None)]) == 1
        move = "UPDATE jobdef_jobs SET state = ? WHERE id = ?"
        for connection in (before_upgrade, sqlite3.connect(path)):
            for state in STATES:
                connection.execute(move, (state, dead.id))
            with pytest.raises(sqlite3.IntegrityError, match="CHECK constraint failed"):
                connection.execute(move, ("lost", dead.id))
            connection.rollback()
            connection.close()
    finally:
        new.close()
