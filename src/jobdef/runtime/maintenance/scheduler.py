"""The scheduler: the worker's maintenance service that enqueues batch jobs' cron slots.

Every worker may run it at once: the store keeps each (job, slot) at most once
ever (``NewJob.slot``), and the slot is part of the idempotency key, so a second
scheduler that reaches the same slot enqueues nothing. On PostgreSQL the worker
ticks it only while it holds the maintenance lock, which spares the others the
work. Whenever a slot is due the scheduler reads the newest slot in the store,
so a worker that takes the lock over starts where the previous holder stopped,
and a slot missed in between is caught up per ``catch_up``.

The handler learns which slot it runs for from ``JobRecord.slot`` (epoch
seconds), which the worker hands over as ``ctx.slot``, an aware datetime in the
sheet's time zone (see :func:`slot_time`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from jobdef.backends.protocol import Backend
from jobdef.backends.records import JobRecord, NewJob
from jobdef.errors import JobdefError
from jobdef.policy.keys import slot_key
from jobdef.policy.model import JobPolicy
from jobdef.schedule.cron import CronSchedule, zone
from jobdef.schedule.slots import CATCH_UP_LIMIT, ON_TIME_GRACE, as_datetime, due_slots, schedule_of

if TYPE_CHECKING:  # this package's __init__ imports this module
    from jobdef.runtime.maintenance import MaintenanceContext

log = logging.getLogger("jobdef.scheduler")


def slot_time(record: JobRecord, policy: JobPolicy) -> datetime | None:
    """The slot a stored job runs for, in its sheet's time zone (``None``: enqueued by hand)."""
    if record.slot is None:
        return None
    return datetime.fromtimestamp(record.slot, zone(policy.timezone))


def slot_job(policy: JobPolicy, slot: datetime) -> NewJob:
    """The job to store for one slot of a batch job; it is due at the slot time."""
    return NewJob(
        job=policy.name,
        args={},
        queue=policy.queue,
        priority=policy.priority,
        max_attempts=policy.max_attempts,
        idempotency_key=slot_key(policy, slot),
        run_after=slot.timestamp(),
        slot=slot.timestamp(),
    )


@dataclass
class _Plan:
    """What the scheduler knows about one batch job."""

    policy: JobPolicy
    schedule: CronSchedule
    # Every slot up to this instant (epoch seconds) has been decided: enqueued, or
    # dropped by catch_up. Seconds, not datetimes: aware datetimes of one zone
    # compare by wall time, which is wrong in the hour a clock shows twice.
    decided_through: float | None = None
    # The next slot after ``decided_through``: nothing to do before it.
    next_at: float | None = None


class Scheduler:
    """Enqueues each due slot of every ``mode: batch`` job; call :meth:`tick` periodically.

    ``clock`` returns epoch seconds (injected in tests). ``grace`` and
    ``catch_up_limit`` are explained in :func:`~jobdef.schedule.slots.due_slots`.
    """

    name = "scheduler"
    # Seconds between ticks; a tick between slots only compares two numbers.
    interval = 1.0

    def __init__(
        self,
        backend: Backend,
        jobs: Iterable[JobPolicy],
        *,
        clock: Callable[[], float] = time.time,
        grace: float = ON_TIME_GRACE,
        catch_up_limit: int = CATCH_UP_LIMIT,
        new_job: Callable[[JobPolicy, datetime], NewJob] = slot_job,
        on_enqueued: Callable[[str, str, int], None] | None = None,
    ) -> None:
        self.backend = backend
        # Told (job, queue, how many new) after each enqueue of slots: the worker's metrics.
        self.on_enqueued = on_enqueued
        self.clock = clock
        self.grace = grace
        self.catch_up_limit = catch_up_limit
        self.new_job = new_job
        self._plans: list[_Plan] = []
        # Batch jobs this scheduler cannot run, with why: logged once, the others go on.
        self.refused: dict[str, str] = {}
        for policy in sorted(jobs, key=lambda p: p.name):
            if policy.mode != "batch":
                continue
            try:
                plan = _Plan(policy, schedule_of(policy))
                slot_key(policy, datetime.now(plan.schedule.tz))  # a recipe that needs args
            except JobdefError as exc:
                self.refused[policy.name] = exc.message
                log.error("not scheduling %s: %s", policy.name, exc.message)
                continue
            self._plans.append(plan)

    @classmethod
    def service(cls, ctx: MaintenanceContext) -> Scheduler:
        """The scheduler as one of the worker's maintenance services."""
        telemetry = ctx.telemetry

        def enqueued(job: str, queue: str, new: int) -> None:
            if telemetry is not None:
                telemetry.enqueued(job, queue, new)
            ctx.made_runnable()

        return cls(ctx.backend, ctx.registry, clock=ctx.clock, on_enqueued=enqueued)

    @property
    def jobs(self) -> list[str]:
        """Names of the batch jobs this scheduler serves."""
        return [plan.policy.name for plan in self._plans]

    def tick(self, now: float | None = None) -> int:
        """Enqueue every slot due at ``now`` (default: the clock); return how many were new."""
        moment = as_datetime(self.clock() if now is None else now)
        due = [p for p in self._plans if p.next_at is None or moment.timestamp() >= p.next_at]
        return sum(self._run_due(plan, moment) for plan in due)

    def _run_due(self, plan: _Plan, now: datetime) -> int:
        policy = plan.policy
        # Start from the newest slot any worker stored (after a restart, or when another
        # worker scheduled meanwhile), unless this one has decided further already.
        stored = (plan.decided_through, self.backend.last_slot(policy.name))
        known = [t for t in stored if t is not None]
        plan.decided_through = max(known) if known else now.timestamp() - self.grace
        slots = due_slots(
            plan.schedule,
            policy.catch_up,
            plan.decided_through,
            now,
            grace=self.grace,
            limit=self.catch_up_limit,
        )
        created = 0
        if slots:
            results = self.backend.enqueue([self.new_job(policy, slot) for slot in slots])
            created = sum(result.created for result in results)
            if self.on_enqueued is not None and created:
                self.on_enqueued(policy.name, policy.queue, created)
            log.info(
                "scheduled %s: %d slot(s) due, %d new (%s .. %s)",
                policy.name,
                len(slots),
                created,
                slots[0].isoformat(),
                slots[-1].isoformat(),
            )
        first = plan.next_at is None
        plan.decided_through = max(now.timestamp(), plan.decided_through)
        upcoming = next(plan.schedule.after(as_datetime(plan.decided_through)), None)
        plan.next_at = upcoming.timestamp() if upcoming is not None else float("inf")
        if first:
            log.info(
                "scheduling %s (%s, %s): next run %s",
                policy.name,
                policy.schedule,
                policy.timezone,
                upcoming.isoformat() if upcoming is not None else "never",
            )
        return created
