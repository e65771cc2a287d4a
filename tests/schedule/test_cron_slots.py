"""Cron slots in a time zone: DST forward and back, zones without DST, bad lines."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import islice, pairwise
from zoneinfo import ZoneInfo

import pytest

from jobdef.errors import ScheduleError
from jobdef.schedule import CronSchedule, instant_of

NEW_YORK = ZoneInfo("America/New_York")
TOKYO = ZoneInfo("Asia/Tokyo")


def local(tz: ZoneInfo, *parts: int, fold: int = 0) -> datetime:
    return datetime(*parts, tzinfo=tz, fold=fold)  # type: ignore[misc]


def take(schedule: CronSchedule, start: datetime, count: int) -> list[datetime]:
    return list(islice(schedule.after(start), count))


def test_skipped_local_time_runs_once_at_the_change() -> None:
    # 2026-03-08: New York clocks jump from 02:00 EST to 03:00 EDT; 02:30 never happens.
    runs = take(CronSchedule("30 2 * * *", "America/New_York"), local(NEW_YORK, 2026, 3, 7), 3)
    assert [r.isoformat() for r in runs] == [
        "2026-03-07T02:30:00-05:00",
        "2026-03-08T03:00:00-04:00",
        "2026-03-09T02:30:00-04:00",
    ]


def test_repeated_local_time_runs_once_the_first_time() -> None:
    # 2026-11-01: New York clocks fall back from 02:00 EDT to 01:00 EST; 01:30 happens twice.
    runs = take(CronSchedule("30 1 * * *", "America/New_York"), local(NEW_YORK, 2026, 10, 31), 3)
    assert [r.isoformat() for r in runs] == [
        "2026-10-31T01:30:00-04:00",
        "2026-11-01T01:30:00-04:00",
        "2026-11-02T01:30:00-05:00",
    ]


def test_interval_schedule_merges_skipped_slots_into_the_change() -> None:
    start = datetime(2026, 3, 8, 6, 30, tzinfo=UTC)  # 01:30 EST
    runs = take(CronSchedule("*/20 * * * *", "America/New_York"), start, 4)
    # 02:00, 02:20 and 02:40 never show on the clock; they are one run at 03:00 EDT.
    assert [r.isoformat() for r in runs] == [
        "2026-03-08T01:40:00-05:00",
        "2026-03-08T03:00:00-04:00",
        "2026-03-08T03:20:00-04:00",
        "2026-03-08T03:40:00-04:00",
    ]


def test_interval_schedule_runs_in_both_passes_of_the_hour_shown_twice() -> None:
    start = datetime(2026, 11, 1, 5, 10, tzinfo=UTC)  # 01:10 EDT
    runs = take(CronSchedule("*/20 * * * *", "America/New_York"), start, 6)
    assert [r.isoformat() for r in runs] == [
        "2026-11-01T01:20:00-04:00",
        "2026-11-01T01:40:00-04:00",
        "2026-11-01T01:00:00-05:00",
        "2026-11-01T01:20:00-05:00",
        "2026-11-01T01:40:00-05:00",
        "2026-11-01T02:00:00-05:00",
    ]


def test_start_inside_the_second_pass_of_the_repeated_hour_goes_on_from_there() -> None:
    start = local(NEW_YORK, 2026, 11, 1, 1, 10, fold=1)  # 01:10 EST, the second pass
    runs = take(CronSchedule("*/20 * * * *", "America/New_York"), start, 3)
    assert [r.isoformat() for r in runs] == [
        "2026-11-01T01:20:00-05:00",
        "2026-11-01T01:40:00-05:00",
        "2026-11-01T02:00:00-05:00",
    ]
    # A fixed time already ran in the first pass: the next one is tomorrow's.
    fixed = take(CronSchedule("30 1 * * *", "America/New_York"), start, 1)
    assert [r.isoformat() for r in fixed] == ["2026-11-02T01:30:00-05:00"]


def test_tokyo_has_no_daylight_saving_so_every_day_is_alike() -> None:
    schedule = CronSchedule("0 3 * * *", "Asia/Tokyo")
    # Across both US change days: Tokyo runs at 03:00 JST (18:00 UTC the day before) every day.
    for start in (local(TOKYO, 2026, 3, 7), local(TOKYO, 2026, 10, 31)):
        runs = take(schedule, start, 3)
        assert [r.astimezone(UTC).hour for r in runs] == [18, 18, 18]
        assert {(r.hour, r.utcoffset()) for r in runs} == {(3, timedelta(hours=9))}
        gaps = {(b - a).total_seconds() for a, b in pairwise(runs)}
        assert gaps == {86400.0}


def test_at_or_before_walks_back_through_both_passes_of_a_repeated_hour() -> None:
    schedule = CronSchedule("*/20 * * * *", "America/New_York")
    moment = local(NEW_YORK, 2026, 11, 1, 1, 10, fold=1)  # 01:10 EST = 06:10 UTC
    newest = list(islice(schedule.at_or_before(moment), 3))
    assert [r.isoformat() for r in newest] == [
        "2026-11-01T01:00:00-05:00",
        "2026-11-01T01:40:00-04:00",
        "2026-11-01T01:20:00-04:00",
    ]
    # A fixed time in the repeated hour ran in its first pass, before ``moment``.
    fixed = CronSchedule("30 1 * * *", "America/New_York")
    assert next(fixed.at_or_before(moment)).isoformat() == "2026-11-01T01:30:00-04:00"


def test_at_or_before_includes_a_slot_exactly_at_the_moment() -> None:
    schedule = CronSchedule("0 3 * * *", "Asia/Tokyo")
    moment = local(TOKYO, 2026, 5, 1, 3)
    assert next(schedule.at_or_before(moment)) == moment


def test_instant_of_an_existing_time_is_itself() -> None:
    assert instant_of(datetime(2026, 7, 1, 12), NEW_YORK).isoformat() == "2026-07-01T12:00:00-04:00"


@pytest.mark.parametrize(
    ("expr", "says"),
    [
        ("0 3 * *", "has 4 field(s); write 5"),
        ("0 3 * * * *", "has 6 field(s); write 5"),
        ("61 3 * * *", "bad minute"),
        ("0 25 * * *", "bad hour"),
    ],
)
def test_bad_cron_line_says_what_to_write(expr: str, says: str) -> None:
    with pytest.raises(ScheduleError, match=r".*") as caught:
        CronSchedule(expr)
    assert says in caught.value.message
    assert "write" in caught.value.message


def test_unknown_time_zone_names_an_iana_example() -> None:
    with pytest.raises(ScheduleError) as caught:
        CronSchedule("0 3 * * *", "Tokyo/Japan")
    assert "'Tokyo/Japan'" in caught.value.message
    assert "Asia/Tokyo" in caught.value.message


def test_describe_reads_the_line_in_words() -> None:
    assert CronSchedule("0 3 * * *", "Asia/Tokyo").describe() == "At 03:00 every day"
