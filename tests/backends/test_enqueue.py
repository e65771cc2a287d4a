"""Enqueue: storing, duplicate merging, cron slots, the caller's own transaction."""

from __future__ import annotations

from jobdef.backends.records import NewJob


def _job(**overrides):
    values = {"job": "mail", "args": {"id": 1}, "queue": "mail", "max_attempts": 3}
    return NewJob(**(values | overrides))


def test_enqueue_stores_a_queued_job_with_its_fields(backend, clock):
    [result] = backend.enqueue([_job(priority=5, idempotency_key="1:mail")])
    record = backend.get(result.id)
    assert result.created
    assert record.state == "queued"
    assert record.args == {"id": 1}
    assert (record.priority, record.max_attempts, record.attempt) == (5, 3, 0)
    assert record.idempotency_key == "1:mail"
    assert record.run_after == clock.now
    assert record.created_at == clock.now


def test_enqueue_with_run_after_delays_the_job(backend, clock):
    [result] = backend.enqueue([_job(run_after=clock.now + 60)])
    assert backend.get(result.id).run_after == clock.now + 60


def test_duplicate_of_an_active_job_returns_the_existing_one(backend):
    [first] = backend.enqueue([_job(idempotency_key="k")])
    [second] = backend.enqueue([_job(idempotency_key="k", args={"id": 2})])
    assert second.id == first.id
    assert not second.created
    assert len(backend.list_jobs()) == 1


def test_same_key_of_another_job_name_is_not_a_duplicate(backend):
    [first] = backend.enqueue([_job(idempotency_key="k")])
    [second] = backend.enqueue([_job(job="other", idempotency_key="k")])
    assert second.created
    assert second.id != first.id


def test_duplicates_inside_one_bulk_call_are_merged(backend):
    results = backend.enqueue([_job(idempotency_key="k"), _job(idempotency_key="k"), _job()])
    assert [r.created for r in results] == [True, False, True]
    assert results[0].id == results[1].id


def test_duplicates_inside_one_bulk_call_of_an_active_job_all_merge_into_it(backend):
    [active] = backend.enqueue([_job(idempotency_key="k")])
    results = backend.enqueue([_job(idempotency_key="k", args={"id": n}) for n in range(3)])
    assert {(r.id, r.token, r.created) for r in results} == {(active.id, active.token, False)}
    assert len(backend.list_jobs()) == 1


def test_duplicates_inside_one_bulk_call_return_the_first_ones_receipt(backend):
    results = backend.enqueue(
        [_job(idempotency_key="a"), _job(idempotency_key="b"), _job(idempotency_key="a")]
    )
    assert [r.created for r in results] == [True, True, False]
    assert (results[2].id, results[2].token) == (results[0].id, results[0].token)
    assert backend.find_receipt(results[2].token).id == results[0].id
    # The new jobs get ids in the order of the call: they are claimed in that order.
    assert results[0].id < results[1].id


# More jobs than PostgreSQL stores in one statement of a batch alike but for the
# args (engine.ALIKE_CHUNK).
MANY = 2 * 250 + 1


def test_a_batch_alike_but_for_the_args_stores_every_job_with_the_shared_fields(backend, clock):
    shared = {
        "priority": 7,
        "run_after": clock.now + 90,
        "trace_context": '{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-01"}',
        "positional_args": 1,
    }
    results = backend.enqueue([_job(args={"id": n, "s": "ü"}, **shared) for n in range(MANY)])
    assert all(r.created for r in results)
    assert [r.id for r in results] == sorted(r.id for r in results)
    records = [backend.get(r.id) for r in results]
    assert [dict(r.args) for r in records] == [{"id": n, "s": "ü"} for n in range(MANY)]
    assert {(r.priority, r.run_after, r.trace_context, r.positional_args) for r in records} == {
        (7, clock.now + 90, shared["trace_context"], 1)
    }
    assert [r.receipt for r in records] == [r.token for r in results]


def test_a_long_batch_mixing_keyed_and_unkeyed_jobs_merges_only_the_keyed(backend):
    [active] = backend.enqueue([_job(idempotency_key="k")])
    jobs = [_job(args={"id": n}) for n in range(MANY)]
    jobs[3] = _job(idempotency_key="k")
    jobs[-1] = _job(idempotency_key="new")
    jobs[-2] = _job(idempotency_key="new")
    results = backend.enqueue(jobs)
    assert [r.created for r in results] == [n not in (3, MANY - 1) for n in range(MANY)]
    assert (results[3].id, results[3].token) == (active.id, active.token)
    assert (results[-1].id, results[-1].token) == (results[-2].id, results[-2].token)
    assert len(backend.list_jobs(limit=2 * MANY)) == MANY - 1


def test_a_dedupe_window_holds_for_duplicates_inside_one_bulk_call(backend, clock, worker):
    [done] = backend.enqueue([_job(idempotency_key="k", dedupe_window=60)])
    backend.complete([worker.claim_one().lease])
    clock.advance(30)
    inside = backend.enqueue([_job(idempotency_key="k", dedupe_window=60)] * 2)
    assert {(r.id, r.created) for r in inside} == {(done.id, False)}
    clock.advance(31)
    outside = backend.enqueue([_job(idempotency_key="k", dedupe_window=60)] * 2)
    assert [r.created for r in outside] == [True, False]
    assert outside[0].id == outside[1].id != done.id
    assert len(backend.list_jobs()) == 2


def test_finished_job_absorbs_a_duplicate_only_within_the_dedupe_window(backend, clock, worker):
    [first] = backend.enqueue([_job(idempotency_key="k", dedupe_window=60)])
    backend.complete([worker.claim_one().lease])
    clock.advance(30)
    [inside] = backend.enqueue([_job(idempotency_key="k", dedupe_window=60)])
    clock.advance(31)
    [outside] = backend.enqueue([_job(idempotency_key="k", dedupe_window=60)])
    assert (inside.id, inside.created) == (first.id, False)
    assert outside.created


def test_without_a_window_a_finished_job_does_not_absorb_a_new_enqueue(backend, worker):
    backend.enqueue([_job(idempotency_key="k")])
    backend.complete([worker.claim_one().lease])
    [again] = backend.enqueue([_job(idempotency_key="k")])
    assert again.created


def test_each_cron_slot_is_stored_once_even_after_the_job_is_pruned(backend, clock, worker):
    from jobdef.backends.records import RetentionRule

    [first] = backend.enqueue([_job(slot=3600.0)])
    [again] = backend.enqueue([_job(slot=3600.0)])
    assert (again.id, again.created) == (first.id, False)
    backend.complete([worker.claim_one().lease])
    clock.advance(10)
    assert backend.prune([RetentionRule("mail", done=1, dead=None)]) == 1
    [after_prune] = backend.enqueue([_job(slot=3600.0)])
    [next_slot] = backend.enqueue([_job(slot=7200.0)])
    assert not after_prune.created
    assert next_slot.created


def test_last_slot_is_the_newest_slot_ever_stored_for_the_job(backend, clock, worker):
    from jobdef.backends.records import RetentionRule

    assert backend.last_slot("mail") is None
    backend.enqueue([_job(slot=7200.0), _job(slot=3600.0), _job(job="other", slot=9000.0)])
    backend.enqueue([_job(args={"id": 2})])  # an enqueue by hand has no slot
    assert backend.last_slot("mail") == 7200.0
    for job in backend.list_jobs(job="mail"):
        backend.cancel(job.id)
    clock.advance(10)
    backend.prune([RetentionRule("mail", done=1, dead=None)])
    assert backend.last_slot("mail") == 7200.0


def test_enqueue_on_the_callers_connection_exists_only_if_the_caller_commits(backend, store):
    conn = store.connect()
    try:
        [kept] = backend.enqueue([_job(args={"id": 1})], connection=conn)
        conn.commit()
        [dropped] = backend.enqueue([_job(args={"id": 2})], connection=conn)
        conn.rollback()
    finally:
        conn.close()
    assert backend.get(kept.id) is not None
    assert backend.get(dropped.id) is None
    assert [r.args for r in backend.list_jobs()] == [{"id": 1}]


def test_get_on_the_callers_connection_sees_its_uncommitted_job(backend, store):
    """What the caller's transaction holds: its new job, before the commit that lets
    jobdef's own connection see it; nothing after a rollback."""
    conn = store.connect()
    try:
        [new] = backend.enqueue([_job(args={"id": 1})], connection=conn)
        assert backend.get(new.id) is None  # not committed
        record, attempts = backend.get_on(conn, new.id)
        assert record is not None
        assert (record.id, record.state, dict(record.args)) == (new.id, "queued", {"id": 1})
        assert attempts == []
        conn.rollback()
        assert backend.get_on(conn, new.id) == (None, [])
        [kept] = backend.enqueue([_job(args={"id": 2})], connection=conn)
        conn.commit()
        assert backend.get_on(conn, kept.id) == (backend.get(kept.id), [])
    finally:
        conn.close()
