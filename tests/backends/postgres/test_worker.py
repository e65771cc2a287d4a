"""The worker on PostgreSQL, in real processes: many workers, kill -9, lost sessions, wake-up,
the sessions it holds."""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import signal
import statistics
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from jobdef.backends.postgres.engine import PostgresBackend
from jobdef.runtime.queue import Queue
from jobdef.runtime.worker import RECHECK_AFTER_WAKE, SAFETY_POLL
from jobdef.sheets.pipeline import load_registry
from support import eventually

from . import proc
from .helpers import query
from .sheets import write_sheets

pytestmark = pytest.mark.slow
# A worker of a schema (formatted in) that has listened and taken the maintenance lease
# (on its listening session, after its first claim): it waits for jobs next.
MAINTAINING = "SELECT holder FROM {}.jobdef_leases WHERE holder LIKE %s"
SPAWN = multiprocessing.get_context("spawn")


class Workers:
    """Worker processes started by one test; whatever is left is killed at the end."""

    def __init__(self, url: str, schema: str, sheets: Path) -> None:
        self.url, self.schema, self.sheets = url, schema, str(sheets)
        self.processes: list[Any] = []

    def start(self, **options: Any) -> Any:
        process = SPAWN.Process(
            target=proc.run_worker,
            args=(self.url, self.schema, self.sheets),
            kwargs=options,
        )
        process.start()
        self.processes.append(process)
        return process

    def stop_all(self) -> None:
        for process in self.processes:
            if process.is_alive():
                os.kill(process.pid, signal.SIGTERM)
        for process in self.processes:
            process.join(30)
            if process.is_alive():
                process.kill()
                process.join()


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


def _attempts(backend: PostgresBackend) -> list[tuple[Any, ...]]:
    return query(
        backend.conninfo,
        f'SELECT job_id, attempt, worker_id, outcome FROM "{backend.schema}".jobdef_attempts '
        "ORDER BY id",
    )


def _states(backend: PostgresBackend) -> dict[str, int]:
    """Jobs per state, all job names together."""
    counts: dict[str, int] = {}
    for row in backend.stats():
        counts[row.state] = counts.get(row.state, 0) + row.count
    return counts


def test_four_worker_processes_run_10000_jobs_each_exactly_once(
    pg_backend: PostgresBackend, workers: Workers, queue: Queue
) -> None:
    """The four are up (registered, their handler processes ready) before the jobs come:
    on a loaded machine the first to boot could otherwise drain all before the last is up."""
    for _ in range(4):
        workers.start(concurrency=2)
    registered = f"SELECT count(*) FROM {pg_backend.schema}.jobdef_workers"
    eventually(lambda: query(pg_backend.conninfo, registered) == [(4,)], timeout=120)
    ids = {r.id for r in queue.enqueue_many("noop", ({"n": n} for n in range(10_000)))}
    eventually(lambda: _states(pg_backend) == {"done": 10_000}, timeout=300)
    workers.stop_all()
    assert [process.exitcode for process in workers.processes] == [0, 0, 0, 0]
    attempts = _attempts(pg_backend)
    assert sorted(job_id for job_id, *_ in attempts) == sorted(ids)
    assert {outcome for *_, outcome in attempts} == {"done"}
    assert len({worker for _, _, worker, _ in attempts}) == 4


def test_a_job_of_a_worker_killed_with_sigkill_is_reclaimed_and_completed(
    pg_backend: PostgresBackend, workers: Workers, queue: Queue, tmp_path: Path
) -> None:
    marker = tmp_path / "started"
    (job,) = [queue.enqueue("slow_first_attempt", {"marker": str(marker)})]
    doomed = workers.start(lease_seconds=2.0)
    eventually(lambda: marker.exists() and marker.read_text().startswith("1 "))
    os.kill(doomed.pid, signal.SIGKILL)
    doomed.join()
    workers.start(lease_seconds=2.0)
    eventually(lambda: pg_backend.get(job.id).state == "done", timeout=60)
    assert [(a, outcome) for _, a, _, outcome in _attempts(pg_backend)] == [
        (1, "reclaimed"),
        (2, "done"),
    ]


def test_a_worker_whose_sessions_are_terminated_mid_job_reconnects_and_goes_on(
    pg_backend: PostgresBackend, workers: Workers, queue: Queue, tmp_path: Path
) -> None:
    marker = tmp_path / "started"
    job = queue.enqueue("pause", {"marker": str(marker), "seconds": 2.0})
    workers.start(lease_seconds=3.0)
    eventually(marker.exists)
    terminated = query(
        pg_backend.conninfo,
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
        "WHERE application_name = 'jobdef' AND pid <> pg_backend_pid()",
    )
    assert terminated, "the worker's sessions should have been found"
    eventually(lambda: pg_backend.get(job.id).state == "done", timeout=60)
    later = queue.enqueue_many("noop", ({"n": n} for n in range(20)))
    eventually(lambda: all(pg_backend.get(r.id).state == "done" for r in later), timeout=60)
    assert [outcome for job_id, _, _, outcome in _attempts(pg_backend) if job_id == job.id] == [
        "done"
    ]
    assert pg_backend.expired_leases() == []
    assert _states(pg_backend) == {"done": 21}


def test_a_rolled_back_transactional_enqueue_is_never_run(
    pg_backend: PostgresBackend, workers: Workers, queue: Queue
) -> None:
    with psycopg.connect(pg_backend.conninfo) as conn:
        queue.enqueue("noop", {"n": 1}, connection=conn)
        conn.rollback()
        queue.enqueue("noop", {"n": 2}, connection=conn)
        conn.commit()
    workers.start(burst=True).join(60)
    assert [(r.args, r.state) for r in pg_backend.list_jobs()] == [({"n": 2}, "done")]


def test_an_idle_worker_is_woken_by_notify_not_by_its_poll(
    postgres_url: str, pg_backend: PostgresBackend, workers: Workers, sheets: Path
) -> None:
    workers.start(poll_interval=120.0)
    # Latency compares the enqueue time with the worker's start time: both real clocks.
    with PostgresBackend(postgres_url, schema=pg_backend.schema) as backend:
        queue = Queue(backend, load_registry([sheets]))
        latencies = []
        for n in range(10):
            job = queue.enqueue("noop", {"n": n})
            # Far below the 120 s poll: only the notification can start the job this soon.
            eventually(lambda job=job: backend.get(job.id).state == "done", timeout=60)
            (attempt,) = backend.attempts(job.id)
            latencies.append(attempt.started_at - backend.get(job.id).created_at)
    print(f"median enqueue-to-start latency: {statistics.median(latencies) * 1000:.1f} ms")


def test_a_retry_starts_when_its_backoff_ends_not_at_the_next_safety_poll(
    postgres_url: str, pg_backend: PostgresBackend, workers: Workers, sheets: Path
) -> None:
    """No notification says a backoff is over; the worker that scheduled the retry claims
    when it comes due, where an idle worker's safety poll (LISTEN up) would wait 0.75 s
    or more. The sheet's backoff is 200 ms."""
    workers.start(concurrency=1)
    with PostgresBackend(postgres_url, schema=pg_backend.schema) as backend:
        queue = Queue(backend, load_registry([sheets]))
        waits = []
        for n in range(5):
            job = queue.enqueue("fail_first", {"n": n})
            eventually(lambda job=job: backend.get(job.id).state == "done", timeout=60)
            failed, done = backend.attempts(job.id)
            assert failed.outcome == "retry"
            assert failed.finished_at is not None
            waits.append(done.started_at - failed.finished_at)
    assert min(waits) >= 0.2 - 0.05  # the backoff is kept (the clock's reading may lag)
    assert statistics.median(waits) < SAFETY_POLL * 0.75, waits


def test_a_delayed_job_starts_when_it_comes_due_not_at_the_next_safety_poll(
    postgres_url: str, pg_backend: PostgresBackend, workers: Workers, sheets: Path
) -> None:
    """The enqueue's notification of a delayed job says when it is due, and the worker
    whose turn it is claims then; an idle worker's safety poll (LISTEN up) would find it
    0.75 s or more later. The delay outlasts the look-again window after a wake-up."""
    workers.start(concurrency=1)
    delay = 0.8
    with PostgresBackend(postgres_url, schema=pg_backend.schema) as backend:
        queue = Queue(backend, load_registry([sheets]))
        eventually(lambda: bool(backend.workers()), what="the worker registered")
        lates = []
        for n in range(5):
            job = queue.enqueue("noop", {"n": n}, delay=delay)
            eventually(lambda job=job: backend.get(job.id).state == "done", timeout=60)
            record = backend.get(job.id)
            assert record is not None
            (attempt,) = backend.attempts(job.id)
            lates.append(attempt.started_at - (record.created_at + delay))
    assert min(lates) >= -0.05  # never before it is due (the clocks' readings may lag)
    # Claimed at a wake-up's look-again window, or at a safety poll after it, the job
    # would start at least RECHECK_AFTER_WAKE + 0.75 * SAFETY_POLL - delay = 0.45 s late.
    assert statistics.median(lates) < (RECHECK_AFTER_WAKE + 0.75 * SAFETY_POLL - delay) / 2, lates


def _claims(path: Path) -> list[tuple[float, int]]:
    """The claims a worker started with ``claims_file=path`` made so far."""
    return [tuple(claim) for claim in json.loads(path.read_text())] if path.exists() else []


def _idle_claims_after(
    notify: str, pg_backend: PostgresBackend, workers: Workers, tmp_path: Path
) -> list[tuple[float, int]]:
    """The claims an idle lone worker makes in the 0.6 s after the notification ``notify``
    (a payload; ``{now}`` is the store's clock): its wake-up's claim and what follows.
    The notification is sent within 50 ms of a safety poll's claim, so the next safety
    poll (0.75 s or more after the last claim) falls after the window."""
    counted = tmp_path / "claims.json"
    workers.start(concurrency=1, claims_file=str(counted))
    eventually(lambda: bool(pg_backend.workers()), what="the worker registered")
    eventually(lambda: len(_claims(counted)) >= 1, what="the first claim")
    with psycopg.connect(pg_backend.conninfo, autocommit=True) as conn:
        seen = len(_claims(counted))
        deadline = time.monotonic() + 30
        while True:
            assert time.monotonic() < deadline, "no safety poll of the idle worker"
            claims = _claims(counted)
            if len(claims) > seen and time.monotonic() - claims[-1][0] < 0.05:
                break
            seen = len(claims)
            time.sleep(0.005)
        sent = time.monotonic()
        payload = notify.format(now=pg_backend.clock())
        conn.execute("SELECT pg_notify(%s, %s)", [pg_backend.channel, payload])
    time.sleep(0.6)
    return [claim for claim in _claims(counted) if sent <= claim[0] < sent + 0.6]


def test_a_wake_up_whose_jobs_another_worker_took_costs_one_claim_not_a_look_again_window(
    pg_backend: PostgresBackend, workers: Workers, tmp_path: Path
) -> None:
    """An enqueue's notification says by when its jobs were due on the enqueuer's clock
    (``at``): a first turn's claim that finds nothing at a later clock knows that another
    worker took them, and does not claim again every RECHECK_INTERVAL."""
    claims = _idle_claims_after("default 1 999999 - {now}", pg_backend, workers, tmp_path)
    assert len(claims) == 1, claims
    assert claims[0][1] == 0


def test_a_wake_up_that_does_not_say_when_its_jobs_were_due_is_looked_at_again(
    pg_backend: PostgresBackend, workers: Workers, tmp_path: Path
) -> None:
    """An older enqueuer's notification (no ``at``): the claim may have come before the job
    was due by this host's reading of the clock, so the worker looks again for a while."""
    claims = _idle_claims_after("default 1 999999", pg_backend, workers, tmp_path)
    assert len(claims) >= 5, claims


def test_a_job_from_an_enqueuer_whose_clock_is_ahead_starts_when_due_by_that_clock(
    postgres_url: str, pg_backend: PostgresBackend, workers: Workers, sheets: Path
) -> None:
    """The enqueuer's reading of the store's clock is 0.8 s ahead of the worker's (more
    than the look-again window after a wake-up): its jobs are not due yet when the worker
    is woken, and it claims once more when they are, not at a safety poll after."""
    workers.start(concurrency=1)
    ahead = 0.8
    with PostgresBackend(postgres_url, schema=pg_backend.schema) as backend:
        reading = backend.clock
        backend.clock = lambda: reading() + ahead  # type: ignore[method-assign]
        queue = Queue(backend, load_registry([sheets]))
        eventually(lambda: bool(backend.workers()), what="the worker registered")
        lates = []
        for n in range(5):
            job = queue.enqueue("noop", {"n": n})
            eventually(lambda job=job: backend.get(job.id).state == "done", timeout=60)
            record = backend.get(job.id)
            assert record is not None
            (attempt,) = backend.attempts(job.id)
            lates.append(attempt.started_at - record.created_at)
    assert min(lates) >= -0.05  # never before it is due (the clocks' readings may lag)
    # Claimed at a look-again window's end or a safety poll, it would start 0.75 s or
    # more after it came due.
    assert statistics.median(lates) < 0.75 / 2, lates


def test_sigterm_ends_an_idle_workers_wait_at_once(workers: Workers) -> None:
    idle = workers.start(poll_interval=120.0)
    lease = MAINTAINING.format(f'"{workers.schema}"')
    eventually(lambda: query(workers.url, lease, [f"%:{idle.pid}:%"]))
    time.sleep(0.5)  # its claim found nothing: it waits
    os.kill(idle.pid, signal.SIGTERM)
    idle.join(60)  # far below the 120 s poll: the wait was cut short
    assert idle.exitcode == 0


def test_a_worker_rides_out_a_store_that_fails_and_records_every_job_once(
    pg_backend: PostgresBackend, workers: Workers, queue: Queue, tmp_path: Path
) -> None:
    marker = tmp_path / "m"
    jobs = [queue.enqueue("pause", {"marker": str(marker), "seconds": 0.05}) for _ in range(60)]
    worker = workers.start(concurrency=2)
    table = f'"{pg_backend.schema}".jobdef_attempts'

    def done() -> int:
        return sum(pg_backend.get(job.id).state == "done" for job in jobs)  # type: ignore[union-attr]

    eventually(lambda: done() >= 5, timeout=60)
    # Every completion writes an attempt row: without the table each one fails.
    query(pg_backend.conninfo, f"ALTER TABLE {table} RENAME TO jobdef_attempts_away")
    try:
        stalled = done()
        # The children run what the worker holds, then idle: nothing new is claimed.
        eventually(lambda: marker.stat().st_mtime < time.time() - 1.0, timeout=60)
        assert worker.is_alive()
        assert done() == stalled
    finally:
        query(
            pg_backend.conninfo,
            f'ALTER TABLE "{pg_backend.schema}".jobdef_attempts_away RENAME TO jobdef_attempts',
        )
    eventually(lambda: done() == len(jobs), timeout=60)
    assert worker.is_alive()
    runs = [job_id for job_id, *_ in _attempts(pg_backend)]
    assert sorted(runs) == sorted(job.id for job in jobs)  # each job once: none lost, none twice


@contextlib.contextmanager
def _a_turn_held_on_a_lock(
    pg_backend: PostgresBackend,
    workers: Workers,
    queue: Queue,
    tmp_path: Path,
    *,
    pipeline_turns: bool = True,
) -> Iterator[tuple[Any, list[Any]]]:
    """A worker whose turn waits on the server, yielded with its jobs (first, long,
    second): the turn completes the first and claims the second, enqueued meanwhile,
    while the first's row is locked elsewhere; the lock goes at the end of the block."""
    marker, long_marker = tmp_path / "m", tmp_path / "long"
    first = queue.enqueue("pause", {"marker": str(marker), "seconds": 0.5})
    # A long job keeps the other handler process busy: the turn that completes the first
    # is then sent without waiting. Two jobs held at most: the next job is claimed only
    # by that turn.
    long = queue.enqueue("pause", {"marker": str(long_marker), "seconds": 5.0})
    worker = workers.start(concurrency=2, prefetch=1, pipeline_turns=pipeline_turns)
    eventually(lambda: marker.exists() and long_marker.exists(), timeout=60)
    second = queue.enqueue("noop", {"n": 1})
    table = f'"{pg_backend.schema}".jobdef_jobs'
    waiting = (
        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
        f"AND query LIKE '%%{pg_backend.schema}%%jobdef_attempts%%'"
    )
    with psycopg.connect(pg_backend.conninfo) as locker:
        # The first job's row locked elsewhere: the turn that completes it (and claims
        # the next) waits on the server, the worker's loop going on meanwhile.
        locker.execute(f"SELECT 1 FROM {table} WHERE id = %s FOR UPDATE", [first.id])
        eventually(lambda: query(pg_backend.conninfo, waiting)[0][0] == 1, timeout=60)
        yield worker, [first, long, second]
        locker.rollback()


def test_a_worker_stopped_while_its_turn_waits_on_the_server_gives_back_what_it_claimed(
    pg_backend: PostgresBackend, workers: Workers, queue: Queue, tmp_path: Path
) -> None:
    with _a_turn_held_on_a_lock(pg_backend, workers, queue, tmp_path) as (worker, jobs):
        os.kill(worker.pid, signal.SIGTERM)
        time.sleep(0.3)
        assert worker.is_alive()  # it waits for the turn's answer before it drains
    first, long, second = jobs
    worker.join(60)
    assert worker.exitcode == 0
    # The turn committed: the first job done; the next, claimed by it, given back; the
    # long one drained.
    for job in (first, long):
        assert pg_backend.get(job.id).state == "done"  # type: ignore[union-attr]
    released = pg_backend.get(second.id)
    assert released is not None
    assert (released.state, released.worker_id) == ("queued", None)
    assert sorted((row[0], row[3]) for row in _attempts(pg_backend)) == [
        (first.id, "done"),
        (long.id, "done"),
        (second.id, "released"),  # never started: recorded as given back
    ]


@pytest.mark.parametrize("pipeline_turns", [True, False], ids=["pipelined", "waited"])
def test_a_worker_killed_before_it_reads_a_turns_answer_has_its_claims_given_back_uncounted(
    pg_backend: PostgresBackend,
    workers: Workers,
    queue: Queue,
    tmp_path: Path,
    pipeline_turns: bool,
) -> None:
    """The server commits a turn whose answer the worker never reads: frozen (SIGSTOP)
    while the turn waits on a lock, the lock goes, then SIGKILL. The job that turn
    claimed never reached a handler process; they give it back, its attempt not counted
    (runtime.orphan), rather than leave it to be reclaimed, charged, once its lease ends.
    The job a process was running when the worker died is left to the reclaimer."""

    def row(job: Any) -> tuple[str, int, str | None]:
        record = pg_backend.get(job.id)
        assert record is not None
        return record.state, record.attempt, record.worker_id

    with _a_turn_held_on_a_lock(
        pg_backend, workers, queue, tmp_path, pipeline_turns=pipeline_turns
    ) as (worker, jobs):
        os.kill(worker.pid, signal.SIGSTOP)
    first, long, second = jobs
    eventually(lambda: row(first)[0] == "done", timeout=30)
    assert row(second)[0] == "running"  # claimed by the turn, its answer unread
    os.kill(worker.pid, signal.SIGKILL)
    worker.join(10)
    eventually(lambda: row(second)[0] == "queued", timeout=10)
    assert row(second) == ("queued", 0, None)
    assert row(long)[0] == "running"  # it started: the reclaimer's
    assert sorted((row[0], row[3]) for row in _attempts(pg_backend)) == [
        (first.id, "done"),
        (second.id, "released"),
    ]


class _WatchedTurns(PostgresBackend):
    """The engine, noting each turn the worker sends, how many jobs its answer brings
    (``leased``, which the worker reads first) and when the answer is read (``read``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.events: list[tuple[str, int, int]] = []  # (what, turn number, a count)

    def send_turn(self, leases: Any, notifications: Any, options: Any, results: Any = None) -> Any:
        turn = super().send_turn(leases, notifications, options, results)
        if turn is None:
            return None
        number = sum(1 for event in self.events if event[0] == "sent")
        self.events.append(("sent", number, len(leases)))
        self.events.append(("asked", number, options.limit))
        events = self.events

        class Watched:
            fileno, ready = turn.fileno, turn.ready

            def leased(self) -> int:
                count: int = turn.leased()
                events.append(("leased", number, count))
                return count

            def result(self) -> Any:
                answer = turn.result()
                events.append(("read", number, len(answer[1])))
                return answer

        return Watched()

    def claim(self, options: Any) -> Any:
        records = super().claim(options)
        self.events.append(("asked", -1, options.limit))
        self.events.append(("leased", -1, len(records)))
        return records

    def complete_and_claim(self, leases: Any, notes: Any, options: Any, results: Any = None) -> Any:
        self.events.append(("sent", -1, len(leases)))
        accepted, records = super().complete_and_claim(leases, notes, options, results)
        self.events.append(("asked", -1, options.limit))
        self.events.append(("leased", -1, len(records)))
        return accepted, records

    def complete(self, leases: Any, notes: Any = None, results: Any = None) -> Any:
        self.events.append(("sent", -1, len(leases)))
        return super().complete(leases, notes, results)


def test_a_worker_sends_its_next_turn_before_it_reads_the_answer_and_holds_no_more_than_its_window(
    pg_backend: PostgresBackend, queue: Queue, sheets: Path
) -> None:
    from jobdef.runtime.settings import WorkerSettings
    from jobdef.runtime.worker import Worker

    ids = [job.id for job in queue.enqueue_many("noop", ({"n": n} for n in range(3000)))]
    backend = _WatchedTurns(pg_backend.conninfo, schema=pg_backend.schema)
    settings = WorkerSettings(burst=True, concurrency=2, prefetch=64, pipeline_turns=True)
    try:
        stats = Worker(backend, load_registry([sheets]), settings).run()
    finally:
        backend.close()
    assert stats.done == len(ids)
    runs = sorted(row[0] for row in _attempts(pg_backend))
    assert runs == sorted(ids)  # each job once
    events = backend.events
    at = {(what, number): index for index, (what, number, _) in enumerate(events) if number >= 0}
    sent = [number for what, number in at if what == "sent"]
    assert len(sent) > 10
    # Chained: the next turn went out after this one said how many jobs it brings and
    # before its jobs were read, for most turns of the drain.
    chained = [
        number
        for number in sent
        if ("sent", number + 1) in at
        and at[("leased", number)] < at[("sent", number + 1)] < at[("read", number)]
    ]
    assert len(chained) >= len(sent) // 2
    # Held: claimed (known at `leased`) less sent to be completed; never above the
    # window (2 processes x 64) with a turn's claim added, when it is asked.
    held = 0
    for what, _, count in events:
        if what == "leased":
            held += count
        elif what == "sent":
            held -= count
        elif what == "asked":
            assert held + count <= 2 * 64


def test_by_default_a_worker_waits_for_each_turn(
    pg_backend: PostgresBackend, queue: Queue, sheets: Path
) -> None:
    from jobdef.runtime.settings import WorkerSettings
    from jobdef.runtime.worker import Worker

    ids = [job.id for job in queue.enqueue_many("noop", ({"n": n} for n in range(500)))]
    backend = _WatchedTurns(pg_backend.conninfo, schema=pg_backend.schema)
    try:
        stats = Worker(backend, load_registry([sheets]), WorkerSettings(burst=True)).run()
    finally:
        backend.close()
    assert stats.done == len(ids)
    assert not [event for event in backend.events if event[0] == "sent" and event[1] >= 0]


# The sessions a worker process opens, with LISTEN (the default) and with ?wake=poll
# (behind PgBouncer in transaction mode): how many, and that the second listens to nothing.
SESSIONS = "SELECT query FROM pg_stat_activity WHERE application_name = %s"


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
