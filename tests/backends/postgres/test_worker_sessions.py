"""The sessions a worker process opens, with LISTEN (the default) and with ``?wake=poll``
(behind PgBouncer in transaction mode): how many, and that the second listens to nothing."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobdef.backends.postgres.engine import PostgresBackend
from jobdef.runtime.queue import Queue
from jobdef.sheets.pipeline import load_registry
from support import eventually

from .helpers import query
from .sheets import write_sheets
from .test_worker import Workers

pytestmark = pytest.mark.slow

SESSIONS = "SELECT query FROM pg_stat_activity WHERE application_name = %s"


@pytest.fixture
def sheets(tmp_path: Path) -> Path:
    return write_sheets(tmp_path / "jobdefs")


@pytest.fixture
def workers(postgres_url: str, pg_backend: PostgresBackend, sheets: Path) -> Iterator[Workers]:
    started = Workers(postgres_url, pg_backend.schema, sheets)
    try:
        yield started
    finally:
        started.stop_all()


@pytest.fixture
def queue(pg_backend: PostgresBackend, sheets: Path) -> Queue:
    return Queue(pg_backend, load_registry([sheets]))


def _run_twenty(pg_backend: PostgresBackend, queue: Queue) -> None:
    ids = [r.id for r in queue.enqueue_many("noop", ({"n": n} for n in range(20)))]

    def all_done() -> bool:
        return all(job is not None and job.state == "done" for job in map(pg_backend.get, ids))

    eventually(all_done, timeout=60)


def test_a_worker_process_holds_one_session_for_its_verbs_and_one_that_listens(
    pg_backend: PostgresBackend, workers: Workers, queue: Queue
) -> None:
    app = f"jobdef_t{uuid.uuid4().hex[:8]}"
    # Three handler processes: they open no session of their own for the worker.
    workers.start(concurrency=3, url_options=f"&application_name={app}")
    _run_twenty(pg_backend, queue)
    # The verbs' session and the listening one (which renews the maintenance lease too);
    # and, on the one worker that maintains (this one), the outbox sender's.
    eventually(lambda: len(query(pg_backend.conninfo, SESSIONS, (app,))) == 3)
    _run_twenty(pg_backend, queue)
    assert len(query(pg_backend.conninfo, SESSIONS, (app,))) == 3  # and no more


def test_with_wake_poll_a_worker_listens_to_nothing_and_still_runs_every_job(
    pg_backend: PostgresBackend, workers: Workers, queue: Queue
) -> None:
    app = f"jobdef_t{uuid.uuid4().hex[:8]}"
    workers.start(
        concurrency=3, poll_interval=0.05, url_options=f"&wake=poll&application_name={app}"
    )
    _run_twenty(pg_backend, queue)
    _run_twenty(pg_backend, queue)  # and again, after it went idle: it polls
    # The verbs' session, which renews the maintenance lease too; and, on the one worker
    # that maintains (this one), the outbox sender's.
    sessions = eventually(lambda: query(pg_backend.conninfo, SESSIONS, (app,)))
    assert len(sessions) == 2, sessions
    assert not any(q.upper().startswith(("LISTEN", "SET")) for (q,) in sessions)
