"""Lease reclaim: jobs whose worker died go back to the queue (or to dead) automatically.

An expired lease counts as a failed attempt with a timeout error
(:class:`~jobdef.runtime.errors.LeaseExpired`); the sheet's ``on_reclaim`` and
``max_attempts`` decide between retry and dead. The move is fenced on the dead
worker's lease, so two reclaimers never both act on one job, and the dead
worker, should it come back, has its late write refused. The move also
checks, in its statement, that the lease is still expired, so a heartbeat that
renewed it after :meth:`Backend.expired_leases` read it keeps the job.

Every worker reclaims, on PostgreSQL too, whoever holds the maintenance lease
(``every_worker``): a dead worker's jobs are back in the queue about one
reclaim interval after their lease expired, even while the maintainer is frozen.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jobdef.backends.records import ErrorInfo, JobRecord
from jobdef.errors import UnknownJobError
from jobdef.policy.durations import format_duration
from jobdef.policy.leases import RECLAIM_INTERVAL
from jobdef.runtime.classify import class_name, class_names
from jobdef.runtime.errors import LeaseExpired
from jobdef.runtime.failures import FailedAttempt, record_failure

if TYPE_CHECKING:  # this package's __init__ imports this module
    from jobdef.runtime.maintenance import MaintenanceContext


class LeaseReclaimer:
    """Every few seconds, reclaim running jobs whose lease has expired."""

    name = "reclaim"
    every_worker = True

    def __init__(
        self, ctx: MaintenanceContext, interval: float = RECLAIM_INTERVAL, batch: int = 100
    ) -> None:
        self.ctx = ctx
        self.interval = interval
        self.batch = batch

    def tick(self, now: float) -> None:
        moved = [
            self.reclaim(record, now) for record in self.ctx.backend.expired_leases(self.batch)
        ]
        if any(moved):
            self.ctx.made_runnable()

    def reclaim(self, record: JobRecord, now: float) -> bool:
        try:
            policy = self.ctx.registry.job(record.job)
        except UnknownJobError:
            return False  # a worker with the right sheets will reclaim it
        overdue = now - (record.lease_until or now)
        error = ErrorInfo(
            class_name(LeaseExpired),
            f"worker {record.worker_id} stopped heart-beating; its lease expired "
            f"{format_duration(max(overdue, 0.0))} ago and the job was reclaimed",
        )
        failed = FailedAttempt(record, policy, error, class_names(LeaseExpired), "reclaimed")
        recorded = record_failure(self.ctx.backend, failed, now, self.ctx.rng)
        if recorded.moved and self.ctx.telemetry is not None:
            self.ctx.telemetry.reclaimed(record, recorded.decision.action)
        if recorded.moved:
            self.ctx.log.warning(
                "reclaimed job %s (%s attempt %s) from worker %s: %s",
                record.id,
                record.job,
                record.attempt,
                record.worker_id,
                recorded.decision.action,
            )
        return recorded.moved
