"""Queue limits from Queue documents: concurrency caps and rates, and the token bucket."""

from __future__ import annotations

from pathlib import Path

from jobdef.policy.model import QueuePolicy
from jobdef.policy.queue_controls import (
    Bucket,
    QueueControl,
    bucket_capacity,
    concurrency_limits,
    rate_limits,
)
from jobdef.sheets.pipeline import load_registry


def test_limits_come_from_the_example_queue_documents(example_sheets: Path) -> None:
    registry = load_registry([example_sheets])
    assert concurrency_limits(registry.queues) == {"exports": 2}
    assert rate_limits(registry.queues) == {"mail": 100 / 60}


def test_a_bucket_starts_no_more_than_a_full_bucket_plus_the_rate() -> None:
    bucket, started = Bucket(), 0
    for step in range(41):  # every 0.25 s for 10 s
        now = step * 0.25
        allowed = bucket.allowance(2.0, now)
        bucket = bucket.spend(2.0, now, allowed)
        started += allowed
    # A full bucket (2) at the start, then 2 per second for 10 seconds.
    assert started == 2 + 20


def test_a_bucket_holds_one_second_of_starts_and_at_least_one() -> None:
    assert bucket_capacity(100.0) == 100.0
    assert bucket_capacity(1 / 60) == 1.0
    assert Bucket().allowance(1 / 60, 0.0) == 1
    spent = Bucket().spend(1 / 60, 0.0, 1)
    assert spent.allowance(1 / 60, 59.0) == 0
    assert spent.allowance(1 / 60, 60.0) == 1
    assert spent.allowance(1 / 60, 6000.0) == 1  # idle for long: still one at a time


def test_a_clock_that_went_back_refills_nothing_and_takes_nothing() -> None:
    bucket = Bucket(tokens=1.5, at=100.0)
    assert bucket.refilled(2.0, 90.0) == 1.5


def test_queue_control_room_pairs_the_cap_with_the_bucket_allowance() -> None:
    assert QueueControl(cap=3).room(Bucket(), 0.0) == (3, None)
    assert QueueControl(rate=5.0).room(Bucket(tokens=2.5, at=0.0), 0.0) == (None, 2)
    assert QueueControl(cap=1, rate=5.0).room(Bucket(), 0.0) == (1, 5)


def test_queue_without_rate_has_no_bucket() -> None:
    assert rate_limits({"exports": QueuePolicy("exports", concurrency=2)}) == {}
