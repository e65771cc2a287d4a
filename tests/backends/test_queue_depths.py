"""``queues()`` (``jobdef queues``, ``jobdef status``, the store gauges) reads only the
active rows: the partial indexes of queued and running jobs, never the finished rows,
and each queue's queued jobs counted up to a cap."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from jobdef.backends import open_backend, verbs
from jobdef.backends.records import NewJob
from jobdef.backends.sql import load_queries

ACTIVE_INDEXES = ("jobdef_jobs_claim_queue", "jobdef_jobs_running")


def _enqueue(backend, n, queue):
    jobs = [NewJob(job="j", args={"n": i}, queue=queue, max_attempts=3) for i in range(n)]
    return backend.enqueue(jobs)


def test_sqlite_queue_depths_reads_only_the_partial_indexes_of_active_rows(
    tmp_path: Path,
) -> None:
    path = tmp_path / "jobs.db"
    open_backend(f"sqlite:///{path}").close()
    sql = load_queries("jobdef.backends.sqlite", "queries.sql")["queue_depths"]
    conn = sqlite3.connect(path)
    try:
        plan = [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql, {"now": 0, "cap": 10})]
    finally:
        conn.close()
    reads = [step for step in plan if "jobdef_jobs " in step + " "]
    assert reads, plan
    full = [step for step in reads if not any(index in step for index in ACTIVE_INDEXES)]
    assert full == [], plan  # e.g. a bare "SCAN jobdef_jobs": every row, finished ones too


def test_queued_jobs_are_counted_up_to_the_cap_and_finished_rows_not_at_all(
    backend, worker, monkeypatch: pytest.MonkeyPatch
) -> None:
    _enqueue(backend, 3, "done_here")
    for _ in range(3):
        backend.complete([worker.claim_one().lease])
    _enqueue(backend, 5, "deep")
    _enqueue(backend, 2, "shallow")
    monkeypatch.setattr(verbs, "QUEUED_COUNT_CAP", 4)
    infos = {info.queue: info for info in backend.queues()}
    assert "done_here" not in infos  # only finished jobs: no row, no active job
    assert infos["deep"].queued == 4  # stopped at the cap
    assert infos["shallow"].queued == 2
    assert infos["deep"].oldest_queued_age is not None
