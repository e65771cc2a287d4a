"""Retry or bury after a failed attempt: injected clock values and a seeded random source."""

from __future__ import annotations

import dataclasses
import random

from jobdef.backends.records import JobRecord
from jobdef.policy.backoff import next_delay
from jobdef.runtime.decisions import after_error, after_reclaim

NOW = 1_700_000_000.0


def _record(attempt, max_attempts=3, created_at=NOW - 10, last_delay=None):
    return JobRecord(
        id=1,
        job="j",
        queue="q",
        priority=0,
        args={},
        state="running",
        attempt=attempt,
        max_attempts=max_attempts,
        idempotency_key=None,
        run_after=NOW,
        created_at=created_at,
        updated_at=NOW,
        last_delay=last_delay,
    )


def test_a_retryable_error_waits_the_sheets_backoff(registry):
    policy = registry.job("fail")
    backoff = dataclasses.replace(
        policy.backoff, strategy="exponential", initial=10, multiplier=2, jitter="full", max=60
    )
    policy = dataclasses.replace(policy, backoff=backoff)
    decision = after_error(policy, _record(2), ("ConnectionError",), NOW, random.Random(7))
    expected = next_delay(policy.backoff, 2, random.Random(7))
    assert decision.action == "retry"
    assert decision.delay == expected
    assert decision.run_after == NOW + expected
    assert 0 <= decision.delay <= 20


def test_decorrelated_jitter_continues_from_the_previous_wait(registry):
    policy = registry.job("fail")
    backoff = dataclasses.replace(policy.backoff, initial=5, max=300, jitter="decorrelated")
    policy = dataclasses.replace(policy, backoff=backoff)
    record = _record(2, last_delay=40)
    decision = after_error(policy, record, ("ValueError",), NOW, random.Random(3))
    assert decision.delay == next_delay(backoff, 2, random.Random(3), previous=40)
    assert 5 <= decision.delay <= 120


def test_a_fatal_error_buries_at_once_even_with_attempts_left(registry):
    decision = after_error(registry.job("fail"), _record(1), ("PermissionError", "OSError"), NOW)
    assert decision.action == "dead"
    assert decision.reason == "OSError is listed in errors.fatal"


def test_the_last_attempt_buries_with_attempts_used_up(registry):
    decision = after_error(registry.job("fail"), _record(3), ("ConnectionError",), NOW)
    assert (decision.action, decision.reason) == ("dead", "attempts used up (3 of 3)")


def test_a_retry_past_the_deadline_buries_the_job(registry):
    policy = dataclasses.replace(registry.job("fail"), deadline=60.0)
    backoff = dataclasses.replace(policy.backoff, initial=30, jitter="none")
    policy = dataclasses.replace(policy, backoff=backoff)
    inside = after_error(policy, _record(1, created_at=NOW - 20), ("ConnectionError",), NOW)
    outside = after_error(policy, _record(1, created_at=NOW - 40), ("ConnectionError",), NOW)
    assert inside.action == "retry"
    assert outside.action == "dead"
    assert "deadline of 1m" in outside.reason


def test_reclaim_retries_by_default_and_fails_when_the_sheet_says_so(registry):
    policy = registry.job("sleep")
    assert after_reclaim(policy, _record(1), NOW).action == "retry"
    assert after_reclaim(policy, _record(3), NOW).action == "dead"
    failing = dataclasses.replace(policy, on_reclaim="fail")
    decision = after_reclaim(failing, _record(1), NOW)
    assert (decision.action, decision.reason) == ("dead", "the worker died and on_reclaim is fail")
