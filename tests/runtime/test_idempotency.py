"""The processed-keys helper: a second run of the same job changes nothing."""

from __future__ import annotations

import sqlite3

import pytest

from jobdef.errors import UsageError
from jobdef.runtime import Context, first_run


def _award(ctx, app_db, points):
    conn = sqlite3.connect(app_db)
    conn.execute("CREATE TABLE IF NOT EXISTS balance (member INTEGER PRIMARY KEY, points INTEGER)")
    try:
        with conn:
            if not first_run(ctx, conn):
                return False
            conn.execute(
                "INSERT INTO balance VALUES (1, ?) "
                "ON CONFLICT (member) DO UPDATE SET points = points + excluded.points",
                (points,),
            )
        return True
    finally:
        conn.close()


def _points(app_db):
    conn = sqlite3.connect(app_db)
    try:
        return conn.execute("SELECT points FROM balance").fetchone()[0]
    finally:
        conn.close()


def _ctx(db_url, attempt, key="order-1:points"):
    return Context(
        job_id=1,
        job="award",
        attempt=attempt,
        max_attempts=3,
        idempotency_key=key,
        database_url=db_url,
    )


def test_a_rerun_of_the_same_job_changes_nothing(backend, db_url, tmp_path):
    app_db = tmp_path / "app.db"
    assert _award(_ctx(db_url, 1), app_db, 100)
    assert not _award(_ctx(db_url, 2), app_db, 100)
    assert _points(app_db) == 100


def test_a_run_whose_transaction_rolled_back_leaves_the_key_free(backend, db_url, tmp_path):
    app_db = tmp_path / "app.db"
    conn = sqlite3.connect(app_db)
    assert first_run(_ctx(db_url, 1), conn)
    conn.rollback()
    conn.close()
    assert _award(_ctx(db_url, 2), app_db, 100)
    assert _points(app_db) == 100


def test_a_job_without_a_key_is_told_to_declare_one(backend, db_url, tmp_path):
    conn = sqlite3.connect(tmp_path / "app.db")
    with pytest.raises(UsageError, match=r"add `idempotency: \{key: \.\.\.\}`"):
        first_run(_ctx(db_url, 1, key=None), conn)
    conn.close()


def test_first_run_opens_no_connection_to_the_job_store(tmp_path):
    """The key goes on the handler's connection with that connection's SQL: a job store
    that cannot be reached (port 1) is never connected to."""
    store = "postgresql://postgres@127.0.0.1:1/test?connect_timeout=1"
    assert _award(_ctx(store, 1), tmp_path / "app.db", 5)
    assert not _award(_ctx(store, 2), tmp_path / "app.db", 5)
    assert _points(tmp_path / "app.db") == 5
