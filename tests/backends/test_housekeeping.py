"""Retention pruning, stats, listings, the outbox and the processed-keys table."""

from __future__ import annotations

from jobdef.backends.records import ErrorInfo, NewJob, Notification, RetentionRule

BOOM = ErrorInfo("ValueError", "bad", "")


def _enqueue(backend, n=1, **overrides):
    values = {"job": "j", "args": {}, "queue": "q", "max_attempts": 1}
    return [r.id for r in backend.enqueue([NewJob(**(values | overrides)) for _ in range(n)])]


def _finish(backend, worker, n, how):
    for record in worker.claim(limit=n):
        if how == "done":
            backend.complete([record.lease])
        else:
            backend.bury(record.lease, BOOM)


def test_prune_deletes_done_rows_older_than_retention_in_batches(backend, clock, worker):
    _enqueue(backend, 5)
    _finish(backend, worker, 5, "done")
    clock.advance(100)
    fresh = _enqueue(backend, 2)
    _finish(backend, worker, 2, "done")
    clock.advance(50)
    rules = [RetentionRule("j", done=120, dead=None)]
    assert backend.prune(rules, batch_size=2, dry_run=True) == 5
    assert backend.prune(rules, batch_size=2) == 5
    assert sorted(r.id for r in backend.list_jobs()) == fresh
    assert backend.attempts(fresh[0]) != []


def test_prune_in_batches_deletes_every_row_of_an_end_time_a_batch_boundary_splits(
    backend, clock, worker
):
    # Three rows end at each of two times; batches of two split both groups, and the
    # batch after each split reads the rest of that end time again.
    for _ in range(2):
        _enqueue(backend, 3)
        _finish(backend, worker, 3, "done")
        clock.advance(10)
    _enqueue(backend, 1)
    _finish(backend, worker, 1, "done")
    clock.advance(100)
    assert backend.prune([RetentionRule("j", done=105, dead=None)], batch_size=2) == 6
    assert [r.state for r in backend.list_jobs()] == ["done"]


def test_prune_deletes_the_attempts_of_pruned_jobs(backend, clock, worker):
    [job_id] = _enqueue(backend)
    [kept] = _enqueue(backend, job="k")
    _finish(backend, worker, 2, "done")
    clock.advance(10)
    backend.prune([RetentionRule("j", done=5, dead=None)])
    assert backend.attempts(job_id) == []
    assert [a.outcome for a in backend.attempts(kept)] == ["done"]


def test_prune_keeps_dead_jobs_until_resolved(backend, clock, worker):
    [job_id] = _enqueue(backend)
    _finish(backend, worker, 1, "dead")
    clock.advance(10_000)
    rules = [RetentionRule("j", done=5, dead=None)]
    assert backend.prune(rules) == 0
    backend.resolve(job_id, "handled")
    clock.advance(10)
    assert backend.prune(rules) == 1


def test_prune_deletes_dead_jobs_after_a_dead_duration(backend, clock, worker):
    _enqueue(backend)
    _finish(backend, worker, 1, "dead")
    clock.advance(30)
    assert backend.prune([RetentionRule("j", done=None, dead=60)]) == 0
    clock.advance(31)
    assert backend.prune([RetentionRule("j", done=None, dead=60)]) == 1


def test_prune_leaves_other_jobs_and_active_rows_alone(backend, clock, worker):
    _enqueue(backend, job="other")
    _finish(backend, worker, 1, "done")
    _enqueue(backend, 2)
    clock.advance(1000)
    assert backend.prune([RetentionRule("j", done=1, dead=1)]) == 0
    assert len(backend.list_jobs()) == 3


def test_stats_counts_per_job_and_state_with_oldest_queued_age(backend, clock, worker):
    _enqueue(backend, 3, job="a")
    _enqueue(backend, 1, job="b")
    clock.advance(12)
    _finish(backend, worker, 1, "done")
    counts = {(s.job, s.state): s for s in backend.stats()}
    assert counts[("a", "queued")].count == 2
    assert counts[("a", "queued")].oldest_age == 12
    assert counts[("a", "done")].count == 1
    assert counts[("a", "done")].oldest_age is None
    assert counts[("b", "queued")].count == 1


def test_list_jobs_filters_by_state_and_job_newest_first(backend, worker):
    a = _enqueue(backend, 2, job="a")
    b = _enqueue(backend, 1, job="b")
    assert [r.id for r in backend.list_jobs()] == [b[0], a[1], a[0]]
    assert [r.id for r in backend.list_jobs(job="a", limit=1)] == [a[1]]
    _finish(backend, worker, 1, "done")
    assert [r.id for r in backend.list_jobs(state="done")] == [a[0]]
    _finish(backend, worker, 1, "dead")
    [running] = worker.claim(limit=1)
    # Each state is read its own way on PostgreSQL (migration 0015): running through
    # the index of running jobs, done through the primary key, the others by state.
    assert [r.id for r in backend.list_jobs(state="dead")] == [a[1]]
    assert [r.id for r in backend.list_jobs(state="running")] == [running.id] == [b[0]]
    assert [r.id for r in backend.list_jobs(state="queued")] == []
    assert [r.id for r in backend.list_jobs(state="done", job="a")] == [a[0]]


def test_get_of_an_unknown_id_is_none(backend):
    assert backend.get(999) is None
    assert backend.attempts(999) == []


def _bury_with_note(backend, worker, message_id):
    _enqueue(backend)
    note = Notification("ops", "dead", "j", {"text": "予約 1"}, message_id)
    backend.bury(worker.claim_one().lease, BOOM, notifications=[note])


def test_outbox_claim_leases_messages_so_two_senders_do_not_race(backend, clock, worker):
    _bury_with_note(backend, worker, "m1")
    [taken] = backend.outbox_claim(limit=10, lease_seconds=30)
    assert taken.notification.payload == {"text": "予約 1"}
    assert backend.outbox_claim(limit=10, lease_seconds=30) == []
    clock.advance(31)
    assert [m.id for m in backend.outbox_claim(limit=10, lease_seconds=30)] == [taken.id]


def test_outbox_failed_delays_the_message_and_counts_the_attempt(backend, clock, worker):
    _bury_with_note(backend, worker, "m1")
    [taken] = backend.outbox_claim(limit=10, lease_seconds=30)
    backend.outbox_failed(taken.id, "connection refused", next_at=clock.now + 60)
    assert backend.outbox_claim(limit=10, lease_seconds=30) == []
    [pending] = backend.outbox_pending()
    assert (pending.attempts, pending.last_error) == (1, "connection refused")
    clock.advance(60)
    assert len(backend.outbox_claim(limit=10, lease_seconds=30)) == 1


def test_outbox_delivered_messages_leave_the_pending_list(backend, worker):
    _bury_with_note(backend, worker, "m1")
    _bury_with_note(backend, worker, "m2")
    first, second = backend.outbox_claim(limit=10, lease_seconds=30)
    backend.outbox_delivered([first.id])
    assert [m.id for m in backend.outbox_pending()] == [second.id]
    assert backend.outbox_claim(limit=10, lease_seconds=30) == []


def test_processed_key_is_recorded_once_on_the_callers_connection(backend, store):
    conn = store.connect()
    try:
        assert backend.record_processed_key(conn, "order-1:points", 7)
        conn.commit()
        assert not backend.record_processed_key(conn, "order-1:points", 8)
        conn.rollback()
    finally:
        conn.close()


def test_processed_key_rolled_back_with_the_callers_work_can_be_recorded_again(backend, store):
    conn = store.connect()
    try:
        assert backend.record_processed_key(conn, "k", 1)
        conn.rollback()
        assert backend.record_processed_key(conn, "k", 1)
    finally:
        conn.close()


def test_migrate_twice_is_harmless(backend):
    backend.migrate()
    backend.migrate()
    assert backend.list_jobs() == []
