"""Outbox rows written the way the runtime writes them: by burying jobs on a real SQLite store."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from jobdef.backends import open_backend
from jobdef.backends.protocol import Backend
from jobdef.backends.records import ClaimOptions, ErrorInfo, NewJob, Notification
from support import ManualClock

NEW_YEAR_2026 = 1_767_225_600.0
"""2026-01-01T00:00:00Z: where the outbox tests' clocks start."""


def open_store(path: Path, clock: ManualClock | None = None) -> Backend:
    return open_backend(f"sqlite:///{path}", clock=clock)


def bury_with(backend: Backend, notifications: Sequence[Notification]) -> None:
    """Enqueue one job per notification, claim them all, and bury each with its notification."""
    jobs = [NewJob(job=n.job, args={"n": i}, queue="default") for i, n in enumerate(notifications)]
    backend.enqueue(jobs)
    claimed = backend.claim(
        ClaimOptions(worker_id="w1", lease_seconds=60, limit=len(notifications))
    )
    assert len(claimed) == len(notifications)
    error = ErrorInfo("ConnectionError", "refused")
    for record, note in zip(claimed, notifications, strict=True):
        assert backend.bury(record.lease, error, notifications=[note])


def dead(job_id: int, channel: str = "ops") -> Notification:
    payload = {
        "job": "send_mail",
        "title": "Send mail",
        "job_id": job_id,
        "key_args": {"reservation_id": job_id},
        "attempts_used": 5,
        "max_attempts": 5,
        "error_type": "ConnectionError",
        "error_message": "refused",
        "at_iso": "2026-01-01T00:00:00Z",
        "rerun": "jobdef requeue --job send_mail --state dead",
        "requeue_command": f"jobdef requeue {job_id}",
    }
    return Notification(channel, "dead", "send_mail", payload, f"send_mail:{job_id}:5:dead:0")
