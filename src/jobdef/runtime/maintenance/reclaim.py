"""Lease reclaim: jobs whose worker died go back to the queue (or to dead) automatically.

An expired lease counts as a failed attempt with a timeout error
(:class:`~jobdef.runtime.errors.LeaseExpired`); the sheet's ``on_reclaim`` and
``max_attempts`` decide between retry and dead. The move is fenced on the dead
worker's lease, so two reclaimers never both act on one job, and the dead
worker, should it come back, has its late write refused.
"""

from __future__ import annotations

from jobdef.backends.records import ErrorInfo, JobRecord
from jobdef.errors import UnknownJobError
from jobdef.notify.events import notifications_for
from jobdef.policy.durations import format_duration
from jobdef.runtime.classify import class_name
from jobdef.runtime.decisions import after_reclaim
from jobdef.runtime.errors import LeaseExpired
from jobdef.runtime.maintenance import MaintenanceContext


class LeaseReclaimer:
    """Every few seconds, reclaim running jobs whose lease has expired."""

    name = "reclaim"

    def __init__(self, ctx: MaintenanceContext, interval: float = 2.0, batch: int = 100) -> None:
        self.ctx = ctx
        self.interval = interval
        self.batch = batch

    def tick(self, now: float) -> None:
        for record in self.ctx.backend.expired_leases(self.batch):
            self.reclaim(record, now)

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
        decision = after_reclaim(policy, record, now, self.ctx.rng)
        backend = self.ctx.backend
        if decision.action == "retry":
            events = ("reclaimed", "retry")
            notes = [n for e in events for n in notifications_for(policy, e, record, error, now)]
            moved = backend.retry(
                record.lease,
                error,
                decision.run_after or now,
                decision.delay or 0.0,
                outcome="reclaimed",
                notifications=notes,
            )
        else:
            error = ErrorInfo(error.type, f"{error.message}; dead: {decision.reason}")
            notes = [
                n
                for e in ("reclaimed", "dead")
                for n in notifications_for(policy, e, record, error, now)
            ]
            moved = backend.bury(record.lease, error, outcome="reclaimed", notifications=notes)
        if moved:
            self.ctx.log.warning(
                "reclaimed job %s (%s attempt %s) from worker %s: %s",
                record.id,
                record.job,
                record.attempt,
                record.worker_id,
                decision.action,
            )
        return moved
