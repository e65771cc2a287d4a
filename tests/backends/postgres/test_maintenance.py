"""Maintenance by one worker at a time, and pruning in short batches."""

from __future__ import annotations

from jobdef.backends.postgres.engine import PostgresBackend
from jobdef.backends.records import ClaimOptions, ErrorInfo, NewJob, RetentionRule
from support import ManualClock, eventually

from .helpers import query, terminate

DAY = 86_400.0


def test_one_engine_at_a_time_holds_the_maintenance_lock(
    pg_backend: PostgresBackend, postgres_url: str
) -> None:
    with (
        PostgresBackend(postgres_url, schema=pg_backend.schema, maintenance_lease=2) as second,
        PostgresBackend(postgres_url, schema=pg_backend.schema) as third,
    ):
        assert pg_backend.try_maintenance_lock()
        assert pg_backend.try_maintenance_lock()
        assert not second.try_maintenance_lock()
        pg_backend.close()  # gives the lease back: the next engine hears it, and asks
        eventually(second.try_maintenance_lock, 5, "the lease given back is taken")
        assert not third.try_maintenance_lock()
        terminate(postgres_url, second.listener._session.info.backend_pid)
        # The server frees a terminated session's lock once its process has exited.
        eventually(third.try_maintenance_lock)
        assert not second.try_maintenance_lock()


def _finish(backend: PostgresBackend, count: int, job: str, how: str) -> list[int]:
    backend.enqueue([NewJob(job, {"n": n}, "default") for n in range(count)])
    claimed = backend.claim(ClaimOptions("w", lease_seconds=60, limit=count))
    if how == "done":
        backend.complete([c.lease for c in claimed])
    else:
        for c in claimed:
            backend.bury(c.lease, ErrorInfo("ValueError", "bad"))
    return [c.id for c in claimed]


def test_prune_deletes_old_finished_rows_in_batches_and_keeps_the_rest(
    pg_backend: PostgresBackend, clock: ManualClock
) -> None:
    old_done = _finish(pg_backend, 2_500, "report", "done")
    old_dead = _finish(pg_backend, 3, "report", "dead")
    pg_backend.resolve(old_dead[0], "fixed by hand")
    clock.advance(31 * DAY)
    recent_done = _finish(pg_backend, 4, "report", "done")
    other_job = _finish(pg_backend, 2, "mail", "done")

    deleted = pg_backend.prune([RetentionRule("report", done=30 * DAY, dead=None)], batch_size=1000)

    assert deleted == len(old_done) + 1  # and the resolved one
    remaining = {r.id: r.state for r in pg_backend.list_jobs(limit=10_000)}
    assert set(remaining) == set(old_dead[1:]) | set(recent_done) | set(other_job)
    assert all(remaining[i] == "dead" for i in old_dead[1:])
    attempts_left = query(
        pg_backend.conninfo,
        f'SELECT count(*) FROM "{pg_backend.schema}".jobdef_attempts WHERE job_id = ANY(%s)',
        (old_done,),
    )
    assert attempts_left == [(0,)]


def test_a_pruned_cron_slot_is_still_taken(pg_backend: PostgresBackend, clock: ManualClock) -> None:
    (first,) = pg_backend.enqueue([NewJob("nightly", {}, "default", slot=1_000.0)])
    (claimed,) = pg_backend.claim(ClaimOptions("w", lease_seconds=60))
    pg_backend.complete([claimed.lease])
    clock.advance(2 * DAY)
    assert pg_backend.prune([RetentionRule("nightly", done=DAY, dead=None)]) == 1
    (again,) = pg_backend.enqueue([NewJob("nightly", {}, "default", slot=1_000.0)])
    assert (again.id, again.created) == (first.id, False)
    assert pg_backend.list_jobs() == []
