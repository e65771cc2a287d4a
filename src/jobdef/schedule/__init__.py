"""Periodic batch jobs: cron slots in the sheet's time zone and the scheduler that enqueues them.

``next_runs(policy, now)`` answers "when does this run next" for docs and
``jobdef explain``; :class:`~jobdef.runtime.maintenance.scheduler.Scheduler` is the worker's
maintenance service that enqueues each slot once across all workers.
"""

from __future__ import annotations

from jobdef.schedule.cron import CronSchedule, check_cron, dst_rule, instant_of, zone
from jobdef.schedule.slots import CATCH_UP_LIMIT, due_slots, next_runs, schedule_of

__all__ = [
    "CATCH_UP_LIMIT",
    "CronSchedule",
    "check_cron",
    "dst_rule",
    "due_slots",
    "instant_of",
    "next_runs",
    "schedule_of",
    "zone",
]
