"""Queue limits from Queue documents: concurrency caps for the claim, rate as token buckets."""

from __future__ import annotations

from pathlib import Path

from jobdef.policy import QueuePolicy
from jobdef.queue_controls import ClaimRequest, RateLimiter, concurrency_limits
from jobdef.registry import load_registry


def test_concurrency_limits_come_from_the_example_queue_documents(example_sheets: Path) -> None:
    registry = load_registry([example_sheets])
    assert concurrency_limits(registry.queues) == {"exports": 2}
    assert registry.queues["mail"].rate == 100 / 60


def test_rate_limited_queue_starts_at_most_its_rate() -> None:
    limiter = RateLimiter({"mail": QueuePolicy("mail", rate=2.0)}, now=0.0)
    started = 0
    for step in range(41):  # every 0.25 s for 10 s
        now = step * 0.25
        allowed = limiter.allowance("mail", now)
        limiter.spend("mail", allowed, now)
        started += allowed
    # A full bucket (2) at the start, then 2 per second for 10 seconds.
    assert started == 2 + 20


def test_slow_rate_still_allows_one_start_and_says_how_long_to_wait() -> None:
    limiter = RateLimiter({"mail": QueuePolicy("mail", rate=1 / 60)}, now=0.0)
    assert limiter.allowance("mail", 0.0) == 1
    limiter.spend("mail", 1, 0.0)
    assert limiter.allowance("mail", 30.0) == 0
    assert limiter.wait("mail", 30.0) == 30.0
    assert limiter.allowance("mail", 60.0) == 1


def test_queue_without_rate_is_not_limited() -> None:
    limiter = RateLimiter({"exports": QueuePolicy("exports", concurrency=2)}, now=0.0)
    assert limiter.limited == frozenset()
    assert limiter.allowance("exports", 0.0) > 1000
    assert limiter.wait("exports", 0.0) == 0.0


def test_plan_claims_a_rate_limited_queue_on_its_own_capped_by_its_tokens() -> None:
    limiter = RateLimiter({"mail": QueuePolicy("mail", rate=3.0)}, now=0.0)
    assert limiter.plan(["default", "mail", "exports"], free=8, now=0.0) == [
        ClaimRequest(("mail",), 3),
        ClaimRequest(("default", "exports"), 8),
    ]
    limiter.spend("mail", 3, 0.0)
    assert limiter.plan(["default", "mail"], free=8, now=0.1) == [ClaimRequest(("default",), 8)]
    assert limiter.plan(["mail"], free=1, now=5.0) == [ClaimRequest(("mail",), 1)]
