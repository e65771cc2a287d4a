"""Queue limits from ``Queue`` documents, turned into what a worker's claim may take.

``concurrency`` goes to the store as ``ClaimOptions.queue_limits``: the claim
counts running jobs of the queue in the database, under a lock on the queue's
row (PostgreSQL) or the write lock (SQLite), so the cap holds across every
worker that shares the store.

``rate`` (job starts per second) is a token bucket kept by each worker: a
rate-limited queue is claimed on its own, at most as many jobs as the bucket
holds, and the bucket refills at ``rate`` up to one second's worth (at least
one start). It is per worker process: N workers serving one rate-limited queue
start up to N times ``rate`` together. That keeps the claim one index-backed
statement with no shared counter row for every worker to contend on.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from jobdef.policy import QueuePolicy


def concurrency_limits(queues: Mapping[str, QueuePolicy]) -> dict[str, int]:
    """``ClaimOptions.queue_limits`` from the ``Queue`` documents that set ``concurrency``."""
    return {name: q.concurrency for name, q in queues.items() if q.concurrency is not None}


@dataclass
class _Bucket:
    rate: float
    capacity: float
    tokens: float
    at: float


@dataclass(frozen=True, slots=True)
class ClaimRequest:
    """One claim of a round: from these queues, at most ``limit`` jobs."""

    queues: tuple[str, ...]
    limit: int


class RateLimiter:
    """Per-queue token buckets for the ``rate`` of ``Queue`` documents (starts per second)."""

    def __init__(self, queues: Mapping[str, QueuePolicy], now: float) -> None:
        self._buckets = {
            name: _Bucket(q.rate, max(1.0, q.rate), max(1.0, q.rate), now)
            for name, q in queues.items()
            if q.rate is not None
        }

    @property
    def limited(self) -> frozenset[str]:
        """Names of the queues that have a rate."""
        return frozenset(self._buckets)

    def _refill(self, queue: str, now: float) -> _Bucket:
        bucket = self._buckets[queue]
        if now > bucket.at:
            bucket.tokens = min(bucket.capacity, bucket.tokens + (now - bucket.at) * bucket.rate)
            bucket.at = now
        return bucket

    def allowance(self, queue: str, now: float) -> int:
        """How many jobs of ``queue`` may start now (a large number when it has no rate)."""
        if queue not in self._buckets:
            return 1 << 30
        return int(self._refill(queue, now).tokens)

    def spend(self, queue: str, count: int, now: float) -> None:
        """Record ``count`` starts of ``queue``."""
        if queue in self._buckets and count:
            self._refill(queue, now).tokens -= count

    def wait(self, queue: str, now: float) -> float:
        """Seconds until ``queue`` may start one more job (0 when it may now)."""
        if queue not in self._buckets:
            return 0.0
        bucket = self._refill(queue, now)
        return max(0.0, (1.0 - bucket.tokens) / bucket.rate)

    def plan(self, queues: Iterable[str], free: int, now: float) -> list[ClaimRequest]:
        """The claims of one round for a worker with ``free`` slots serving ``queues``.

        Each rate-limited queue with tokens gets a claim of its own capped by its
        allowance; the other queues share one claim for whatever is left over. The
        caller spends what each claim actually took, and claims in this order,
        lowering ``free`` as it goes.
        """
        requests: list[ClaimRequest] = []
        plain = []
        for queue in sorted(set(queues)):
            if queue in self._buckets:
                allowed = min(free, self.allowance(queue, now))
                if allowed > 0:
                    requests.append(ClaimRequest((queue,), allowed))
            else:
                plain.append(queue)
        if plain and free > 0:
            requests.append(ClaimRequest(tuple(plain), free))
        return requests
