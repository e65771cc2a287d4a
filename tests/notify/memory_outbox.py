"""The four outbox verbs over a list, with a steerable clock: for pacing and retry unit tests.

The end-to-end tests use the real SQLite backend; this store lets the digest
and backoff rules be checked minute by minute without waiting.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from jobdef.backends.base import Notification, OutboxRecord


@dataclass
class Clock:
    now: float = 1_767_225_600.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class MemoryOutbox:
    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.rows: dict[int, OutboxRecord] = {}
        self.leases: dict[int, float] = {}

    def add(self, notification: Notification) -> None:
        id_ = len(self.rows) + 1
        now = self.clock()
        self.rows[id_] = OutboxRecord(id_, notification, 0, now, now)

    def outbox_claim(self, limit: int, lease_seconds: float) -> list[OutboxRecord]:
        now = self.clock()
        due = [
            r
            for r in self.rows.values()
            if r.delivered_at is None and r.next_at <= now and self.leases.get(r.id, 0) <= now
        ]
        due.sort(key=lambda r: (r.next_at, r.id))
        for record in due[:limit]:
            self.leases[record.id] = now + lease_seconds
        return due[:limit]

    def outbox_delivered(self, ids: Sequence[int]) -> None:
        for id_ in ids:
            self.rows[id_] = replace(self.rows[id_], delivered_at=self.clock())
            self.leases.pop(id_, None)

    def outbox_failed(self, id: int, error: str, next_at: float) -> None:
        row = self.rows[id]
        self.rows[id] = replace(row, attempts=row.attempts + 1, last_error=error, next_at=next_at)
        self.leases.pop(id, None)

    def outbox_pending(self) -> list[OutboxRecord]:
        return [r for r in self.rows.values() if r.delivered_at is None]

    def close(self) -> None:
        pass
