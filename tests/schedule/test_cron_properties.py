"""Properties of cron slots in zones with odd daylight-saving rules, over random moments."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import islice, pairwise

from cronsim import CronSim
from hypothesis import given, settings
from hypothesis import strategies as st

from jobdef.schedule import CronSchedule
from jobdef.schedule.cron import follows_real_clock

ZONES = [
    "America/New_York",
    "Europe/London",
    "Australia/Lord_Howe",  # a 30-minute change
    "America/Santiago",  # changes at midnight
    "Asia/Tokyo",
    "UTC",
]
LINES = ["*/20 * * * *", "30 1 * * *", "30 2 * * *", "0 0 * * *", "15 */2 * * 0", "0 3 1 * *"]
YEAR_2026 = st.integers(
    int(datetime(2026, 1, 1, tzinfo=UTC).timestamp()),
    int(datetime(2027, 1, 1, tzinfo=UTC).timestamp()),
).map(lambda ts: datetime.fromtimestamp(ts, UTC))


def matches(expr: str, wall: datetime) -> bool:
    return next(CronSim(expr, wall - timedelta(minutes=1))) == wall


def at_a_change(moment: datetime) -> bool:
    """Whether the zone's offset changes at ``moment`` (arithmetic in UTC, not wall time)."""
    just_before = (moment.astimezone(UTC) - timedelta(seconds=1)).astimezone(moment.tzinfo)
    return moment.utcoffset() != just_before.utcoffset()


@settings(max_examples=150, deadline=None)
@given(zone=st.sampled_from(ZONES), expr=st.sampled_from(LINES), moment=YEAR_2026)
def test_slots_increase_in_instant_and_fixed_times_in_wall_time(
    zone: str, expr: str, moment: datetime
) -> None:
    slots = list(islice(CronSchedule(expr, zone).after(moment), 6))
    assert slots[0].timestamp() > moment.timestamp()
    for a, b in pairwise(slots):
        assert a.timestamp() < b.timestamp()
        if not follows_real_clock(expr):  # a fixed time runs once, even when shown twice
            assert a.replace(tzinfo=None) < b.replace(tzinfo=None)
    for slot in slots:
        wall = slot.replace(tzinfo=None)
        assert matches(expr, wall) or at_a_change(slot)


@settings(max_examples=150, deadline=None)
@given(zone=st.sampled_from(ZONES), expr=st.sampled_from(LINES), moment=YEAR_2026)
def test_backward_and_forward_walks_agree(zone: str, expr: str, moment: datetime) -> None:
    schedule = CronSchedule(expr, zone)
    latest = next(schedule.at_or_before(moment))
    following = next(schedule.after(moment))
    assert latest.timestamp() <= moment.timestamp() < following.timestamp()
    # Nothing runs between the latest slot and the next one.
    assert next(schedule.after(latest)).timestamp() == following.timestamp()
