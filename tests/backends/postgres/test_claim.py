"""Claim on PostgreSQL: SKIP LOCKED across processes, index-backed, limits held across workers."""

from __future__ import annotations

import multiprocessing

import psycopg
import pytest

from jobdef.backends.postgres.engine import PostgresBackend, _complete_params
from jobdef.backends.records import ClaimOptions, ErrorInfo, NewJob
from jobdef.backends.transitions import Completion
from support import ManualClock
from support.plans import entries_read

from . import proc
from .helpers import query


def _claim_plan(backend: PostgresBackend, limit: int = 10) -> str:
    """The plan of a ``limit``-job claim over all queues, on the engine's own session."""
    params = backend._claim_params(ClaimOptions("w", 30, limit=limit), backend.clock())
    rows = backend.sessions.connection().execute("EXPLAIN " + backend._q("claim_jobs"), params)
    return "\n".join(row[0] for row in rows)


def _spawn_pool(size: int) -> multiprocessing.pool.Pool:
    return multiprocessing.get_context("spawn").Pool(size)


@pytest.mark.slow
def test_four_processes_draining_10000_jobs_complete_each_exactly_once(
    pg_backend: PostgresBackend, postgres_url: str
) -> None:
    ids = [
        r.id
        for r in pg_backend.enqueue([NewJob("noop", {"n": n}, "default") for n in range(10_000)])
    ]
    with _spawn_pool(4) as pool:
        per_process = pool.starmap(
            proc.drain,
            [(postgres_url, pg_backend.schema, f"worker-{n}", 10) for n in range(4)],
        )
    completed = [job_id for ids_done in per_process for job_id in ids_done]
    assert sorted(completed) == sorted(ids)
    assert all(per_process), "every process should have taken part"
    done_attempts = query(
        postgres_url,
        f'SELECT job_id, count(*) FROM "{pg_backend.schema}".jobdef_attempts '
        "WHERE outcome = 'done' GROUP BY job_id HAVING count(*) <> 1",
    )
    assert done_attempts == []
    assert {s.state: s.count for s in pg_backend.stats()} == {"done": 10_000}


def test_claim_reads_the_partial_index_not_the_finished_rows(
    pg_backend: PostgresBackend, postgres_url: str
) -> None:
    schema = pg_backend.schema
    query(
        postgres_url,
        f'INSERT INTO "{schema}".jobdef_jobs (job, queue, args, state, max_attempts, '
        "run_after, created_at, updated_at, finished_at) "
        "SELECT 'old', 'default', '{}', 'done', 1, 0, 0, 0, 1 FROM generate_series(1, 50000)",
    )
    query(postgres_url, f'ANALYZE "{schema}".jobdef_jobs')
    pg_backend.enqueue([NewJob("new", {}, "default") for _ in range(20)])
    plan = _claim_plan(pg_backend)
    assert "jobdef_jobs_claim" in plan
    assert "Seq Scan on jobdef_jobs" not in plan


def test_a_big_claim_leases_its_jobs_through_the_primary_key_not_a_table_scan(
    pg_backend: PostgresBackend, postgres_url: str
) -> None:
    """A worker's batch of hundreds of jobs: joined to the table, the planner hashed the
    picks and scanned every row of the table, done ones included, on each claim."""
    schema = pg_backend.schema
    query(
        postgres_url,
        f'INSERT INTO "{schema}".jobdef_jobs (job, queue, args, state, max_attempts, '
        "run_after, created_at, updated_at, finished_at) "
        "SELECT 'old', 'default', '{}', 'done', 1, 0, 0, 0, 1 FROM generate_series(1, 20000)",
    )
    pg_backend.enqueue([NewJob("new", {"n": n}, "default") for n in range(2000)])
    query(postgres_url, f'ANALYZE "{schema}".jobdef_jobs')
    plan = _claim_plan(pg_backend, limit=500)
    assert "Index Scan using jobdef_jobs_pkey on jobdef_jobs" in plan
    assert "Seq Scan on jobdef_jobs" not in plan


def test_a_turn_sends_its_finished_ids_once_not_with_every_claimed_job(
    pg_backend: PostgresBackend,
) -> None:
    """complete_and_claim's rows: the batch's finished ids on the first row only; on
    every row, the server would write and the worker read them once per claimed job."""
    pg_backend.enqueue([NewJob("j", {"n": n}, "default") for n in range(30)])
    options = ClaimOptions("w", 30, limit=10)
    leases = [job.lease for job in pg_backend.claim(options)]
    now = pg_backend.clock()
    params = _complete_params(Completion(leases, {}, {}), now) | pg_backend._ends()
    params |= pg_backend._claim_params(options, now)
    conn = pg_backend.sessions.connection()
    rows = conn.execute(pg_backend._q("complete_and_claim"), params).fetchall()
    assert len(rows) == 10
    assert sorted(rows[0][0]) == sorted(lease.job_id for lease in leases)
    assert [row[0] for row in rows[1:]] == [None] * 9
    (done, claimed) = pg_backend.complete_and_claim(
        [job.lease for job in pg_backend.claim(ClaimOptions("w", 30, limit=5))], {}, options
    )
    assert (done, len(claimed)) == ([True] * 5, 5)


def test_a_concurrency_limit_holds_across_processes(
    pg_backend: PostgresBackend, postgres_url: str
) -> None:
    pg_backend.enqueue([NewJob("export", {"n": n}, "exports") for n in range(20)])
    with _spawn_pool(4) as pool:
        held = pool.starmap(
            proc.claim_limited,
            [(postgres_url, pg_backend.schema, f"worker-{n}", 2, 5) for n in range(4)],
        )
    assert sum(held) == 2
    assert [q.running for q in pg_backend.queues() if q.queue == "exports"] == [2]


def test_a_limited_queue_at_its_cap_does_not_hold_back_other_queues(
    pg_backend: PostgresBackend,
) -> None:
    pg_backend.enqueue(
        [NewJob("export", {}, "exports", priority=9) for _ in range(5)]
        + [NewJob("mail", {}, "mail") for _ in range(3)]
    )
    options = ClaimOptions("w1", lease_seconds=30, limit=10, queue_limits={"exports": 2})
    first = pg_backend.claim(options)
    assert sorted(job.queue for job in first) == ["exports", "exports", "mail", "mail", "mail"]
    assert pg_backend.claim(options) == []


def test_a_paused_queue_is_skipped_and_others_are_claimed(pg_backend: PostgresBackend) -> None:
    pg_backend.enqueue([NewJob("a", {}, "paused_q", priority=5), NewJob("b", {}, "open_q")])
    pg_backend.set_paused("paused_q", True)
    claimed = pg_backend.claim(ClaimOptions("w1", lease_seconds=30, limit=10))
    assert [job.queue for job in claimed] == ["open_q"]
    pg_backend.set_paused("paused_q", False)
    assert [j.queue for j in pg_backend.claim(ClaimOptions("w1", 30, limit=10))] == ["paused_q"]


def _backlog_ahead(backend: PostgresBackend, postgres_url: str) -> list[int]:
    """3,000 queued jobs of queue `backed_up`, first in claim order, then three of
    queue `served`, whose ids come back."""
    query(
        postgres_url,
        f'INSERT INTO "{backend.schema}".jobdef_jobs (job, queue, priority, args, state, '
        "max_attempts, run_after, created_at, updated_at) "
        "SELECT 'a', 'backed_up', 5, '{}', 'queued', 1, 0, 0, 0 FROM generate_series(1, 3000)",
    )
    query(postgres_url, f'ANALYZE "{backend.schema}".jobdef_jobs')
    return [r.id for r in backend.enqueue([NewJob("b", {}, "served") for _ in range(3)])]


def _rows_read(backend: PostgresBackend, name: str, options: ClaimOptions) -> int:
    """The jobdef_jobs rows statement ``name`` (a claim, or a turn with nothing to
    complete) reads to claim per ``options``: run under EXPLAIN ANALYZE on the
    engine's session, as a turn plans it (one plan for every execution), and rolled
    back."""
    now = backend.clock()
    params = backend._claim_params(options, now)
    if name.startswith("complete_and_claim"):
        params |= _complete_params(Completion([], {}, {}), now) | backend._ends()
    conn = backend.sessions.connection()
    conn.execute(backend._q("fixed_plans"))
    try:
        with conn.transaction():
            rows = conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + backend._q(name), params)
            [(plan,)] = rows.fetchall()
            raise psycopg.Rollback
    finally:
        conn.execute(backend._q("fresh_plans"))
    return entries_read(plan[0]["Plan"], "jobdef_jobs")


@pytest.mark.parametrize("statement", ["claim_jobs_by_queue", "complete_and_claim_by_queue"])
def test_a_claim_of_one_queue_reads_none_of_another_queues_backlog(
    pg_backend: PostgresBackend, postgres_url: str, statement: str
) -> None:
    """A worker serving one queue (--queues) reads that queue, not the backlog of another
    that comes first in claim order: the walk of the claim index read it whole (3,000
    rows) at each claim and each turn."""
    served = _backlog_ahead(pg_backend, postgres_url)
    options = ClaimOptions("w", 30, limit=10, queues=("served",))
    assert _rows_read(pg_backend, statement, options) <= 20  # the three, three times over
    assert sorted(job.id for job in pg_backend.claim(options)) == served


@pytest.mark.parametrize(
    ("statement", "most"),
    [
        ("claim_jobs", 0),  # the walk takes nothing, and says a queue is paused
        ("complete_and_claim", 0),
        ("claim_jobs_by_queue", 20),  # the three, three times over
        ("complete_and_claim_by_queue", 20),
    ],
)
def test_while_a_queue_is_paused_a_claim_reads_none_of_its_backlog(
    pg_backend: PostgresBackend, postgres_url: str, statement: str, most: int
) -> None:
    """Every worker claims at every turn and safety poll: a paused queue's backlog, read
    whole by each, would cost the server a walk of it per claim until the resume."""
    _backlog_ahead(pg_backend, postgres_url)
    pg_backend.set_paused("backed_up", True)
    assert _rows_read(pg_backend, statement, ClaimOptions("w", 30, limit=10)) <= most


def test_the_claim_after_a_pause_claims_by_queue_and_the_claim_after_the_resume_walks(
    pg_backend: PostgresBackend, postgres_url: str
) -> None:
    """The engine walks until a claim says a queue is paused; that claim, which the walk
    left empty, is made again by queue, and so is every claim until one says no queue
    is paused. Claims and turns alike: none comes back empty while jobs it may take
    are queued (a burst worker would stop)."""
    served = _backlog_ahead(pg_backend, postgres_url)
    pg_backend.set_paused("backed_up", True)
    options = ClaimOptions("w", 30, limit=2)
    first = pg_backend.claim(options)  # walked, found the pause, claimed by queue
    assert [job.queue for job in first] == ["served", "served"]
    done, turn = pg_backend.complete_and_claim([job.lease for job in first], {}, options)
    assert done == [True, True]
    assert sorted(job.id for job in first + turn) == served
    assert pg_backend._paused_seen
    pg_backend.set_paused("backed_up", False)
    # By queue, which sees the resume; then the walk again.
    assert {job.queue for job in pg_backend.claim(options)} == {"backed_up"}
    assert not pg_backend._paused_seen
    assert {job.queue for job in pg_backend.claim(options)} == {"backed_up"}


def test_a_claim_of_every_queue_with_none_paused_walks_the_claim_index_from_its_head(
    pg_backend: PostgresBackend, postgres_url: str
) -> None:
    """The common claim keeps its single walk: it reads what it takes, and in claim
    order across queues."""
    _backlog_ahead(pg_backend, postgres_url)
    options = ClaimOptions("w", 30, limit=10)
    # The ten it takes, three times over: the walk, the lease by id, the update.
    assert _rows_read(pg_backend, "claim_jobs", options) <= 30
    assert {job.queue for job in pg_backend.claim(options)} == {"backed_up"}


def test_a_reclaimed_lease_fences_out_the_late_worker(
    pg_backend: PostgresBackend, clock: ManualClock
) -> None:
    pg_backend.enqueue([NewJob("a", {}, "default", max_attempts=3)])
    (slow,) = pg_backend.claim(ClaimOptions("slow-worker", lease_seconds=10))
    clock.advance(11)
    (expired,) = pg_backend.expired_leases()
    assert expired.lease == slow.lease
    error = ErrorInfo("TimeoutError", "lease expired")
    assert pg_backend.retry(expired.lease, error, clock(), 0.0, outcome="reclaimed")
    (fresh,) = pg_backend.claim(ClaimOptions("other-worker", lease_seconds=10))
    assert fresh.attempt == 2
    assert pg_backend.complete([slow.lease]) == [False]
    assert not pg_backend.heartbeat(slow.lease, 10)
    assert pg_backend.complete([fresh.lease]) == [True]


def test_a_long_fresh_queue_is_walked_in_index_order_not_sorted(
    pg_backend: PostgresBackend,
) -> None:
    """Statistics from when the table was empty must not turn claims into full sorts."""
    pg_backend.enqueue([NewJob("burst", {"n": n}, "default") for n in range(5000)])
    plan = _claim_plan(pg_backend)
    assert "Index Scan using jobdef_jobs_claim on jobdef_jobs" in plan
    assert "Bitmap" not in plan
