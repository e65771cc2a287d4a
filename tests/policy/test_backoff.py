from __future__ import annotations

import random

import pytest

from jobdef.policy.backoff import base_delay, delay_range, next_delay, retry_timeline
from jobdef.policy.leases import DEFAULT_LEASE, RECLAIM_INTERVAL
from jobdef.policy.model import BackoffPolicy, JobPolicy


def exp(**kw: object) -> BackoffPolicy:
    return BackoffPolicy(
        **{
            "strategy": "exponential",
            "initial": 10.0,
            "multiplier": 2.0,
            "max": 600.0,
            "jitter": "none",
            **kw,
        }
    )  # type: ignore[arg-type]


def test_exponential_doubles_and_stops_at_the_cap() -> None:
    assert [base_delay(exp(), n) for n in range(1, 9)] == [10, 20, 40, 80, 160, 320, 600, 600]


def test_fixed_linear_and_list_strategies() -> None:
    assert [base_delay(BackoffPolicy("fixed", 30.0), n) for n in (1, 5)] == [30, 30]
    assert [base_delay(BackoffPolicy("linear", 5.0), n) for n in (1, 2, 3)] == [5, 10, 15]
    listed = BackoffPolicy("list", 0.0, delays=(60.0, 300.0, 900.0))
    assert [base_delay(listed, n) for n in (1, 2, 3, 4, 9)] == [60, 300, 900, 900, 900]


def test_a_huge_attempt_number_does_not_overflow() -> None:
    assert base_delay(exp(max=None), 5000) > 1e300
    assert base_delay(exp(), 5000) == 600


@pytest.mark.parametrize("jitter", ["full", "equal", "decorrelated", "none"])
def test_drawn_delays_stay_inside_the_documented_range(jitter: str) -> None:
    policy = exp(jitter=jitter)
    rng = random.Random(7)
    previous = None
    for n in range(1, 12):
        low, high = delay_range(policy, n)
        drawn = next_delay(policy, n, rng, previous)
        assert low <= drawn <= high
        previous = drawn


def test_jitter_ranges_follow_the_aws_formulas() -> None:
    assert delay_range(exp(jitter="full"), 3) == (0.0, 40.0)
    assert delay_range(exp(jitter="equal"), 3) == (20.0, 40.0)
    assert delay_range(exp(jitter="decorrelated"), 1) == (10.0, 30.0)
    assert delay_range(exp(jitter="decorrelated"), 5) == (10.0, 600.0)


def test_timeline_worst_case_adds_every_timeout_and_every_longest_wait() -> None:
    job = JobPolicy(
        name="j",
        handler="m:f",
        max_attempts=3,
        timeout=30.0,
        deadline=100.0,
        backoff=exp(jitter="full"),
    )
    timeline = retry_timeline(job)
    assert [(r.wait_min, r.wait_max) for r in timeline.rows] == [(0, 0), (0, 10), (0, 20)]
    assert [r.latest_start for r in timeline.rows] == [0, 40, 90]
    assert [r.latest_end for r in timeline.rows] == [30, 70, 120]
    assert [r.earliest_start for r in timeline.rows] == [0, 0, 0]
    assert timeline.worst_case == 120
    assert timeline.fits_deadline is False
    assert [r.within_deadline for r in timeline.rows] == [True, True, False]


def test_a_lost_attempt_moves_the_later_latest_starts_by_the_lease_and_one_reclaim() -> None:
    job = JobPolicy(name="j", handler="m:f", max_attempts=3, timeout=30.0, backoff=exp())
    timeline = retry_timeline(job)
    # A lost attempt's job is back once its lease (the worker's default) has run out
    # after its last heartbeat, at the latest at the timeout, and a reclaim found it.
    assert (timeline.lease, timeline.reclaim_interval) == (DEFAULT_LEASE, RECLAIM_INTERVAL)
    assert timeline.lost_slack == DEFAULT_LEASE + RECLAIM_INTERVAL
    slack = timeline.lost_slack
    assert [r.latest_start_lost for r in timeline.rows] == [0, 40 + slack, 90 + 2 * slack]
    # With some earlier attempts lost and the others failed, only the lost ones add.
    assert timeline.latest_start_after(3, 0) == 90
    assert timeline.latest_start_after(3, 1) == 90 + slack
    assert timeline.latest_start_after(3, 2) == timeline.rows[2].latest_start_lost
    with pytest.raises(ValueError, match="follows 2 attempts"):
        timeline.latest_start_after(3, 3)
    with pytest.raises(KeyError):
        timeline.latest_start_after(4, 0)
    # The lease is the worker's (--lease); the plain bounds and the worst case do not move.
    longer = retry_timeline(job, lease=120.0)
    assert [r.latest_start_lost for r in longer.rows] == [0, 40 + 122, 90 + 2 * 122]
    assert [r.latest_start for r in longer.rows] == [r.latest_start for r in timeline.rows]
    assert longer.worst_case == timeline.worst_case
    with pytest.raises(ValueError, match="lease must be positive"):
        retry_timeline(job, lease=0.0)
