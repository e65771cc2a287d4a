"""Which slots of a batch job to run: the next ones (for docs), the due ones (for the worker).

Pure functions of a policy and a clock reading, so tests, ``jobdef explain`` and
the docs can ask the same questions the worker's scheduler asks.
"""

from __future__ import annotations

from datetime import UTC, datetime
from itertools import islice

from jobdef.errors import ScheduleError
from jobdef.policy.model import CatchUp, JobPolicy
from jobdef.schedule.cron import CronSchedule

# ``catch_up: all`` enqueues at most this many missed slots (the newest ones).
CATCH_UP_LIMIT = 100
# A slot enqueued this many seconds after its time still counts as on time, so
# ``catch_up: none`` does not drop a slot because a tick came a little late.
ON_TIME_GRACE = 300.0


def as_datetime(moment: datetime | float) -> datetime:
    """An aware datetime from epoch seconds or an aware datetime (naive is refused)."""
    if isinstance(moment, datetime):
        if moment.tzinfo is None:
            raise ValueError("pass an aware datetime (e.g. datetime.now(UTC)), not a naive one")
        return moment
    return datetime.fromtimestamp(moment, UTC)


def schedule_of(policy: JobPolicy) -> CronSchedule:
    """The cron schedule of a ``mode: batch`` job."""
    if not policy.schedule:
        raise ScheduleError(
            f"job {policy.name!r} has no schedule; a batch job needs one, "
            'e.g. schedule: "0 3 * * *"'
        )
    required = list(policy.args_schema.get("required", ()))
    if required:
        raise ScheduleError(
            f"batch job {policy.name!r} requires args {', '.join(required)}, but the "
            "scheduler enqueues it with none; give those args `required: false` "
            "(the handler reads the slot time from its context instead)"
        )
    return CronSchedule(policy.schedule, policy.timezone)


def next_runs(policy: JobPolicy, now: datetime | float, count: int = 5) -> list[datetime]:
    """The next ``count`` run times after ``now``, in the job's time zone (docs, explain)."""
    return list(islice(schedule_of(policy).after(as_datetime(now)), count))


def due_slots(
    schedule: CronSchedule,
    catch_up: CatchUp,
    after: datetime | float | None,
    now: datetime | float,
    *,
    grace: float = ON_TIME_GRACE,
    limit: int = CATCH_UP_LIMIT,
) -> list[datetime]:
    """Slots to enqueue now, oldest first, given the newest slot already handled.

    ``after`` is the newest slot already enqueued (``None``: the job has never been
    scheduled, e.g. a new sheet; then only slots within ``grace`` of ``now`` run,
    nothing from before the sheet existed). Slots in ``(after, now]`` are due;
    those more than ``grace`` seconds old were missed (no worker ran), and
    ``catch_up`` decides what happens to them:

    - ``none``: missed slots are dropped; only on-time slots run.
    - ``latest``: only the newest due slot runs, standing in for the missed ones.
    - ``all``: every due slot runs, at most ``limit`` (the newest ones).
    """
    now_dt = as_datetime(now)
    floor = now_dt.timestamp() - grace
    if after is not None:
        after_ts = as_datetime(after).timestamp()
        floor = max(floor, after_ts) if catch_up == "none" else after_ts
    take = 1 if catch_up == "latest" else limit
    newest_first: list[datetime] = []
    for slot in schedule.at_or_before(now_dt):
        if slot.timestamp() <= floor or len(newest_first) == take:
            break
        newest_first.append(slot)
    return newest_first[::-1]
