"""A worker's turn sent without waiting for its answer (PostgresBackend.send_turn): the
answer is what complete_and_claim answers, it is read before any other statement of the
session, and a session lost meanwhile is one clear error, after which the store works."""

from __future__ import annotations

import psycopg
import pytest

from jobdef.backends.postgres.engine import PostgresBackend
from jobdef.backends.protocol import complete_and_claim, send_turn
from jobdef.backends.records import ClaimOptions, JobRecord, Lease, NewJob
from jobdef.errors import BackendError

from .helpers import terminate


def _enqueue(backend: PostgresBackend, n: int, **overrides: object) -> list[int]:
    values: dict[str, object] = {"job": "j", "args": {}, "queue": "q", "max_attempts": 3}
    return [r.id for r in backend.enqueue([NewJob(**(values | overrides)) for _ in range(n)])]


def _options(limit: int, **more: object) -> ClaimOptions:
    return ClaimOptions(worker_id="w1", lease_seconds=30, limit=limit, **more)  # type: ignore[arg-type]


def _claim(backend: PostgresBackend, n: int) -> list[JobRecord]:
    return backend.claim(_options(n))


def test_a_sent_turn_answers_what_complete_and_claim_answers(pg_backend: PostgresBackend) -> None:
    ids = _enqueue(pg_backend, 6)
    held = _claim(pg_backend, 2)
    stale = Lease(held[1].id, held[1].attempt, "someone else")
    turn = send_turn(pg_backend, [held[0].lease, stale], None, _options(3))
    assert turn is not None
    assert turn.leased() == 3
    accepted, records = turn.result()
    assert accepted == [True, False]  # fenced: a lease not this worker's is refused
    assert [r.id for r in records] == ids[2:5]  # in claim order
    assert all(r.state == "running" and r.worker_id == "w1" for r in records)
    assert pg_backend.get(ids[0]).state == "done"
    assert pg_backend.get(ids[1]).state == "running"
    [attempt] = pg_backend.attempts(ids[0])
    assert attempt.outcome == "done"
    # The same turn made by the call that waits: the same kind of answer.
    accepted, records = complete_and_claim(pg_backend, [held[1].lease], None, _options(3))
    assert accepted == [True]
    assert [r.id for r in records] == ids[5:]


def test_a_turn_that_claims_nothing_says_so_before_its_answer_is_read(
    pg_backend: PostgresBackend,
) -> None:
    [job_id] = _enqueue(pg_backend, 1)
    [held] = _claim(pg_backend, 1)
    turn = send_turn(pg_backend, [held.lease], None, _options(5))
    assert turn is not None
    assert turn.leased() == 0  # its one row carries the finished ids, no job
    assert turn.result() == ([True], [])
    assert pg_backend.get(job_id).state == "done"


def test_the_sessions_next_statement_reads_the_answer_first(pg_backend: PostgresBackend) -> None:
    ids = _enqueue(pg_backend, 3)
    [held] = _claim(pg_backend, 1)
    turn = send_turn(pg_backend, [held.lease], None, _options(1))
    assert turn is not None
    # Another verb on the same session while the answer is on its way: it waits for
    # that answer, and sees what the turn did.
    assert pg_backend.get(ids[0]).state == "done"
    assert pg_backend.get(ids[1]).state == "running"
    assert turn.ready()
    accepted, records = turn.result()
    assert (accepted, [r.id for r in records]) == ([True], [ids[1]])
    assert turn.result() == (accepted, records)  # read once, kept


def test_a_session_lost_under_a_sent_turn_is_one_clear_error_and_the_store_goes_on(
    pg_backend: PostgresBackend, postgres_url: str, postgres_schema: str
) -> None:
    _enqueue(pg_backend, 2)
    [held] = _claim(pg_backend, 1)
    pid = pg_backend.sessions.connection().info.backend_pid
    with psycopg.connect(postgres_url) as locker:
        # The job's row locked elsewhere: the turn waits on it, on the server.
        locker.execute(
            f'SELECT 1 FROM "{postgres_schema}".jobdef_jobs WHERE id = %s FOR UPDATE', [held.id]
        )
        turn = send_turn(pg_backend, [held.lease], None, _options(1))
        assert turn is not None
        assert not turn.ready()
        terminate(postgres_url, pid)
        with pytest.raises(BackendError, match="lost the connection to PostgreSQL"):
            turn.result()
        locker.rollback()
    # The turn's transaction never committed: the job is still this worker's, and the
    # next call, on a session opened again, completes it.
    assert pg_backend.get(held.id).state == "running"
    assert complete_and_claim(pg_backend, [held.lease], None, None)[0] == [True]
    assert pg_backend.get(held.id).state == "done"


def test_turns_of_more_than_one_statement_are_not_sent(pg_backend: PostgresBackend) -> None:
    _enqueue(pg_backend, 3)
    held = _claim(pg_backend, 2)
    leases = [held[0].lease]
    # A claim under a queue limit: the caller waits for it instead.
    assert pg_backend.send_turn(leases, None, _options(1, queue_limits={"q": 1})) is None
    # A step of a flow among the leases: its flow is settled in the same transaction.
    step = Lease(held[1].id, held[1].attempt, "w1", flow_id=1)
    assert pg_backend.send_turn([step], None, _options(1)) is None
    # Nothing to complete, or nothing to claim: no turn to send.
    assert send_turn(pg_backend, [], None, _options(1)) is None
    assert send_turn(pg_backend, leases, None, None) is None


def test_a_turn_of_named_queues_and_a_turn_while_a_queue_is_paused_are_sent_too(
    pg_backend: PostgresBackend,
) -> None:
    ids = _enqueue(pg_backend, 3)
    other = _enqueue(pg_backend, 2, queue="other")
    held = _claim(pg_backend, 2)
    assert [r.id for r in held] == ids[:2]
    turn = send_turn(pg_backend, [held[0].lease], None, _options(5, queues=["other"]))
    assert turn is not None
    assert turn.leased() == 2
    assert [r.id for r in turn.result()[1]] == other
    # A queue paused: the walk takes nothing and says so; the answer claims by queue.
    pg_backend.set_paused("other", True)
    turn = send_turn(pg_backend, [held[1].lease], None, _options(5))
    assert turn is not None
    assert turn.leased() == 0  # the walk's answer: nothing, a queue is paused
    accepted, records = turn.result()
    assert accepted == [True]
    assert [r.id for r in records] == ids[2:]  # claimed by queue once the answer is read
