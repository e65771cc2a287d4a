"""What happens to a job after a failed attempt: pure functions of the policy and the row.

The worker and the lease reclaimer call these; the clock (``now``) and the
random source are passed in, so tests can steer both.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from jobdef.backends.records import JobRecord
from jobdef.policy.backoff import next_delay
from jobdef.policy.durations import format_duration
from jobdef.policy.model import JobPolicy
from jobdef.runtime.classify import classify


@dataclass(frozen=True, slots=True)
class Decision:
    """Retry at ``run_after`` (after waiting ``delay``), or bury; ``reason`` says why."""

    action: Literal["retry", "dead"]
    reason: str
    run_after: float | None = None
    delay: float | None = None


def after_error(
    policy: JobPolicy,
    record: JobRecord,
    error_names: Sequence[str],
    now: float,
    rng: random.Random | None = None,
) -> Decision:
    """An attempt raised (or timed out, or crashed): classify by the sheet, then retry or bury."""
    found = classify(policy.errors, error_names)
    if found.action == "fatal":
        return Decision("dead", found.reason)
    return _retry_unless_spent(policy, record, now, rng, found.reason)


def after_reclaim(
    policy: JobPolicy, record: JobRecord, now: float, rng: random.Random | None = None
) -> Decision:
    """The job's worker died (its lease expired): the sheet's ``on_reclaim`` decides."""
    if policy.on_reclaim == "fail":
        return Decision("dead", "the worker died and on_reclaim is fail")
    return _retry_unless_spent(policy, record, now, rng, "the worker died; on_reclaim is retry")


def _retry_unless_spent(
    policy: JobPolicy,
    record: JobRecord,
    now: float,
    rng: random.Random | None,
    why: str,
) -> Decision:
    if record.attempt >= record.max_attempts:
        return Decision("dead", f"attempts used up ({record.attempt} of {record.max_attempts})")
    delay = next_delay(policy.backoff, record.attempt, rng, previous=record.last_delay)
    run_after = now + delay
    if policy.deadline is not None and run_after > record.created_at + policy.deadline:
        deadline = format_duration(policy.deadline)
        return Decision("dead", f"the next attempt would start after the deadline of {deadline}")
    return Decision("retry", why, run_after=run_after, delay=delay)
