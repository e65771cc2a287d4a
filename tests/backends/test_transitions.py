"""The fenced transitions: complete, retry, bury, release, heartbeat, and operator verbs."""

from __future__ import annotations

from jobdef.backends.records import ClaimOptions, ErrorInfo, Lease, NewJob, Notification

BOOM = ErrorInfo("ConnectionError", "refused", "Traceback ...")


def _enqueue(backend, **overrides):
    values = {"job": "j", "args": {"n": 1}, "queue": "q", "max_attempts": 3}
    [result] = backend.enqueue([NewJob(**(values | overrides))])
    return result.id


def _note(event="dead", message_id="m1"):
    return Notification("ops", event, "j", {"job_id": 1}, message_id)


def test_complete_marks_done_and_closes_the_attempt(backend, clock, worker):
    job_id = _enqueue(backend)
    lease = worker.claim_one().lease
    clock.advance(2)
    assert backend.complete([lease]) == [True]
    record = backend.get(job_id)
    assert record.state == "done"
    assert record.finished_at == clock.now
    assert record.lease_until is None
    [attempt] = backend.attempts(job_id)
    assert (attempt.outcome, attempt.finished_at) == ("done", clock.now)


def test_complete_fences_on_worker_ids_of_any_characters(backend):
    # Ids an operator may set (--worker-id): quotes, backslashes, commas, braces, spaces,
    # the word NULL; each completes its own leases and no other worker's.
    names = ['a"b', "c\\d", "e,f", "{g}", " h i ", "NULL", "", "é:1:☃"]
    for _ in names:
        _enqueue(backend)
    leases = [backend.claim(ClaimOptions(name, 30))[0].lease for name in names]
    swapped = [Lease(x.job_id, x.attempt, names[i - 1]) for i, x in enumerate(leases)]
    assert backend.complete(swapped) == [False] * len(names)
    assert backend.complete(leases[::2] + swapped[1::2]) == [True] * 4 + [False] * 4
    assert backend.complete(leases[1::2]) == [True] * 4
    assert {backend.get(x.job_id).state for x in leases} == {"done"}
    assert [backend.attempts(x.job_id)[0].worker_id for x in leases] == names


def test_complete_of_many_leases_answers_for_each(backend, worker):
    for _ in range(3):
        _enqueue(backend)
    leases = [r.lease for r in worker.claim(limit=3)]
    stale = Lease(leases[1].job_id, leases[1].attempt, "someone-else")
    assert backend.complete([leases[0], stale, leases[2]]) == [True, False, True]
    assert backend.get(leases[1].job_id).state == "running"


def test_a_turn_holding_two_attempts_of_one_job_completes_the_newer_in_either_order(
    backend, clock, worker
):
    """A worker frozen past its lease gets the job again (attempt 2) and hands both
    leases back in one turn: the newer passes the fence, whichever comes first."""
    first, second = _enqueue(backend), _enqueue(backend)
    stale = {r.id: r.lease for r in worker.claim(limit=2)}
    clock.advance(worker.lease + 1)
    for expired in backend.expired_leases():
        backend.retry(expired.lease, ErrorInfo("TimeoutError", "lease expired"), clock.now, 0)
    fresh = {r.id: r.lease for r in worker.claim(limit=2)}
    assert {x.attempt for x in fresh.values()} == {2}
    backend.complete([stale[first], fresh[first], fresh[second], stale[second]])
    for job_id in (first, second):
        assert (backend.get(job_id).state, backend.get(job_id).attempt) == ("done", 2)
        assert [a.outcome for a in backend.attempts(job_id)] == ["retry", "done"]


def test_a_lease_of_an_attempt_the_job_never_had_keeps_no_other_lease_from_completing(
    backend, worker
):
    """Each lease is fenced on its own, whatever else the call holds for the same job."""
    job_id = _enqueue(backend, job="j")
    lease = worker.claim_one().lease
    unheard_of = Lease(job_id, lease.attempt + 5, lease.worker_id)
    backend.complete([unheard_of, lease], results={job_id: '{"n": 1}'})
    record = backend.get(job_id)
    assert (record.state, record.result) == ("done", {"n": 1})


def test_retry_requeues_with_run_after_and_keeps_the_error(backend, clock, worker):
    job_id = _enqueue(backend)
    lease = worker.claim_one().lease
    assert backend.retry(lease, BOOM, run_after=clock.now + 20, delay=20)
    record = backend.get(job_id)
    assert (record.state, record.attempt, record.run_after) == ("queued", 1, clock.now + 20)
    assert record.last_error == BOOM
    assert record.last_delay == 20
    assert record.worker_id is None
    [attempt] = backend.attempts(job_id)
    assert (attempt.outcome, attempt.error) == ("retry", BOOM)
    clock.advance(20)
    again = worker.claim_one()
    assert again.attempt == 2


def test_done_job_keeps_the_last_error_as_history(backend, clock, worker):
    job_id = _enqueue(backend)
    backend.retry(worker.claim_one().lease, BOOM, run_after=clock.now, delay=0)
    backend.complete([worker.claim_one().lease])
    record = backend.get(job_id)
    assert record.state == "done"
    assert record.last_error == BOOM
    assert [a.outcome for a in backend.attempts(job_id)] == ["retry", "done"]


def test_bury_moves_to_dead_and_writes_the_outbox_in_the_same_step(backend, worker):
    job_id = _enqueue(backend)
    lease = worker.claim_one().lease
    assert backend.bury(lease, BOOM, notifications=[_note()])
    assert backend.get(job_id).state == "dead"
    [message] = backend.outbox_pending()
    assert message.notification == _note()
    assert backend.attempts(job_id)[0].outcome == "dead"


def test_a_refused_transition_writes_no_outbox_message(backend, worker):
    _enqueue(backend)
    lease = worker.claim_one().lease
    stale = Lease(lease.job_id, lease.attempt, "late")
    assert not backend.bury(stale, BOOM, notifications=[_note()])
    assert not backend.retry(stale, BOOM, 0, 0, notifications=[_note(message_id="m2")])
    assert backend.outbox_pending() == []


def test_complete_writes_done_notifications_only_for_accepted_leases(backend, worker):
    a, b = _enqueue(backend), _enqueue(backend)
    leases = {r.id: r.lease for r in worker.claim(limit=2)}
    stale_b = Lease(b, leases[b].attempt, "late")
    notes = {a: [_note("done", "a")], b: [_note("done", "b")]}
    assert backend.complete([leases[a], stale_b], notifications=notes) == [True, False]
    assert [m.notification.message_id for m in backend.outbox_pending()] == ["a"]


def test_late_write_after_reclaim_is_refused(backend, clock, worker, other_worker):
    job_id = _enqueue(backend)
    stale = worker.claim_one().lease
    clock.advance(worker.lease + 1)
    [expired] = backend.expired_leases()
    assert expired.id == job_id
    assert backend.retry(expired.lease, ErrorInfo("TimeoutError", "lease expired"), clock.now, 0)
    fresh = other_worker.claim_one().lease
    assert not backend.complete([stale])[0]
    assert not backend.retry(stale, BOOM, clock.now, 0)
    assert not backend.bury(stale, BOOM)
    assert not backend.heartbeat(stale, 30)
    assert not backend.release(stale)
    assert backend.complete([fresh]) == [True]
    assert [a.outcome for a in backend.attempts(job_id)] == ["retry", "done"]


def test_a_reclaim_of_a_lease_renewed_since_it_was_read_is_refused(backend, clock, worker):
    job_id = _enqueue(backend)
    lease = worker.claim_one().lease
    clock.advance(worker.lease + 1)
    [expired] = backend.expired_leases()
    # The worker was only slow: its heartbeat lands between the reclaimer's read and move.
    assert backend.heartbeat(lease, worker.lease)
    lost = ErrorInfo("jobdef.runtime.errors.LeaseExpired", "lease expired")
    assert not backend.retry(expired.lease, lost, clock.now, 0, outcome="reclaimed")
    assert not backend.bury(expired.lease, lost, outcome="reclaimed")
    assert backend.get(job_id).state == "running"
    assert [a.outcome for a in backend.attempts(job_id)] == [None]  # still running
    # The same move of a lease that did expire is taken.
    clock.advance(worker.lease + 1)
    assert backend.retry(expired.lease, lost, clock.now, 0, outcome="reclaimed")
    assert [a.outcome for a in backend.attempts(job_id)] == ["reclaimed"]


def test_expired_leases_lists_only_running_jobs_past_their_lease(backend, clock, worker):
    _enqueue(backend)
    _enqueue(backend)
    worker.claim_one()
    assert backend.expired_leases() == []
    clock.advance(worker.lease + 0.5)
    assert [r.state for r in backend.expired_leases()] == ["running"]


def test_leases_that_expired_at_the_same_time_come_by_id(backend, clock, worker):
    ids = [_enqueue(backend, priority=priority) for priority in (0, 5, 9)]
    worker.claim(limit=3)  # one lease end for all three, claimed highest priority first
    clock.advance(worker.lease + 0.5)
    assert [r.id for r in backend.expired_leases()] == ids


def test_heartbeat_extends_the_lease_and_records_progress(backend, clock, worker):
    job_id = _enqueue(backend)
    lease = worker.claim_one().lease
    clock.advance(20)
    assert backend.heartbeat(lease, 30, progress={"done": 5, "total": 10})
    record = backend.get(job_id)
    assert record.lease_until == clock.now + 30
    assert record.progress == {"done": 5, "total": 10}
    clock.advance(25)
    assert backend.expired_leases() == []


def test_release_gives_the_attempt_back(backend, worker, other_worker):
    job_id = _enqueue(backend)
    lease = worker.claim_one().lease
    assert backend.release(lease)
    record = backend.get(job_id)
    assert (record.state, record.attempt) == ("queued", 0)
    again = other_worker.claim_one()
    assert (again.id, again.attempt) == (job_id, 1)
    assert [a.outcome for a in backend.attempts(job_id)] == ["released", None]


def test_release_unhanded_gives_back_the_named_claims_of_one_worker_only(backend, clock):
    """What a dead worker's handler processes give back (runtime.orphan): its running
    jobs that a claim stamped with a start named; not its other claims, nor another
    worker's claim of the same start."""
    for _ in range(6):
        _enqueue(backend)
    clock.advance(0.123457)  # a start in whole microseconds, as a worker names its claims
    first = clock.now
    named = backend.claim(ClaimOptions("w1", 30, limit=2, started_at=first))
    [stranger] = backend.claim(ClaimOptions("w2", 30, limit=1, started_at=first))
    clock.advance(0.000001)
    kept = backend.claim(ClaimOptions("w1", 30, limit=2, started_at=clock.now))
    assert {job.started_at for job in [*named, stranger]} == {first}

    assert backend.release_unhanded("w1", [first]) == 2
    for job in named:
        record = backend.get(job.id)
        assert (record.state, record.attempt, record.worker_id) == ("queued", 0, None)
        assert [a.outcome for a in backend.attempts(job.id)] == ["released"]
    for job in (*kept, stranger):
        assert backend.get(job.id).state == "running"
    # Named again (a second handler process of the dead worker): nothing is left to give.
    assert backend.release_unhanded("w1", [first]) == 0


def test_cancel_of_a_queued_job_writes_no_attempt(backend):
    queued = _enqueue(backend)
    assert backend.cancel(queued, "not needed") == "queued"
    record = backend.get(queued)
    assert (record.state, record.note) == ("cancelled", "not needed")
    assert backend.attempts(queued) == []


def test_cancel_of_a_running_job_ends_its_attempt_and_fences_its_worker(backend, clock, worker):
    job_id = _enqueue(backend)
    lease = worker.claim_one().lease
    clock.advance(2)
    assert backend.cancel(job_id, "cancelled by ops: wrong input") == "running"
    record = backend.get(job_id)
    assert (record.state, record.note) == ("cancelled", "cancelled by ops: wrong input")
    assert (record.lease_until, record.finished_at, record.worker_id) == (None, clock.now, "w1")
    [attempt] = backend.attempts(job_id)
    assert (attempt.attempt, attempt.worker_id, attempt.outcome) == (1, "w1", "cancelled")
    assert attempt.finished_at == clock.now
    assert attempt.error == ErrorInfo(
        "jobdef.Cancelled",
        "the attempt was cancelled while it ran: cancelled by ops: wrong input",
    )
    # Whatever the worker says next is refused: nothing is retried or recorded twice.
    assert not backend.heartbeat(lease, 30)
    assert backend.complete([lease]) == [False]
    assert not backend.retry(lease, BOOM, run_after=clock.now, delay=0)
    assert not backend.bury(lease, BOOM)
    assert not backend.release(lease)
    assert [a.outcome for a in backend.attempts(job_id)] == ["cancelled"]
    assert worker.claim(10) == []


def test_cancel_refuses_done_dead_and_cancelled_jobs(backend, worker):
    done, dead = _enqueue(backend), _enqueue(backend)
    [first, second] = worker.claim(limit=2)
    assert backend.complete([first.lease]) == [True]
    assert backend.bury(second.lease, BOOM)
    cancelled = _enqueue(backend)
    assert backend.cancel(cancelled)
    for job_id in (done, dead, cancelled):
        assert backend.cancel(job_id) is None
    assert [len(backend.attempts(i)) for i in (done, dead, cancelled)] == [1, 1, 0]


def test_requeue_resets_attempts_and_keeps_history(backend, clock, worker):
    job_id = _enqueue(backend)
    backend.bury(worker.claim_one().lease, BOOM)
    clock.advance(5)
    assert backend.requeue([job_id]) == 1
    record = backend.get(job_id)
    assert (record.state, record.attempt, record.run_after) == ("queued", 0, clock.now)
    assert record.finished_at is None
    assert record.last_error == BOOM
    assert [a.outcome for a in backend.attempts(job_id)] == ["dead"]
    assert worker.claim_one().attempt == 1


def test_requeue_by_job_name_takes_only_that_jobs_dead_rows(backend, worker):
    mine = _enqueue(backend, job="mine")
    other = _enqueue(backend, job="other")
    for record in worker.claim(limit=2):
        backend.bury(record.lease, BOOM)
    assert backend.requeue(job="mine") == 1
    assert backend.get(mine).state == "queued"
    assert backend.get(other).state == "dead"


def test_requeue_leaves_a_dead_job_alone_while_its_key_is_active_again(backend, worker):
    dead = _enqueue(backend, idempotency_key="order-1")
    backend.bury(worker.claim_one().lease, BOOM)
    active = _enqueue(backend, idempotency_key="order-1")  # the same work, enqueued anew
    assert backend.requeue([dead]) == 0
    assert backend.requeue(job="j") == 0
    assert (backend.get(dead).state, backend.get(active).state) == ("dead", "queued")


def test_requeue_of_several_dead_jobs_sharing_a_key_queues_only_the_newest(backend, worker):
    first = _enqueue(backend, idempotency_key="order-2")
    backend.bury(worker.claim_one().lease, BOOM)
    second = _enqueue(backend, idempotency_key="order-2")
    backend.bury(worker.claim_one().lease, BOOM)
    assert backend.requeue(job="j") == 1
    assert (backend.get(first).state, backend.get(second).state) == ("dead", "queued")


def test_requeue_by_ids_and_job_name_at_once_counts_each_job_moved_once(backend, worker):
    first = _enqueue(backend)
    second = _enqueue(backend)
    for record in worker.claim(limit=2):
        backend.bury(record.lease, BOOM)
    assert backend.requeue([first], job="j") == 2
    assert (backend.get(first).state, backend.get(second).state) == ("queued", "queued")
    assert backend.requeue() == 0


def test_resolve_closes_a_dead_job_with_a_note(backend, worker):
    job_id = _enqueue(backend)
    assert not backend.resolve(job_id, "not dead yet")
    backend.bury(worker.claim_one().lease, BOOM)
    assert backend.resolve(job_id, "address fixed by hand")
    record = backend.get(job_id)
    assert (record.state, record.note) == ("resolved", "address fixed by hand")
