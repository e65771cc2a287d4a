"""Cron slots of one sheet: local wall-clock times turned into instants, DST included.

A ``schedule`` is read in the sheet's ``timezone``. cronsim (Debian cron's field
syntax) finds the matching *wall-clock* times; this module decides which instant
each one means, with one rule:

    a slot runs at the first instant at which the local clock shows its time.

So a time the clock skips (spring forward) runs once, right at the change
(``30 2 * * *`` in America/New_York runs at 03:00 EDT that day), and a time the
clock shows twice (fall back) runs once, the first time (``30 1 * * *`` runs at
01:30 EDT, not again at 01:30 EST). Several wall times that land on the same
instant are one slot. Instants never go backwards as wall times go forward,
which keeps the iteration simple.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

from jobdef.errors import ScheduleError

# Walls ahead of now can still be in the past after the clock went back; look this far.
_BACKWARD_MARGIN = timedelta(hours=3)


@lru_cache(maxsize=256)
def zone(name: str) -> ZoneInfo:
    """The IANA time zone ``name``, or a :class:`ScheduleError` that says what to write."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ScheduleError(
            f"unknown time zone {name!r}; write an IANA name such as 'Asia/Tokyo', "
            "'America/New_York' or 'UTC'"
        ) from None


def cron_refusal(expr: str) -> str | None:
    """Why the cron parser refuses a 5-field line ("bad day-of-month"), or None."""
    try:
        CronSim(expr, datetime(2000, 1, 1))
    except CronSimError as exc:
        return str(exc).lower()
    return None


def check_cron(expr: str) -> None:
    """Raise :class:`ScheduleError` unless ``expr`` is a 5-field cron line."""
    fields = expr.split()
    if len(fields) != 5:
        raise ScheduleError(
            f"schedule {expr!r} has {len(fields)} field(s); write 5: "
            "minute hour day-of-month month day-of-week, e.g. '0 3 * * *'"
        )
    refusal = cron_refusal(expr)
    if refusal is not None:
        raise ScheduleError(
            f"schedule {expr!r}: {refusal}; write minute 0-59, hour 0-23, "
            "day 1-31, month 1-12 or JAN-DEC, day-of-week 0-7 or SUN-SAT"
        )


def _wall(instant: datetime, tz: ZoneInfo) -> datetime:
    return instant.astimezone(tz).replace(tzinfo=None)


def instant_of(wall: datetime, tz: ZoneInfo) -> datetime:
    """The first instant (in ``tz``) at which the local clock shows ``wall`` or later."""
    first = wall.replace(tzinfo=tz, fold=0).astimezone(UTC)
    if _wall(first, tz) == wall:
        return first.astimezone(tz)  # fold=0 is the earlier of a repeated time
    # ``wall`` falls in a gap. fold=1 reads it with the offset after the change, which
    # lands before the change; fold=0 lands after it. The change is between: find it.
    low = int(wall.replace(tzinfo=tz, fold=1).timestamp())
    high = int(first.timestamp())
    while high - low > 1:
        middle = (low + high) // 2
        if _wall(datetime.fromtimestamp(middle, UTC), tz) >= wall:
            high = middle
        else:
            low = middle
    return datetime.fromtimestamp(high, tz)


class CronSchedule:
    """The slots of one cron line in one time zone, as aware datetimes in that zone."""

    def __init__(self, expr: str, timezone: str = "UTC") -> None:
        check_cron(expr)
        self.expr = expr
        self.timezone = timezone
        self.tz = zone(timezone)

    def __repr__(self) -> str:
        return f"CronSchedule({self.expr!r}, {self.timezone!r})"

    def describe(self) -> str:
        """The line in words, e.g. "At 03:00 every day"."""
        return CronSim(self.expr, datetime(2000, 1, 1)).explain()

    def after(self, moment: datetime) -> Iterator[datetime]:
        """Slots strictly after ``moment`` (aware), oldest first, each instant once."""
        # Compare epoch seconds: aware datetimes of one zone compare by wall time.
        previous = moment.timestamp()
        for wall in CronSim(self.expr, _wall(moment, self.tz)):
            slot = instant_of(wall, self.tz)
            if slot.timestamp() > previous:
                previous = slot.timestamp()
                yield slot

    def at_or_before(self, moment: datetime) -> Iterator[datetime]:
        """Slots at or before ``moment`` (aware), newest first, each instant once."""
        # Instants grow with wall times, so walk walls back from a little ahead of
        # ``moment`` (the clock may have been set back since) and skip future ones.
        local = moment.astimezone(self.tz)
        day_before = (moment - timedelta(days=1)).astimezone(self.tz)
        setback = max(timedelta(0), day_before.utcoffset() - local.utcoffset())  # type: ignore[operator]
        start = local.replace(tzinfo=None) + setback + _BACKWARD_MARGIN
        limit = moment.timestamp()
        previous: float | None = None
        for wall in CronSim(self.expr, start, reverse=True):
            slot = instant_of(wall, self.tz)
            if slot.timestamp() <= limit and slot.timestamp() != previous:
                previous = slot.timestamp()
                yield slot
