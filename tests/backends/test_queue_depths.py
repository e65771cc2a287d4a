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
from support.plans import entries_read, plan_nodes

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


# The oldest wait: a skip scan over each queue's priorities (first entry of each
# (queue, priority) in jobdef_jobs_claim_queue), never a walk of the queue's backlog.

PRIORITIES = (2_147_483_647, 1_000_000, 7, 0, -5, -2_147_483_648)  # int4's ends too


def _plain_oldest(store, backend) -> dict[str, float]:
    """Each queue's min(run_after) over its queued rows, by a plain GROUP BY."""
    sqlite = store.url.startswith("sqlite")
    table = "jobdef_jobs" if sqlite else f'"{backend.schema}".jobdef_jobs'
    conn = store.connect()
    try:
        rows = conn.execute(
            f"SELECT queue, min(run_after) FROM {table} WHERE state = 'queued' GROUP BY queue"
        ).fetchall()
    finally:
        conn.close()
    return {queue: oldest for queue, oldest in rows}


def _assert_oldest_is_plain_min(store, backend, clock) -> dict[str, float | None]:
    plain = _plain_oldest(store, backend)
    got = {info.queue: info.oldest_queued_age for info in backend.queues()}
    want = {queue: None if queue not in plain else max(0, clock() - plain[queue]) for queue in got}
    assert got == want
    assert set(plain) <= set(got)
    return got


def _enqueue_at(backend, queue, priority, run_afters):
    jobs = [
        NewJob(job="j", args={"at": at}, queue=queue, priority=priority, run_after=at)
        for at in run_afters
    ]
    return backend.enqueue(jobs)


def test_the_oldest_wait_is_the_queues_min_run_after_over_all_its_priorities(
    backend, store, clock, worker
) -> None:
    now = clock()
    # For each place in the priority order, a queue whose oldest job sits there:
    # missing any one priority (the first, one between, the last) changes its answer.
    for place, oldest_priority in enumerate(PRIORITIES):
        queue = f"oldest_at_{place}"
        for priority in PRIORITIES:
            base = now - 1_000 if priority == oldest_priority else now - 100
            _enqueue_at(backend, queue, priority, [base + 3, base, base + 50, now + 60])
    # Each higher priority holds older jobs: claiming one empties the priority that
    # holds the oldest job.
    for rank, priority in enumerate(PRIORITIES):
        ages = [10 * (len(PRIORITIES) - rank) + d for d in (1, 5, 2)]
        _enqueue_at(backend, "mixed", priority, [now - age for age in ages])
    _enqueue_at(backend, "mixed", 3, [now + 500])  # a priority holding only a future job
    _enqueue_at(backend, "future_only", 0, [now + 30, now + 90])
    _enqueue_at(backend, "future_only", -1, [now + 10])
    _enqueue_at(backend, "single", 4, [now - 42.5])
    backend.set_paused("row_only", True)  # a row in jobdef_queues, no job
    _enqueue_at(backend, "running_only", 0, [now - 5, now - 7])
    _enqueue_at(backend, "running_only", 9, [now - 6])
    for _ in range(3):
        worker.claim_one(queues=["running_only"])

    got = _assert_oldest_is_plain_min(store, backend, clock)
    for place in range(len(PRIORITIES)):
        assert got[f"oldest_at_{place}"] == 1_000
    assert got["mixed"] == 10 * len(PRIORITIES) + 5
    assert got["future_only"] == 0  # queued, not due yet: no wait, but not "nothing queued"
    assert got["single"] == 42.5
    assert got["row_only"] is None
    assert got["running_only"] is None

    # Claims take the highest priority first, the oldest of it first: the oldest wait
    # moves to the next one's jobs as each priority is emptied, until only a job not
    # due yet is left.
    ages = []
    while worker.claim(1, queues=["mixed"]):
        ages.append(_assert_oldest_is_plain_min(store, backend, clock)["mixed"])
    assert len(ages) == 3 * len(PRIORITIES)
    assert ages[2] == 10 * (len(PRIORITIES) - 1) + 5  # the first priority emptied
    assert _assert_oldest_is_plain_min(store, backend, clock)["mixed"] == 0  # the future one
    clock.advance(1_000)
    assert _assert_oldest_is_plain_min(store, backend, clock)["mixed"] == 500


def _fill_queued(backend, queue: str, n: int, start: float) -> None:
    """``n`` queued jobs over three priorities, the oldest first."""
    jobs = [
        NewJob(job="j", args={}, queue=queue, priority=(5, 0, -3)[i % 3], run_after=start + i)
        for i in range(n)
    ]
    for first in range(0, n, 5_000):
        backend.enqueue(jobs[first : first + 5_000])


def _vm_steps(path: Path, sql: str, params: dict[str, float]) -> tuple[int, list[tuple]]:
    """The statement's rows and the number of VM instructions SQLite ran for them."""
    steps = 0

    def step() -> int:
        nonlocal steps
        steps += 1
        return 0

    conn = sqlite3.connect(path)
    try:
        conn.set_progress_handler(step, 1)
        rows = conn.execute(sql, params).fetchall()
    finally:
        conn.close()
    return steps, rows


@pytest.mark.slow
def test_sqlite_queue_depths_reads_as_much_for_a_long_backlog_as_for_a_short_one(
    tmp_path: Path, clock
) -> None:
    """SQLite's plan names the index but not how far it walks it: the number of VM steps
    the query takes does, and with the count capped it must not grow with the backlog."""
    path = tmp_path / "jobs.db"
    backend = open_backend(f"sqlite:///{path}", clock=clock)
    sql = load_queries("jobdef.backends.sqlite", "queries.sql")["queue_depths"]
    steps = []
    try:
        _enqueue(backend, 2, "other")
        start = clock() - 100_000
        for n in (300, 30_000):
            start -= n
            _fill_queued(backend, "long", n, start)
            count, rows = _vm_steps(path, sql, {"now": clock(), "cap": 10})
            assert [row[0] for row in rows] == ["long", "other"]
            assert rows[0][4] == clock() - start  # the oldest one, in the first priority
            steps.append(count)
    finally:
        backend.close()
    assert steps[1] == steps[0], steps  # a walk of the backlog would take 100 times more


def test_postgres_queue_depths_never_walks_a_table_or_a_backlog(postgres_url, postgres_schema):
    """With statistics that say one queue holds most rows, the plan still reads only
    probes of the partial indexes: no Seq Scan of jobdef_jobs (finished rows and all),
    and, with the count capped at 10, a few dozen index entries in all."""
    import psycopg

    table = f'"{postgres_schema}".jobdef_jobs'
    open_backend(f"{postgres_url}?schema={postgres_schema}").close()
    columns = "job, queue, priority, args, state, max_attempts, run_after, created_at, updated_at"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(
            f"INSERT INTO {table} ({columns}, finished_at) SELECT 'j', 'long', 0, '{{}}', "
            "'done', 1, g, g, g, g FROM generate_series(1, 30000) AS g"
        )
        conn.execute(
            f"INSERT INTO {table} ({columns}) SELECT 'j', 'long', (ARRAY[5, 0, -3])[1 + g % 3], "
            "'{}', 'queued', 1, 1000 + g, 0, 0 FROM generate_series(1, 30000) AS g"
        )
        conn.execute(
            f"INSERT INTO {table} ({columns}) VALUES"
            " ('j', 'short', 1, '{}', 'queued', 1, 7, 0, 0),"
            " ('j', 'short', -1, '{}', 'queued', 1, 3, 0, 0)"
        )
        conn.execute(f"ANALYZE {table}")
        sql = load_queries("jobdef.backends.postgres", "queries.sql")["queue_depths"]
        sql = sql.replace("{schema}", f'"{postgres_schema}"')
        params = {"now": 50_000.0, "cap": 10}
        [(plan,)] = conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params).fetchall()
        rows = conn.execute(sql, params).fetchall()
    assert [(row[0], row[2], row[4]) for row in rows] == [
        ("long", 10, 50_000.0 - 1001),
        ("short", 2, 50_000.0 - 3),
    ]
    reads = [
        node for node in plan_nodes(plan[0]["Plan"]) if node.get("Relation Name") == "jobdef_jobs"
    ]
    assert reads
    assert [node["Node Type"] for node in reads if "Index" not in node["Node Type"]] == []
    assert {node["Index Name"] for node in reads} <= set(ACTIVE_INDEXES)
    entries = entries_read(plan[0]["Plan"], "jobdef_jobs")
    assert entries <= 40, entries  # the min() over the backlog read 30,000


def test_postgres_queue_depths_counts_each_queue_once(postgres_url, postgres_schema):
    """Each queue's backlog is counted up to the cap once per statement, whatever join
    the planner picks: with 10,000,000 finished rows it put the counts on the inner side
    of a nested loop, and counted every queue once per queue (25 counts for 5 queues).
    Nested loops are forced here, as the statistics of a big table chose them."""
    import psycopg

    table = f'"{postgres_schema}".jobdef_jobs'
    open_backend(f"{postgres_url}?schema={postgres_schema}").close()
    queues = [f"q{n}" for n in range(5)]
    columns = "job, queue, priority, args, state, max_attempts, run_after, created_at, updated_at"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(
            f"INSERT INTO {table} ({columns}) SELECT 'j', q, 0, '{{}}', 'queued', 1, g, 0, 0 "
            "FROM unnest(%(queues)s::text[]) AS q, generate_series(1, 20000) AS g",
            {"queues": queues},
        )
        conn.execute(f"VACUUM ANALYZE {table}")
        conn.execute("SET enable_hashjoin = off")
        conn.execute("SET enable_mergejoin = off")
        sql = load_queries("jobdef.backends.postgres", "queries.sql")["queue_depths"]
        sql = sql.replace("{schema}", f'"{postgres_schema}"')
        params = {"now": 50_000.0, "cap": 100}
        [(plan,)] = conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params).fetchall()
        rows = conn.execute(sql, params).fetchall()
    assert [(row[0], row[2]) for row in rows] == [(queue, 100) for queue in queues]
    entries = entries_read(plan[0]["Plan"], "jobdef_jobs")
    assert entries <= len(queues) * 100 + 100, entries  # the counts, and the probes
