"""The waiters' channel: a statement that ends a watched job notifies it with the job's id;
one that ends a job nobody waits for notifies nothing, so a drain without waiters pays
nothing; the waiters' session hears it and listens again after it is lost."""

from __future__ import annotations

import time

import psycopg
from flow_specs import new_flow
from psycopg import sql

from jobdef.backends.postgres.ends import EndListener, ended_channel
from jobdef.backends.postgres.engine import PostgresBackend
from jobdef.backends.records import ClaimOptions, ErrorInfo, NewJob

from .helpers import terminate


def _told(conn: psycopg.Connection, settle: float = 0.3) -> list[str]:
    """Every notification of the waiters' channel that arrived within ``settle`` seconds."""
    return [note.payload for note in conn.notifies(timeout=settle)]


def _listening(backend: PostgresBackend) -> psycopg.Connection:
    conn = psycopg.connect(backend.conninfo, autocommit=True)
    conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(ended_channel(backend.schema))))
    return conn


def _jobs(backend: PostgresBackend, n: int) -> list[int]:
    return [r.job_id for r in backend.enqueue([NewJob("j", {"n": i}, "q") for i in range(n)])]


def _claim(backend: PostgresBackend, limit: int) -> list:
    return backend.claim(ClaimOptions("w1", 30.0, limit=limit))


def test_only_the_watched_jobs_that_end_are_told(pg_backend: PostgresBackend) -> None:
    done, done_watched, buried, cancelled, cancelled_unwatched, retried = _jobs(pg_backend, 6)
    pg_backend.watch_jobs([done_watched, buried, cancelled, retried])
    with _listening(pg_backend) as conn:
        assert pg_backend.cancel(cancelled)
        assert pg_backend.cancel(cancelled_unwatched)
        leases = {r.id: r.lease for r in _claim(pg_backend, 10)}
        assert pg_backend.complete([leases[done], leases[done_watched]]) == [True, True]
        error = ErrorInfo("ValueError", "bad")
        assert pg_backend.bury(leases[buried], error)
        # A retry does not end the job: its waiter waits for the last attempt.
        assert pg_backend.retry(leases[retried], error, pg_backend.clock() + 60, 60)
        told = _told(conn)
    assert sorted(told) == sorted(str(i) for i in (cancelled, done_watched, buried))


def test_a_worker_turn_tells_the_watched_jobs_it_finished(pg_backend: PostgresBackend) -> None:
    watched, unwatched, next_one = _jobs(pg_backend, 3)
    pg_backend.watch_jobs([watched])
    leases = [r.lease for r in _claim(pg_backend, 2)]
    with _listening(pg_backend) as conn:
        accepted, claimed = pg_backend.complete_and_claim(
            leases, None, ClaimOptions("w1", 30.0, limit=1)
        )
        assert accepted == [True, True]
        assert [r.id for r in claimed] == [next_one]
        assert _told(conn) == [str(watched)]
        # Under a queue limit the turn takes another path (complete, then lock, claim).
        pg_backend.watch_jobs([next_one])
        limited = ClaimOptions("w1", 30.0, limit=1, queue_limits={"q": 5})
        pg_backend.complete_and_claim([claimed[0].lease], None, limited)
        assert _told(conn) == [str(next_one)]
    assert unwatched not in (watched, next_one)


def test_a_drain_nobody_waits_for_tells_nothing(pg_backend: PostgresBackend) -> None:
    ids = _jobs(pg_backend, 20)
    with _listening(pg_backend) as conn:
        while records := _claim(pg_backend, 5):
            pg_backend.complete([r.lease for r in records])
        assert all(pg_backend.get(i).state == "done" for i in ids)
        assert _told(conn) == []


def test_the_waiters_session_hears_ends_and_listens_again_after_it_is_lost(
    pg_backend: PostgresBackend,
) -> None:
    listener = EndListener(pg_backend.conninfo, pg_backend.schema)
    try:
        assert listener.listen() is True  # a new session: read every waited job
        assert listener.listen() is False  # the same session
        [job] = _jobs(pg_backend, 1)
        pg_backend.watch_jobs([job])
        pg_backend.cancel(job)
        assert listener.heard(60.0) == {job}

        terminate(pg_backend.conninfo, listener.backend_pid)
        deadline = time.monotonic() + 60
        while listener.backend_pid is not None and time.monotonic() < deadline:
            listener.heard(0.2)  # finds the session gone
        assert listener.backend_pid is None
        assert listener.poll_seconds < 5.0  # unheard: the thread polls more often
        assert listener.listen() is True  # ends may have been missed meanwhile
        [again] = _jobs(pg_backend, 1)
        pg_backend.watch_jobs([again])
        pg_backend.cancel(again)
        assert listener.heard(60.0) == {again}
    finally:
        listener.close()


def test_wake_ends_a_wait_for_ends_at_once(pg_backend: PostgresBackend) -> None:
    listener = EndListener(pg_backend.conninfo, pg_backend.schema)
    try:
        listener.listen()
        listener.wake()
        started = time.monotonic()
        assert listener.heard(60.0) == set()
        assert time.monotonic() - started < 30.0  # woken, not timed out
    finally:
        listener.close()


def test_a_cancel_tells_the_watched_running_job_and_the_cancelled_flows_steps(
    pg_backend: PostgresBackend,
) -> None:
    [running] = _jobs(pg_backend, 1)
    receipt = pg_backend.start_flow(new_flow({"a": ({}, {}), "b": ({"a": "cancel"}, {})}))
    steps = pg_backend.get_flow(receipt.id).step_ids
    _claim(pg_backend, 10)  # the plain job and the flow's root step run
    pg_backend.watch_jobs([running, steps["a"], steps["b"]])
    with _listening(pg_backend) as conn:
        assert pg_backend.cancel(running) == "running"
        assert pg_backend.cancel_flow(receipt.id, "not needed")
        told = _told(conn)
    assert sorted(told) == sorted(str(i) for i in (running, steps["a"], steps["b"]))
