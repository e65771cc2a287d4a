"""Maintenance goes on when its worker freezes: real worker processes, one SIGSTOPped.

The maintainer used to be the holder of a session-level advisory lock, which a
frozen worker keeps with its session: reclaim, pruning, the scheduler and the
outbox then stopped for the whole fleet. Now it holds a lease in a row that
lapses when it stops renewing it, and another worker takes over.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jobdef.backends.postgres.engine import MAINTENANCE_LEASE, PostgresBackend
from jobdef.backends.postgres.listener import UNREAD_MOST
from jobdef.backends.records import NewJob, Wakeup
from support import eventually

from .helpers import query, terminate
from .sheets import write_sheets
from .test_worker import Workers

pytestmark = pytest.mark.slow

LEASE = 3.0  # the workers' maintenance lease, seconds
LONG_WAIT = 60.0  # a wait this long ends early only through a notification


@pytest.fixture
def fleet(postgres_url: str, pg_backend: PostgresBackend, tmp_path: Path) -> Iterator[Workers]:
    started = Workers(postgres_url, pg_backend.schema, write_sheets(tmp_path / "jobdefs"))
    try:
        yield started
    finally:
        for process in started.processes:  # a stopped process cannot act on SIGTERM
            if process.is_alive():
                os.kill(process.pid, signal.SIGCONT)
        started.stop_all()


def _abandoned_job(backend: PostgresBackend) -> int:
    """A running job whose worker is gone: its lease expires in a second, unrenewed.

    Written straight into the row: a job queued first could be claimed by the fleet.
    """
    [result] = backend.enqueue([NewJob("noop", {}, "default", run_after=time.time() + 3600)])
    query(
        backend.conninfo,
        f'UPDATE "{backend.schema}".jobdef_jobs SET state = %s, attempt = 1, worker_id = %s, '
        "started_at = %s, lease_until = %s WHERE id = %s",
        ("running", "gone:1:dead", time.time(), time.time() + 1.0, result.id),
    )
    return result.id


def _reclaimed(backend: PostgresBackend, job_id: int) -> bool:
    outcomes = [a.outcome for a in backend.attempts(job_id)]
    return "reclaimed" in outcomes


def _worker_ran(backend: PostgresBackend, pid: int) -> bool:
    rows = query(
        backend.conninfo,
        f'SELECT count(*) FROM "{backend.schema}".jobdef_attempts WHERE worker_id LIKE %s',
        (f"%:{pid}:%",),
    )
    return rows[0][0] > 0


def _lease_row(backend: PostgresBackend) -> tuple[Any, ...] | None:
    rows = query(
        backend.conninfo,
        f'SELECT holder, generation FROM "{backend.schema}".jobdef_leases '
        "WHERE name = 'maintenance'",
    )
    return rows[0] if rows else None


def test_a_frozen_maintainer_is_replaced_and_expired_leases_are_still_reclaimed(
    fleet: Workers, pg_backend: PostgresBackend
) -> None:
    first = fleet.start(concurrency=1, maintenance_lease=LEASE)
    # Alone, the first worker maintains: it reclaims a job abandoned by a dead worker.
    probe = _abandoned_job(pg_backend)
    eventually(lambda: _reclaimed(pg_backend, probe), 60, "the first worker reclaims")
    second = fleet.start(concurrency=1, maintenance_lease=LEASE)

    def second_runs_jobs() -> bool:
        pg_backend.enqueue([NewJob("noop", {"n": n}, "default") for n in range(10)])
        time.sleep(0.2)
        return _worker_ran(pg_backend, second.pid)

    eventually(second_runs_jobs, 60, "the second worker runs jobs")

    os.kill(first.pid, signal.SIGSTOP)
    frozen_at = time.monotonic()
    abandoned = _abandoned_job(pg_backend)
    eventually(lambda: _reclaimed(pg_backend, abandoned), 30, "the second worker reclaims")
    reclaimed_after = time.monotonic() - frozen_at
    # The job's lease lapses 1s after the SIGSTOP; the maintenance lease at most LEASE
    # after (its last renewal was at most a round before); reclaim ticks every 2s.
    print(f"abandoned job reclaimed {reclaimed_after:.2f}s after the maintainer froze")
    assert reclaimed_after <= 2 * LEASE + 2.0
    # The maintenance lease (pruning, the scheduler, the outbox) is taken over too.
    eventually(
        lambda: f":{second.pid}:" in (_lease_row(pg_backend) or ("",))[0],
        6 * LEASE,
        "the second worker takes the maintenance lease over",
    )
    assert time.monotonic() - frozen_at <= 2 * LEASE
    holder, generation = _lease_row(pg_backend) or ("", 0)
    assert generation == 2  # taken over once, from the first worker

    # Back from its freeze, the first worker finds the lease taken and leaves it be.
    os.kill(first.pid, signal.SIGCONT)
    time.sleep(2.0)
    assert _lease_row(pg_backend) == (holder, generation)


def test_a_frozen_maintainer_is_replaced_within_twice_its_lease(
    fleet: Workers, pg_backend: PostgresBackend
) -> None:
    first = fleet.start(concurrency=1, maintenance_lease=LEASE)
    eventually(lambda: _lease_row(pg_backend), 60, "the first worker maintains")
    second = fleet.start(concurrency=1, maintenance_lease=LEASE)

    def second_runs_jobs() -> bool:
        pg_backend.enqueue([NewJob("noop", {"n": n}, "default") for n in range(10)])
        time.sleep(0.2)
        return _worker_ran(pg_backend, second.pid)

    eventually(second_runs_jobs, 60, "the second worker runs jobs")
    holder, generation = _lease_row(pg_backend) or ("", 0)
    assert f":{first.pid}:" in holder

    os.kill(first.pid, signal.SIGSTOP)
    frozen_at = time.monotonic()

    def taken_over() -> bool:
        row = _lease_row(pg_backend)
        return row is not None and f":{second.pid}:" in row[0]

    eventually(taken_over, 6 * LEASE, "the second worker takes the lease over")
    replaced_after = time.monotonic() - frozen_at
    print(f"maintainer replaced {replaced_after:.2f}s after it froze (lease {LEASE}s)")
    assert replaced_after <= 2 * LEASE
    assert (_lease_row(pg_backend) or ("", 0))[1] == generation + 1


def test_every_worker_reclaims_so_a_frozen_maintainer_holds_back_no_dead_worker_job(
    fleet: Workers, pg_backend: PostgresBackend
) -> None:
    """Reclaim is not maintenance that waits for the election: with the engine's default
    maintenance lease (10s), a job whose worker died is reclaimed by the worker that does
    not hold the lease while the holder is frozen, about one reclaim interval (2s) after
    the job's own lease (1s) expired, long before the maintenance lease lapses."""
    first = fleet.start(concurrency=1)
    eventually(lambda: _lease_row(pg_backend), 60, "the first worker maintains")
    second = fleet.start(concurrency=1)

    def second_runs_jobs() -> bool:
        pg_backend.enqueue([NewJob("noop", {"n": n}, "default") for n in range(10)])
        time.sleep(0.2)
        return _worker_ran(pg_backend, second.pid)

    eventually(second_runs_jobs, 60, "the second worker runs jobs")
    assert f":{first.pid}:" in (_lease_row(pg_backend) or ("",))[0]

    os.kill(first.pid, signal.SIGSTOP)
    frozen_at = time.monotonic()
    abandoned = _abandoned_job(pg_backend)
    eventually(lambda: _reclaimed(pg_backend, abandoned), 30, "the second worker reclaims")
    reclaimed_after = time.monotonic() - frozen_at
    print(f"abandoned job reclaimed {reclaimed_after:.2f}s after the maintainer froze")
    # 1s of job lease, then at most one reclaim interval: less than the 10s lease.
    assert reclaimed_after < MAINTENANCE_LEASE
    [attempt] = [a for a in pg_backend.attempts(abandoned) if a.outcome == "reclaimed"]
    assert attempt.worker_id == "gone:1:dead"
    # The maintenance lease itself was not taken over: reclaim did not need it.
    assert f":{first.pid}:" in (_lease_row(pg_backend) or ("",))[0]


TICK = """\
apiVersion: jobdef/v1
kind: Job
name: tick
mode: batch
schedule: "* * * * *"
catch_up: all
handler: postgres.handlers:noop
"""


def test_a_frozen_maintainer_holds_back_no_due_cron_slot(
    fleet: Workers, pg_backend: PostgresBackend
) -> None:
    """The scheduler is maintenance: while its holder is frozen, the worker that takes
    the lease over enqueues the slots that came due, from the newest one in the store."""
    (Path(fleet.sheets) / "tick.yaml").write_text(TICK)
    first = fleet.start(concurrency=1, maintenance_lease=LEASE)
    eventually(lambda: _lease_row(pg_backend), 60, "the first worker maintains")
    second = fleet.start(concurrency=1, maintenance_lease=LEASE)

    def second_runs_jobs() -> bool:
        pg_backend.enqueue([NewJob("noop", {"n": n}, "default") for n in range(10)])
        time.sleep(0.2)
        return _worker_ran(pg_backend, second.pid)

    eventually(second_runs_jobs, 60, "the second worker runs jobs")
    os.kill(first.pid, signal.SIGSTOP)
    frozen_at = time.monotonic()
    # As if the newest slot stored were ten minutes old: the slots since are due.
    schema = f'"{pg_backend.schema}"'
    for table in ("jobdef_slots", "jobdef_attempts", "jobdef_jobs"):
        column = "job_id IN (SELECT id FROM {0}.jobdef_jobs WHERE job = 'tick')"
        where = column.format(schema) if table == "jobdef_attempts" else "job = 'tick'"
        query(pg_backend.conninfo, f"DELETE FROM {schema}.{table} WHERE {where}", ())
    old = (int(time.time()) // 60 - 10) * 60
    query(
        pg_backend.conninfo,
        f"INSERT INTO {schema}.jobdef_slots (job, slot, job_id) VALUES ('tick', %s, 0)",
        (float(old),),
    )

    def slots_enqueued() -> list[float]:
        rows = query(
            pg_backend.conninfo,
            f"SELECT slot FROM {schema}.jobdef_jobs WHERE job = 'tick' AND slot > %s",
            (float(old),),
        )
        return [row[0] for row in rows]

    eventually(slots_enqueued, 6 * LEASE, "the second worker to enqueue the due slots")
    enqueued_after = time.monotonic() - frozen_at
    print(f"due cron slots enqueued {enqueued_after:.2f}s after the maintainer froze")
    assert enqueued_after <= 2 * LEASE + 2.0  # the takeover, then a scheduler tick
    assert f":{second.pid}:" in (_lease_row(pg_backend) or ("",))[0]
    assert len(slots_enqueued()) >= 9  # catch_up: all, one per minute since


def test_a_closing_maintainer_hands_its_lease_on_at_once(
    pg_backend: PostgresBackend, postgres_url: str
) -> None:
    with PostgresBackend(postgres_url, schema=pg_backend.schema) as second:
        assert pg_backend.try_maintenance_lock()
        generation = pg_backend.listener.generation
        assert not second.try_maintenance_lock()
        pg_backend.close()
        # Told on the schema's channel: long before the lease would have lapsed.
        eventually(second.try_maintenance_lock, 5, "the lease given back is taken")
        assert second.listener.generation == (generation or 0) + 1


def test_a_lapsed_lease_is_taken_over_and_its_old_holder_is_refused(
    pg_backend: PostgresBackend, postgres_url: str
) -> None:
    pg_backend.listener.lease_seconds = 0.5
    with PostgresBackend(postgres_url, schema=pg_backend.schema) as second:
        assert pg_backend.try_maintenance_lock()
        assert not second.try_maintenance_lock()
        eventually(second.try_maintenance_lock, 10, "the lease lapses")
        assert not pg_backend.try_maintenance_lock()
        assert pg_backend.listener.generation is None
        assert second.try_maintenance_lock()


def test_a_maintainer_that_loses_its_session_keeps_its_lease(
    pg_backend: PostgresBackend, postgres_url: str
) -> None:
    with PostgresBackend(postgres_url, schema=pg_backend.schema) as second:
        assert pg_backend.try_maintenance_lock()
        generation = pg_backend.listener.generation
        terminate(postgres_url, pg_backend.listener._session.info.backend_pid)
        eventually(pg_backend.try_maintenance_lock, 10, "the holder reconnects")
        assert pg_backend.listener.generation == generation
        assert not second.try_maintenance_lock()


def test_an_engine_that_does_not_hold_the_lease_asks_without_waiting_on_its_row(
    pg_backend: PostgresBackend, postgres_url: str
) -> None:
    """Every worker asks at each maintenance round: one that does not hold the lease must
    not lock its row (each would wait for the last one's commit, a queue of the fleet's
    WAL flushes). Here another session holds the row's lock: the ask still answers."""
    import psycopg

    with PostgresBackend(postgres_url, schema=pg_backend.schema) as second:
        assert pg_backend.try_maintenance_lock()
        with psycopg.connect(postgres_url) as locker:
            locker.execute(
                f'SELECT 1 FROM "{pg_backend.schema}".jobdef_leases '
                "WHERE name = 'maintenance' FOR UPDATE"
            )
            answers: list[bool] = []
            asking = threading.Thread(target=lambda: answers.append(second.try_maintenance_lock()))
            asking.start()
            asking.join(30)
            waited = asking.is_alive()
            locker.rollback()
            asking.join()
        assert not waited, "the ask waited for the row's lock"
        assert answers == [False]


def _lapse_lease(backend: PostgresBackend) -> None:
    """End the maintenance lease in its row, as a holder frozen past it would: no
    notification says so."""
    query(
        backend.conninfo,
        f'UPDATE "{backend.schema}".jobdef_leases SET expires_at = 0 WHERE name = %s',
        ("maintenance",),
    )


def test_an_engine_refused_the_lease_asks_again_only_once_it_can_have_lapsed(
    pg_backend: PostgresBackend, postgres_url: str
) -> None:
    """Asking at every round, each idle worker of a fleet ran a statement a second that
    changed nothing. Refused, an engine asks again once the lease it was refused can
    have lapsed: a lease that lapsed sooner (its holder froze) is taken then."""
    pg_backend.listener.lease_seconds = 1.0
    with PostgresBackend(postgres_url, schema=pg_backend.schema) as second:
        assert pg_backend.try_maintenance_lock()
        assert not second.try_maintenance_lock()
        _lapse_lease(pg_backend)
        assert not second.try_maintenance_lock()  # not asked: it would have taken it
        eventually(second.try_maintenance_lock, 5, "asks once the lease could have lapsed")
        assert not pg_backend.try_maintenance_lock()


def test_behind_a_pooler_an_engine_asks_at_every_round(
    pg_backend: PostgresBackend, postgres_url: str
) -> None:
    """With ?wake=poll nothing listens, so no engine hears a lease given back: each asks
    at every round, and takes a lease the moment it lapses."""
    url = f"{postgres_url}{'&' if '?' in postgres_url else '?'}wake=poll"
    with PostgresBackend(url, schema=pg_backend.schema) as pooled:
        assert pg_backend.try_maintenance_lock()
        assert not pooled.try_maintenance_lock()
        _lapse_lease(pg_backend)
        assert pooled.try_maintenance_lock()


def test_a_lease_given_back_wakes_no_worker_and_what_else_was_heard_is_kept(
    pg_backend: PostgresBackend, postgres_url: str
) -> None:
    """The notice of a lease given back is no enqueue: a waiting worker is not woken to
    claim by it (it asks for the lease at its next round). An enqueue's wake-up heard
    while an engine looked for that notice is still its next wait's."""
    with (
        PostgresBackend(postgres_url, schema=pg_backend.schema) as first,
        PostgresBackend(postgres_url, schema=pg_backend.schema) as second,
        PostgresBackend(postgres_url, schema=pg_backend.schema) as third,
    ):
        assert first.try_maintenance_lock()
        assert not second.try_maintenance_lock()  # both listen from here
        assert not third.try_maintenance_lock()
        pg_backend.enqueue([NewJob("noop", {}, "default")])
        time.sleep(0.5)  # its notification reaches the listening sessions
        assert not third.try_maintenance_lock()  # reads what came, asks nothing
        assert [wake.queue for wake in third.wait_for_jobs(0)] == ["default"]
        assert [wake.queue for wake in second.wait_for_jobs(LONG_WAIT)] == ["default"]
        first.close()
        assert second.wait_for_jobs(1.0) == []
        assert second.try_maintenance_lock()  # heard in the wait: asked at once


def test_a_busy_engine_keeps_a_bounded_number_of_the_wake_ups_it_read(
    pg_backend: PostgresBackend, postgres_url: str
) -> None:
    """A busy worker looks for the lease's notice every round and waits for jobs only
    once idle: the wake-ups it read meanwhile are kept up to UNREAD_MOST, past that as
    one that looks at every queue (which says all the others would)."""
    with (
        PostgresBackend(postgres_url, schema=pg_backend.schema) as first,
        PostgresBackend(postgres_url, schema=pg_backend.schema) as second,
    ):
        assert first.try_maintenance_lock()
        assert not second.try_maintenance_lock()
        for _ in range(2 * UNREAD_MOST):  # each enqueue notifies
            pg_backend.enqueue([NewJob("noop", {}, "default")])
        time.sleep(1.0)  # their notifications reach the listening session
        for _ in range(20):  # each look reads what one packet brought
            assert not second.try_maintenance_lock()
        assert second.wait_for_jobs(0) == [Wakeup()]


def test_a_busy_maintainer_keeps_a_bounded_number_of_the_wake_ups_its_renewals_read(
    pg_backend: PostgresBackend, postgres_url: str
) -> None:
    """The maintainer renews its lease on the listening session at every round: what
    arrived meanwhile went to the driver's backlog, which kept every notification of a
    busy maintainer until it next waited for jobs. It is kept as a waiting engine's is."""
    with PostgresBackend(postgres_url, schema=pg_backend.schema) as maintainer:
        assert maintainer.try_maintenance_lock()
        for _ in range(2 * UNREAD_MOST):  # each enqueue notifies
            pg_backend.enqueue([NewJob("noop", {}, "default")])
        time.sleep(1.0)  # their notifications reach the listening session
        for _ in range(20):  # each renewal reads what came
            assert maintainer.try_maintenance_lock()
        assert maintainer.wait_for_jobs(0) == [Wakeup()]
