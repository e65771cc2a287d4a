"""The jobs a turn sent without waiting (a PostgreSQL worker's) claims hold their leases
from the send: an answer read late (the server held the turn on a lock, or the worker was
frozen) must not have the handler processes start them as if their leases were fresh."""

from __future__ import annotations

import time
from typing import Any

from jobdef.backends.records import ClaimOptions, JobRecord
from jobdef.policy.leases import heartbeat_period, vouch_span
from jobdef.runtime.queue import Queue
from jobdef.runtime.settings import WorkerSettings
from jobdef.runtime.worker import Worker, _TurnOut


class _Answered:
    """A turn whose answer is in: it claimed ``records`` and completed nothing."""

    def __init__(self, records: list[JobRecord]) -> None:
        self.records = records

    def fileno(self) -> int:
        return -1

    def ready(self) -> bool:
        return True

    def leased(self) -> int:
        return len(self.records)

    def result(self) -> tuple[list[bool], list[JobRecord]]:
        return [], self.records


class _Vouches:
    """The handler processes' side of a vouch: until when each one said they may start."""

    def __init__(self) -> None:
        self.until: list[float] = []

    def vouch(self, until: float) -> None:
        self.until.append(until)


def test_a_late_answers_jobs_are_vouched_for_and_beaten_as_of_the_send(
    backend: Any, registry: Any
) -> None:
    lease = 30.0
    worker = Worker(backend, registry, WorkerSettings(lease_seconds=lease))
    Queue(backend, registry).enqueue("noop", {"n": 1})
    options = ClaimOptions(worker_id=worker.id, lease_seconds=lease, limit=1)
    claimed = backend.claim(options)
    sent_at = time.monotonic() - 2 * lease  # read long after it was sent
    worker._turn = _TurnOut(_Answered(claimed), [], options, 0, sent_at)
    pool = _Vouches()
    worker._end_turn(pool, chain=False)  # type: ignore[arg-type]
    # Vouched as of the send: long past, so the processes start nothing on it.
    assert pool.until == [sent_at + vouch_span(lease)]
    held = worker._held[claimed[0].id]
    # Its heartbeat is due at once: it renews the lease, or finds it lost, first.
    assert held.last_beat == sent_at
    assert time.monotonic() - held.last_beat >= heartbeat_period(lease)
