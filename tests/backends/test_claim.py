"""Claim: order, batch size, leases, queues, pausing, per-queue limits and rates."""

from __future__ import annotations

from jobdef.backends.records import NewJob


def _enqueue(backend, n=1, **overrides):
    values = {"job": "j", "args": {}, "queue": "q", "max_attempts": 3}
    return [r.id for r in backend.enqueue([NewJob(**(values | overrides)) for _ in range(n)])]


def test_claim_orders_by_priority_then_run_after_then_id(backend, clock, worker):
    low = _enqueue(backend, priority=0, run_after=clock.now - 10)
    high_late = _enqueue(backend, priority=5, run_after=clock.now - 1)
    high_early = _enqueue(backend, priority=5, run_after=clock.now - 5)
    same_a = _enqueue(backend, priority=1, run_after=clock.now - 3)
    same_b = _enqueue(backend, priority=1, run_after=clock.now - 3)
    claimed = [r.id for r in worker.claim(limit=10)]
    assert claimed == high_early + high_late + same_a + same_b + low


def test_claim_takes_at_most_limit_jobs_in_one_call(backend, worker):
    _enqueue(backend, 5)
    assert len(worker.claim(limit=3)) == 3
    assert len(worker.claim(limit=3)) == 2
    assert worker.claim(limit=3) == []


def test_claim_leases_the_job_to_the_worker_and_opens_an_attempt(backend, clock, worker):
    [job_id] = _enqueue(backend)
    record = worker.claim_one()
    assert record.id == job_id
    assert record.state == "running"
    assert record.attempt == 1
    assert record.worker_id == "w1"
    assert record.lease_until == clock.now + worker.lease
    [attempt] = backend.attempts(job_id)
    assert (attempt.attempt, attempt.worker_id, attempt.started_at) == (1, "w1", clock.now)
    assert attempt.outcome is None


def test_a_job_is_never_claimed_twice(backend, worker, other_worker):
    _enqueue(backend, 4)
    first = {r.id for r in worker.claim(limit=2)}
    second = {r.id for r in other_worker.claim(limit=10)}
    assert len(first) == 2
    assert len(second) == 2
    assert not first & second


def test_jobs_delayed_into_the_future_are_not_claimed_until_due(backend, clock, worker):
    _enqueue(backend, run_after=clock.now + 30)
    assert worker.claim() == []
    clock.advance(30)
    assert len(worker.claim()) == 1


def test_claim_takes_only_the_named_queues(backend, worker):
    _enqueue(backend, queue="a")
    [b] = _enqueue(backend, queue="b")
    assert [r.id for r in worker.claim(limit=5, queues=["b", "c"])] == [b]


def test_paused_queue_is_not_claimed_from_until_resumed(backend, worker):
    [a] = _enqueue(backend, queue="a")
    [b] = _enqueue(backend, queue="b")
    backend.set_paused("a", True)
    assert [r.id for r in worker.claim(limit=5)] == [b]
    backend.set_paused("a", False)
    assert [r.id for r in worker.claim(limit=5)] == [a]


def test_queue_limit_caps_running_jobs_across_workers(backend, worker, other_worker):
    _enqueue(backend, 5, queue="exports")
    _enqueue(backend, 2, queue="mail")
    limits = {"exports": 2}
    first = worker.claim(limit=10, queue_limits=limits)
    assert sorted(r.queue for r in first) == ["exports", "exports", "mail", "mail"]
    assert other_worker.claim(limit=10, queue_limits=limits) == []
    backend.complete([first[0].lease if first[0].queue == "exports" else first[2].lease])
    second = other_worker.claim(limit=10, queue_limits=limits)
    assert [r.queue for r in second] == ["exports"]


def test_queue_limit_keeps_claim_order_among_the_allowed(backend, worker):
    a = _enqueue(backend, 3, queue="a", priority=9)
    b = _enqueue(backend, 2, queue="b", priority=1)
    claimed = [r.id for r in worker.claim(limit=4, queue_limits={"a": 1})]
    assert claimed == [a[0], *b]


def test_queue_rate_is_one_token_bucket_shared_by_every_worker(
    backend, clock, worker, other_worker
):
    _enqueue(backend, 10, queue="mail")
    rates = {"mail": 2.0}  # 120/m: a full bucket holds one second's worth, 2 starts
    assert len(worker.claim(limit=10, queue_rates=rates)) == 2
    # The other worker sees the same empty bucket, not a bucket of its own.
    assert other_worker.claim(limit=10, queue_rates=rates) == []
    clock.advance(0.5)
    assert len(other_worker.claim(limit=10, queue_rates=rates)) == 1
    assert worker.claim(limit=10, queue_rates=rates) == []
    clock.advance(60)  # a long idle spell refills one second's worth, no more
    assert len(worker.claim(limit=10, queue_rates=rates)) == 2


def test_queue_rate_below_one_per_second_still_starts_one_job(backend, clock, worker):
    _enqueue(backend, 3, queue="mail")
    rates = {"mail": 1 / 60}  # 1/m
    assert len(worker.claim(limit=5, queue_rates=rates)) == 1
    clock.advance(59)
    assert worker.claim(limit=5, queue_rates=rates) == []
    clock.advance(1)
    assert len(worker.claim(limit=5, queue_rates=rates)) == 1


def test_queue_rate_leaves_other_queues_alone_and_keeps_claim_order(backend, worker):
    mail = _enqueue(backend, 3, queue="mail", priority=5)
    plain = _enqueue(backend, 2, queue="q")
    claimed = [r.id for r in worker.claim(limit=10, queue_rates={"mail": 1.0})]
    assert claimed == [mail[0], *plain]


def test_queue_with_both_a_rate_and_a_cap_starts_the_smaller(backend, clock, worker):
    _enqueue(backend, 10, queue="mail")
    both = {"queue_rates": {"mail": 5.0}, "queue_limits": {"mail": 3}}
    first = worker.claim(limit=10, **both)
    assert len(first) == 3  # the cap; the bucket had 5
    backend.complete([r.lease for r in first])
    assert len(worker.claim(limit=10, **both)) == 2  # the bucket's last 2 tokens
    clock.advance(0.2)
    assert len(worker.claim(limit=10, **both)) == 1  # one more token, one free place


def test_a_claim_that_takes_nothing_from_a_rated_queue_spends_no_token(backend, clock, worker):
    _enqueue(backend, 2, queue="mail")
    rates = {"mail": 1 / 60}
    backend.set_paused("mail", True)
    assert worker.claim(limit=5, queue_rates=rates) == []
    backend.set_paused("mail", False)
    assert len(worker.claim(limit=5, queue_rates=rates)) == 1


def test_queues_reports_depth_running_age_and_pause(backend, clock, worker):
    _enqueue(backend, 3, queue="a")
    clock.advance(7)
    worker.claim(limit=1)
    backend.set_paused("idle", True)
    infos = {q.queue: q for q in backend.queues()}
    assert (infos["a"].queued, infos["a"].running, infos["a"].paused) == (2, 1, False)
    assert infos["a"].oldest_queued_age == 7
    assert infos["idle"].paused
    assert infos["idle"].queued == 0


def test_queues_lists_every_queue_by_name_with_a_row_or_active_jobs(backend, worker):
    _enqueue(backend, 1, queue="b")
    _enqueue(backend, 1, queue="c")
    worker.claim_one(queues=["c"])
    backend.set_paused("a", True)
    backend.set_paused("z", False)  # a row, though not paused
    infos = backend.queues()
    assert [q.queue for q in infos] == ["a", "b", "c", "z"]
    by_name = {q.queue: q for q in infos}
    assert [by_name[q].paused for q in "abcz"] == [True, False, False, False]
    assert all(type(q.paused) is bool for q in infos)
    assert (by_name["c"].queued, by_name["c"].running, by_name["c"].oldest_queued_age) == (
        0,
        1,
        None,
    )
    assert (by_name["z"].queued, by_name["z"].running, by_name["z"].oldest_queued_age) == (
        0,
        0,
        None,
    )


def test_complete_and_claim_finishes_a_turn_like_the_two_calls(backend, worker):
    from jobdef.backends.protocol import complete_and_claim
    from jobdef.backends.records import ClaimOptions

    first, second = _enqueue(backend, 2)
    _enqueue(backend, 1, queue="other")
    held = worker.claim_one()
    options = ClaimOptions(worker_id="w1", lease_seconds=30, limit=5, queues=["q"])
    accepted, claimed = complete_and_claim(backend, [held.lease], {}, options)
    assert accepted == [True]
    assert [r.id for r in claimed] == [second]
    assert backend.get(first).state == "done"
    assert complete_and_claim(backend, [held.lease], None, None) == ([False], [])


def test_complete_and_claim_under_queue_limits_frees_the_place_it_fills(backend, worker):
    from jobdef.backends.protocol import complete_and_claim
    from jobdef.backends.records import ClaimOptions

    first, second, _ = _enqueue(backend, 3, queue="exports")
    limits = {"queue_limits": {"exports": 1}, "queue_rates": {"exports": 100.0}}
    held = worker.claim_one(**limits)
    assert held.id == first
    options = ClaimOptions(worker_id="w1", lease_seconds=30, limit=5, **limits)
    # The completion in the same transaction frees the one place: the next job takes it.
    accepted, claimed = complete_and_claim(backend, [held.lease], {}, options)
    assert accepted == [True]
    assert [r.id for r in claimed] == [second]
    assert backend.get(first).state == "done"
    accepted, claimed = complete_and_claim(backend, [held.lease], None, options)
    assert (accepted, claimed) == ([False], [])
