"""LISTEN/NOTIFY: an idle worker wakes when a job is enqueued, and polls when it cannot listen."""

from __future__ import annotations

import threading

import psycopg

from jobdef.backends.postgres.engine import PostgresBackend
from jobdef.backends.records import NewJob

from .helpers import terminate

LONG = 60.0  # a wait this long ends early only through a notification


def test_an_enqueue_elsewhere_wakes_a_waiting_engine(
    pg_backend: PostgresBackend, postgres_url: str
) -> None:
    assert pg_backend.wait_for_jobs(0.01) is False  # now listening

    def enqueue_elsewhere() -> None:
        with PostgresBackend(postgres_url, schema=pg_backend.schema) as other:
            other.enqueue([NewJob("a", {}, "default")])

    thread = threading.Thread(target=enqueue_elsewhere)
    thread.start()
    try:
        assert pg_backend.wait_for_jobs(LONG) is True
    finally:
        thread.join()


def test_an_enqueue_while_busy_is_not_missed(pg_backend: PostgresBackend) -> None:
    pg_backend.wait_for_jobs(0.01)
    pg_backend.enqueue([NewJob("a", {}, "default")])
    pg_backend.try_maintenance_lock()  # another statement on the listening session
    assert pg_backend.wait_for_jobs(LONG) is True


def test_a_rolled_back_enqueue_wakes_nobody(pg_backend: PostgresBackend) -> None:
    pg_backend.wait_for_jobs(0.01)
    with psycopg.connect(pg_backend.conninfo) as conn:
        pg_backend.enqueue([NewJob("a", {}, "default")], connection=conn)
        conn.rollback()
    assert pg_backend.wait_for_jobs(0.3) is False


def test_after_losing_the_listening_session_it_polls_then_listens_again(
    pg_backend: PostgresBackend,
) -> None:
    pg_backend.wait_for_jobs(0.01)
    terminate(pg_backend.conninfo, pg_backend.listener._session.info.backend_pid)
    assert pg_backend.wait_for_jobs(LONG) is True  # lost: claim now, by polling
    assert pg_backend.wait_for_jobs(0.01) is False  # listening again on a new session
    pg_backend.enqueue([NewJob("a", {}, "default")])
    assert pg_backend.wait_for_jobs(LONG) is True


def test_wake_ends_a_wait_at_once(pg_backend: PostgresBackend) -> None:
    pg_backend.wait_for_jobs(0.01)
    timer = threading.Timer(0.05, pg_backend.wake)
    timer.start()
    try:
        assert pg_backend.wait_for_jobs(LONG) is True
    finally:
        timer.join()
    assert pg_backend.wait_for_jobs(0.01) is False  # the wake-up was used up
