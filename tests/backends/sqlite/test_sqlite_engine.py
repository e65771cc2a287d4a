"""What only the SQLite engine has: URLs, files, pragmas, the claim's query plan."""

from __future__ import annotations

import sqlite3

import pytest

from jobdef.backends import open_backend
from jobdef.backends.records import ClaimOptions, NewJob
from jobdef.backends.sql import migration_files
from jobdef.backends.sqlite.engine import MIGRATIONS, SQLiteBackend, _q, sqlite_path
from jobdef.errors import BackendError


def test_url_paths_are_relative_with_three_slashes_and_absolute_with_four():
    assert str(sqlite_path("sqlite:///jobs.db")[0]) == "jobs.db"
    assert str(sqlite_path("sqlite:////tmp/jobs.db")[0]) == "/tmp/jobs.db"
    assert sqlite_path("sqlite:///j.db?synchronous=full")[1] == {"synchronous": "full"}


@pytest.mark.parametrize("url", ["sqlite://jobs.db", "sqlite:///", "mysql:///x"])
def test_a_malformed_url_is_one_clear_error(url):
    with pytest.raises(BackendError, match="sqlite:///"):
        open_backend(url)


def test_a_missing_folder_is_one_clear_error(tmp_path):
    with pytest.raises(BackendError, match="does not exist; create it"):
        open_backend(f"sqlite:///{tmp_path}/nowhere/jobs.db")


def test_operator_commands_do_not_create_a_database_at_a_mistyped_path(tmp_path):
    with pytest.raises(BackendError, match="no job database at"):
        open_backend(f"sqlite:///{tmp_path}/typo.db", create=False)
    assert not (tmp_path / "typo.db").exists()


def test_a_file_that_is_not_a_database_is_one_clear_error(tmp_path):
    (tmp_path / "notes.db").write_text("hello, this is not SQLite\n" * 100)
    with pytest.raises(BackendError, match="cannot open the job database"):
        open_backend(f"sqlite:///{tmp_path}/notes.db")


def test_the_database_is_in_wal_mode_with_a_schema_version(tmp_path):
    backend = open_backend(f"sqlite:///{tmp_path}/jobs.db")
    assert isinstance(backend, SQLiteBackend)
    assert backend.schema_version() == migration_files(MIGRATIONS)[-1][0]
    backend.close()
    conn = sqlite3.connect(tmp_path / "jobs.db")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    versions = [(number,) for number, _name, _sql in migration_files(MIGRATIONS)]
    applied = conn.execute("SELECT version FROM jobdef_schema_version ORDER BY version").fetchall()
    assert applied == versions
    conn.close()


def test_the_connection_keeps_16_mib_of_pages_in_memory(tmp_path):
    """A claim and a completion walk the same pages turn after turn: SQLite's default
    2 MiB cache sent them back to the file in a drain of 20,000 jobs."""
    backend = open_backend(f"sqlite:///{tmp_path}/jobs.db")
    assert isinstance(backend, SQLiteBackend)
    try:
        assert backend._conn.execute("PRAGMA cache_size").fetchone()[0] == -16 * 1024
    finally:
        backend.close()


def test_postgres_url_without_the_engine_module_is_a_clear_error(monkeypatch):
    import sys

    # The engine's package as a jobdef built without it: its driver does not import.
    for module in ("jobdef.backends.postgres.driver", "jobdef.backends.postgres.engine"):
        monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(BackendError, match="this jobdef has no postgresql engine"):
        open_backend("postgresql://postgres@127.0.0.1/test")


def test_claim_reads_the_partial_index_of_queued_rows_only(tmp_path):
    backend = open_backend(f"sqlite:///{tmp_path}/jobs.db")
    backend.close()
    conn = sqlite3.connect(tmp_path / "jobs.db")
    params = {
        "now": 0.0,
        "worker_id": "w",
        "lease_until": 1.0,
        "queues": None,
        "exclude": "[]",
        "limit": 10,
    }
    plan = " ".join(
        row[-1] for row in conn.execute("EXPLAIN QUERY PLAN " + _q("claim_jobs"), params)
    )
    conn.close()
    assert "USING INDEX jobdef_jobs_claim" in plan
    assert "SCAN jobdef_jobs\n" not in plan


def _claim_steps(tmp_path, ahead: int, options: ClaimOptions, pause: bool) -> tuple[int, set]:
    """SQLite's VM instructions for one claim, and the queues it took, in a store
    where ``ahead`` jobs of queue `backed_up` come before three of queue `served` in
    claim order (paused when ``pause``)."""
    backend = open_backend(f"sqlite:///{tmp_path}/jobs-{ahead}.db")
    try:
        for first in range(0, ahead, 5_000):
            backend.enqueue([NewJob("a", {}, "backed_up", priority=5)] * min(5_000, ahead - first))
        backend.enqueue([NewJob("b", {}, "served") for _ in range(3)])
        if pause:
            backend.set_paused("backed_up", True)
        steps = 0

        def step() -> int:
            nonlocal steps
            steps += 1
            return 0

        backend._conn.set_progress_handler(step, 1)
        claimed = backend.claim(options)
        backend._conn.set_progress_handler(None, 1)
        return steps, {job.queue for job in claimed}
    finally:
        backend.close()


@pytest.mark.parametrize(
    ("queues", "pause"), [(("served",), False), (None, True)], ids=["one_queue", "paused"]
)
def test_a_claim_reads_as_much_however_long_the_backlog_of_a_queue_it_does_not_take(
    tmp_path, queues, pause
):
    """A worker serving one queue (--queues), and every claim while a queue is paused:
    the claim reads the queues it may take, not the backlog of another that comes first
    in claim order (the walk of the claim index read it whole, at every claim)."""
    options = ClaimOptions("w", 30, limit=10, queues=queues)
    short, taken = _claim_steps(tmp_path, 300, options, pause)
    assert taken == {"served"}
    long, taken = _claim_steps(tmp_path, 30_000, options, pause)
    assert taken == {"served"}
    assert long == short, (short, long)  # a walk of the backlog would take 100 times more


def test_a_database_held_locked_too_long_is_one_clear_error(tmp_path):
    backend = open_backend(f"sqlite:///{tmp_path}/jobs.db")
    backend._conn.execute("PRAGMA busy_timeout = 50")
    holder = sqlite3.connect(tmp_path / "jobs.db")
    holder.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(BackendError, match="cannot be used: database is locked"):
            backend.cancel(1)
    finally:
        holder.rollback()
        holder.close()
    assert backend.cancel(1) is None
    backend.close()
