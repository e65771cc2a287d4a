"""Queue limits from ``Queue`` documents, turned into what a worker's claim may take.

Both limits are enforced by the store inside the claim's transaction, so they
hold across every worker process and host that shares it:

- ``concurrency`` (``ClaimOptions.queue_limits``): the claim counts the queue's
  running jobs in the database;
- ``rate`` (``ClaimOptions.queue_rates``, starts per second): a token bucket
  kept in the queue's row. It holds at most one second's worth of starts (at
  least one), refills at ``rate``, and each claimed job takes one token.

The claim serializes on the queue's row (PostgreSQL ``FOR UPDATE``) or the
write lock (SQLite), so two workers never spend the same token. Queues
without limits keep the plain one-statement ``SKIP LOCKED`` claim.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from jobdef.policy.model import QueuePolicy
from jobdef.records import Record, record


def concurrency_limits(queues: Mapping[str, QueuePolicy]) -> dict[str, int]:
    """``ClaimOptions.queue_limits`` from the ``Queue`` documents that set ``concurrency``."""
    return {name: q.concurrency for name, q in queues.items() if q.concurrency is not None}


def rate_limits(queues: Mapping[str, QueuePolicy]) -> dict[str, float]:
    """``ClaimOptions.queue_rates`` from the ``Queue`` documents that set ``rate``."""
    return {name: q.rate for name, q in queues.items() if q.rate is not None}


def bucket_capacity(rate: float) -> float:
    """The most starts a full bucket allows at once: one second's worth, at least one."""
    return max(1.0, rate)


@record
class Bucket(Record):
    """A queue's stored token bucket: ``tokens`` as of ``at`` (``None``: never used, full)."""

    tokens: float | None = None
    at: float | None = None

    def refilled(self, rate: float, now: float) -> float:
        """Tokens available at ``now``.

        A clock that went backwards (hosts disagree) refills nothing rather
        than taking tokens away.
        """
        capacity = bucket_capacity(rate)
        if self.tokens is None or self.at is None:
            return capacity
        return min(capacity, self.tokens + max(0.0, now - self.at) * rate)

    def allowance(self, rate: float, now: float) -> int:
        """How many jobs may start at ``now``."""
        return max(0, math.floor(self.refilled(rate, now) + 1e-9))

    def spend(self, rate: float, now: float, count: int) -> Bucket:
        """The bucket after ``count`` starts at ``now``."""
        return Bucket(self.refilled(rate, now) - count, now)


@record
class QueueControl(Record):
    """The limits of one queue that a claim applies: a cap on running jobs, a start rate."""

    cap: int | None = None
    rate: float | None = None

    def room(self, bucket: Bucket, now: float) -> tuple[int | None, int | None]:
        """(cap on running jobs, starts the bucket allows at ``now``); ``None``: no limit."""
        return self.cap, None if self.rate is None else bucket.allowance(self.rate, now)
