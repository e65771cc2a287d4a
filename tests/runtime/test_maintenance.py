"""Lease reclaim and retention pruning as maintenance services, on an injected clock."""

from __future__ import annotations

import dataclasses
import random

import pytest

from jobdef.backends import open_backend
from jobdef.backends.flows import NewFlow, NewStep
from jobdef.backends.records import ClaimOptions, NewJob
from jobdef.policy.registry import Registry
from jobdef.runtime.maintenance import MAINTENANCE, MaintenanceContext
from jobdef.runtime.maintenance.reclaim import LeaseReclaimer
from jobdef.runtime.maintenance.retention import RetentionPruner, retention_rules
from support import ManualClock


def _setup(db_url, registry, job="fail"):
    clock = ManualClock(1_700_000_000.0)
    backend = open_backend(db_url, clock=clock)
    ctx = MaintenanceContext(backend, registry, "maint", clock, random.Random(1))
    policy = registry.job(job)
    backend.enqueue([NewJob(job, {"kind": "value"}, policy.queue, max_attempts=2)])
    return clock, backend, ctx


def _claim(backend):
    [record] = backend.claim(ClaimOptions(worker_id="dead-worker", lease_seconds=10))
    return record


def test_the_worker_runs_reclaim_and_retention_by_default():
    assert LeaseReclaimer in MAINTENANCE
    assert RetentionPruner in MAINTENANCE


def test_an_expired_lease_is_retried_as_a_timed_out_attempt(db_url, registry):
    clock, backend, ctx = _setup(db_url, registry)
    record = _claim(backend)
    reclaimer = LeaseReclaimer(ctx)
    reclaimer.tick(clock.now)
    assert backend.get(record.id).state == "running"
    clock.advance(11)
    reclaimer.tick(clock.now)
    job = backend.get(record.id)
    assert job.state == "queued"
    [attempt] = backend.attempts(record.id)
    assert attempt.outcome == "reclaimed"
    assert attempt.error.type == "jobdef.runtime.errors.LeaseExpired"
    assert "dead-worker" in attempt.error.message
    backend.close()


def test_a_reclaimed_job_with_no_attempts_left_is_buried_and_notified(db_url, registry):
    clock, backend, ctx = _setup(db_url, registry)
    record = _claim(backend)
    clock.advance(11)
    LeaseReclaimer(ctx).tick(clock.now)
    clock.advance(1000)
    _claim(backend)
    clock.advance(11)
    LeaseReclaimer(ctx).tick(clock.now)
    job = backend.get(record.id)
    assert job.state == "dead"
    assert "attempts used up (2 of 2)" in job.last_error.message
    assert [m.notification.event for m in backend.outbox_pending()] == ["dead"]
    backend.close()


def test_on_reclaim_fail_buries_at_the_first_reclaim(db_url, registry):
    policy = dataclasses.replace(registry.job("fail"), on_reclaim="fail")
    failing = Registry(jobs={"fail": policy}, channels=registry.channels)
    clock, backend, ctx = _setup(db_url, failing)
    record = _claim(backend)
    clock.advance(11)
    LeaseReclaimer(ctx).tick(clock.now)
    assert backend.get(record.id).state == "dead"
    backend.close()


def test_retention_rules_come_from_the_sheets(registry):
    rules = {r.job: r for r in retention_rules(registry)}
    assert (rules["noop"].done, rules["noop"].dead) == (3600.0, None)


def test_the_pruner_deletes_done_jobs_past_the_sheets_retention(db_url, registry):
    clock, backend, ctx = _setup(db_url, registry, job="noop")
    backend.complete([_claim(backend).lease])
    pruner = RetentionPruner(ctx)
    pruner.tick(clock.now)
    assert len(backend.list_jobs()) == 1
    clock.advance(3601)
    pruner.tick(clock.now)
    assert backend.list_jobs() == []
    backend.close()


@pytest.mark.every_engine
def test_the_pruner_deletes_a_flow_after_its_last_step(db_url, registry):
    """The step goes by its job's retention; the ended flow's row goes after it,
    in the same tick."""
    clock = ManualClock(1_700_000_000.0)
    backend = open_backend(db_url, clock=clock)
    ctx = MaintenanceContext(backend, registry, "maint", clock, random.Random(1))
    queue = registry.job("noop").queue
    graph = {
        "title": "one",
        "steps": {"a": {"job": "noop", "after": {}, "args": {}, "finally": False}},
        "notify": None,
    }
    receipt = backend.start_flow(
        NewFlow("one", {}, graph, [NewStep("a", "noop", queue, 0, 1, {"n": 1})])
    )
    backend.complete([_claim(backend).lease])
    assert backend.get_flow(receipt.id).state == "done"
    pruner = RetentionPruner(ctx)
    pruner.tick(clock.now)
    assert backend.find_flow(receipt.token) is not None  # its step is kept an hour
    clock.advance(3601)
    pruner.tick(clock.now)
    assert backend.list_jobs() == []
    assert backend.find_flow(receipt.token) is None
    backend.close()
