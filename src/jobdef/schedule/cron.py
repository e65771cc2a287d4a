"""Cron slots of one sheet: local wall-clock times turned into instants, DST included.

A ``schedule`` is read in the sheet's ``timezone`` with Vixie/Debian cron's rule
for daylight-saving changes (cronsim implements it; see :func:`follows_real_clock`):

- a line whose minute or hour field starts with ``*`` (``*/15 * * * *``,
  ``0 * * * *``, ``* 3 * * *``) follows the real clock: in the hour a clock shows
  twice (fall back) it runs in both passes, and times the clock skips (spring
  forward) do not run;
- any other line is a fixed time (``30 1 * * *``, ``0 9-17 * * 1-5``): it runs
  once in a repeated hour, the first time, and a time the clock skips runs right
  after the change (``30 2 * * *`` in America/New_York runs at 03:00 EDT that day).

Slots are aware datetimes in the zone, so two runs in a repeated hour differ by
their offset (``01:30-04:00``, ``01:30-05:00``) and so do their slot keys. Several
fixed times that land on the same instant (two skipped times) are one slot.
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


def follows_real_clock(expr: str) -> bool:
    """Whether a cron line follows the real clock across a DST change (Vixie/Debian cron).

    It does when its minute or hour field starts with ``*``: cron calls such a
    job a wildcard job and runs it at every real time that matches, both passes
    of a repeated hour included. Other lines are fixed-time jobs: each wall time
    runs once, and one the clock skips runs right after the change.
    """
    minute, hour = expr.split()[:2]
    return minute.startswith("*") or hour.startswith("*")


def dst_rule(expr: str) -> str:
    """One sentence on what ``expr`` does when the clock changes, for docs and explain."""
    if follows_real_clock(expr):
        return (
            "Daylight saving: this line follows the real clock (its minute or hour field "
            "starts with *): in an hour the clock shows twice it runs in both passes; "
            "times the clock skips do not run."
        )
    return (
        "Daylight saving: this line is a fixed time: in an hour the clock shows twice it "
        "runs once, the first time; a time the clock skips runs right after the change."
    )


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

    def dst_rule(self) -> str | None:
        """What this line does when the clock changes (:func:`dst_rule`); ``None`` in a
        zone whose clock does not change this year or next (Asia/Tokyo, UTC)."""
        year = datetime.now(UTC).year
        offsets = {
            datetime(y, m, 1, tzinfo=self.tz).utcoffset() for y in (year, year + 1) for m in (1, 7)
        }
        return dst_rule(self.expr) if len(offsets) > 1 else None

    def _slots(self, start: datetime, *, reverse: bool) -> Iterator[datetime]:
        """cronsim's slots from ``start``, each instant once, as datetimes of this zone."""
        previous: float | None = None
        for slot in CronSim(self.expr, start.astimezone(self.tz), reverse=reverse):
            # A slot's fold says which pass of a repeated hour it is; reading it back
            # from its instant makes the offset (and so the slot key) match the instant.
            stamp = slot.timestamp()
            if stamp != previous:
                previous = stamp
                yield datetime.fromtimestamp(stamp, self.tz)

    def after(self, moment: datetime) -> Iterator[datetime]:
        """Slots strictly after ``moment`` (aware), oldest first, each instant once."""
        # Compare epoch seconds: aware datetimes of one zone compare by wall time.
        # A fixed-time line walks wall times, so a start in the second pass of a
        # repeated hour first meets first-pass slots that are already past: skip them.
        limit = moment.timestamp()
        for slot in self._slots(moment, reverse=False):
            if slot.timestamp() > limit:
                yield slot

    def at_or_before(self, moment: datetime) -> Iterator[datetime]:
        """Slots at or before ``moment`` (aware), newest first, each instant once."""
        # A fixed-time line walks wall times back; after the clock was set back, a
        # wall time ahead of ``moment``'s may be a slot already past. So start a
        # little ahead (the set-back plus a margin) and skip the future ones.
        if follows_real_clock(self.expr):
            # Real time, so arithmetic in UTC (in the zone it would be wall time and
            # lose the pass of a repeated hour); a second ahead includes ``moment``.
            start = (moment.astimezone(UTC) + timedelta(seconds=1)).astimezone(self.tz)
        else:
            local = moment.astimezone(self.tz)
            day_before = (moment - timedelta(days=1)).astimezone(self.tz)
            setback = max(timedelta(0), day_before.utcoffset() - local.utcoffset())  # type: ignore[operator]
            start = local + setback + _BACKWARD_MARGIN  # cronsim walks this one's wall times
        limit = moment.timestamp()
        for slot in self._slots(start, reverse=True):
            if slot.timestamp() <= limit:
                yield slot
