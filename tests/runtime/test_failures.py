"""Recording a failed attempt, as the worker and the lease reclaimer both do, on real SQLite."""

from __future__ import annotations

import random

from jobdef.backends import open_backend
from jobdef.backends.records import ClaimOptions, ErrorInfo, NewJob
from jobdef.runtime.classify import class_names
from jobdef.runtime.errors import AttemptTimedOut, LeaseExpired
from jobdef.runtime.failures import FailedAttempt, record_failure
from support import ManualClock


def _claimed(db_url, registry, job, args, max_attempts=3):
    clock = ManualClock(1_700_000_000.0)
    backend = open_backend(db_url, clock=clock)
    policy = registry.job(job)
    backend.enqueue([NewJob(job, args, policy.queue, max_attempts=max_attempts)])
    [record] = backend.claim(ClaimOptions(worker_id="w1", lease_seconds=10))
    return clock, backend, policy, record


def test_a_fatal_error_buries_the_job_with_the_reason_and_queues_the_dead_notification(
    db_url, registry
):
    clock, backend, policy, record = _claimed(db_url, registry, "fail", {"kind": "os"})
    error = ErrorInfo("FileNotFoundError", "no such file", "Traceback ...")
    failed = FailedAttempt(record, policy, error, class_names(FileNotFoundError))
    recorded = record_failure(backend, failed, clock.now, random.Random(1))
    assert (recorded.decision.action, recorded.moved) == ("dead", True)
    job = backend.get(record.id)
    assert job.state == "dead"
    assert job.last_error.message == "no such file; dead: OSError is listed in errors.fatal"
    [attempt] = backend.attempts(record.id)
    assert (attempt.outcome, attempt.error.traceback) == ("dead", "Traceback ...")
    assert [m.notification.event for m in backend.outbox_pending()] == ["dead"]
    backend.close()


def test_a_timed_out_attempt_with_attempts_left_is_retried_with_its_own_outcome(db_url, registry):
    clock, backend, policy, record = _claimed(db_url, registry, "noop", {"n": 1})
    error = ErrorInfo("jobdef.runtime.errors.AttemptTimedOut", "killed after 30s")
    failed = FailedAttempt(record, policy, error, class_names(AttemptTimedOut), "timeout")
    recorded = record_failure(backend, failed, clock.now)
    assert (recorded.decision.action, recorded.moved) == ("retry", True)
    assert backend.get(record.id).state == "queued"
    assert [a.outcome for a in backend.attempts(record.id)] == ["timeout"]
    backend.close()


def test_a_reclaimed_attempt_follows_on_reclaim_and_a_lost_lease_is_refused(db_url, registry):
    clock, backend, policy, record = _claimed(
        db_url, registry, "fail", {"kind": "value"}, max_attempts=1
    )
    clock.advance(11)  # past the 10s lease: a reclaim moves only an expired lease
    error = ErrorInfo("jobdef.runtime.errors.LeaseExpired", "worker w1 stopped heart-beating")
    # LeaseExpired is a TimeoutError, an OSError, which this sheet lists as fatal: a
    # reclaimed attempt is decided by on_reclaim and max_attempts, not by errors.
    failed = FailedAttempt(record, policy, error, class_names(LeaseExpired), "reclaimed")
    recorded = record_failure(backend, failed, clock.now)
    assert recorded.decision.reason == "attempts used up (1 of 1)"
    assert recorded.moved
    assert backend.get(record.id).state == "dead"
    assert [a.outcome for a in backend.attempts(record.id)] == ["reclaimed"]
    assert [m.notification.event for m in backend.outbox_pending()] == ["dead"]

    again = record_failure(backend, failed, clock.now)  # the lease is gone: refused
    assert not again.moved
    assert len(backend.attempts(record.id)) == 1
    backend.close()
