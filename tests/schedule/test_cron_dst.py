"""Cron across daylight-saving changes follows Vixie/Debian cron.

A line whose minute or hour field starts with ``*`` follows the real clock: it runs
in both passes of a repeated hour and not at times the clock skips. Any other line
is a fixed time: once in a repeated hour (the first pass), and a skipped time runs
right after the change. Zones: America/New_York, Europe/Riga, Australia/Lord_Howe
(a 30-minute change) and Asia/Tokyo (no DST).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import islice, pairwise
from zoneinfo import ZoneInfo

import pytest

from jobdef.backends.protocol import Backend
from jobdef.policy.keys import slot_key
from jobdef.policy.model import JobPolicy
from jobdef.runtime.maintenance.scheduler import Scheduler
from jobdef.schedule import CronSchedule, due_slots
from support import ManualClock

pytestmark = pytest.mark.every_engine


def local(zone: str, *parts: int, fold: int = 0) -> datetime:
    return datetime(*parts, tzinfo=ZoneInfo(zone), fold=fold)  # type: ignore[misc]


def runs(expr: str, zone: str, start: datetime, end: datetime) -> list[str]:
    """The slots in ``(start, end]``, as ISO times with their offset."""
    found = []
    for slot in CronSchedule(expr, zone).after(start):
        if slot.timestamp() > end.timestamp():
            break
        found.append(slot.isoformat())
    return found


def longest_gap(expr: str, zone: str, start: datetime, end: datetime) -> timedelta:
    slots = [datetime.fromisoformat(s) for s in runs(expr, zone, start, end)]
    return max(b.astimezone(UTC) - a.astimezone(UTC) for a, b in pairwise(slots))


# -- Europe/Riga, 2021-10-31: 04:00 EEST (+03) -> 03:00 EET (+02), 03:xx shows twice.

RIGA = "Europe/Riga"
RIGA_BEFORE = local(RIGA, 2021, 10, 31, 2, 50)
RIGA_AFTER = local(RIGA, 2021, 10, 31, 4, 10)


def test_riga_every_15_minutes_runs_in_both_passes_of_the_repeated_hour() -> None:
    assert runs("*/15 * * * *", RIGA, RIGA_BEFORE, RIGA_AFTER) == [
        "2021-10-31T03:00:00+03:00",
        "2021-10-31T03:15:00+03:00",
        "2021-10-31T03:30:00+03:00",
        "2021-10-31T03:45:00+03:00",
        "2021-10-31T03:00:00+02:00",
        "2021-10-31T03:15:00+02:00",
        "2021-10-31T03:30:00+02:00",
        "2021-10-31T03:45:00+02:00",
        "2021-10-31T04:00:00+02:00",
    ]


def test_riga_every_minute_never_waits_more_than_a_minute() -> None:
    assert longest_gap("* * * * *", RIGA, RIGA_BEFORE, RIGA_AFTER) == timedelta(minutes=1)
    assert len(runs("* * * * *", RIGA, RIGA_BEFORE, RIGA_AFTER)) == 10 + 120 + 10


def test_riga_fixed_hour_in_the_repeated_hour_runs_once_the_first_time() -> None:
    start, end = local(RIGA, 2021, 10, 30, 12), local(RIGA, 2021, 11, 1, 12)
    assert runs("30 3 * * *", RIGA, start, end) == [
        "2021-10-31T03:30:00+03:00",
        "2021-11-01T03:30:00+02:00",
    ]


def test_riga_spring_forward_fixed_time_runs_right_after_the_gap_wildcard_skips_it() -> None:
    # 2021-03-28: 03:00 EET (+02) -> 04:00 EEST (+03), 03:xx never shows.
    start, end = local(RIGA, 2021, 3, 28, 2, 50), local(RIGA, 2021, 3, 28, 4, 20)
    assert runs("30 3 * * *", RIGA, start, end) == ["2021-03-28T04:00:00+03:00"]
    assert runs("*/15 * * * *", RIGA, start, end) == [
        "2021-03-28T04:00:00+03:00",
        "2021-03-28T04:15:00+03:00",
    ]


# -- America/New_York, 2026-11-01: 02:00 EDT -> 01:00 EST; 2026-03-08: 02:00 EST -> 03:00 EDT.

NEW_YORK = "America/New_York"


def test_new_york_step_minutes_run_in_both_passes_of_the_repeated_hour() -> None:
    start, end = local(NEW_YORK, 2026, 11, 1, 0, 50), local(NEW_YORK, 2026, 11, 1, 2, 0)
    assert runs("*/20 * * * *", NEW_YORK, start, end) == [
        "2026-11-01T01:00:00-04:00",
        "2026-11-01T01:20:00-04:00",
        "2026-11-01T01:40:00-04:00",
        "2026-11-01T01:00:00-05:00",
        "2026-11-01T01:20:00-05:00",
        "2026-11-01T01:40:00-05:00",
        "2026-11-01T02:00:00-05:00",
    ]


def test_new_york_hourly_runs_at_both_one_oclocks() -> None:
    start, end = local(NEW_YORK, 2026, 11, 1, 0, 30), local(NEW_YORK, 2026, 11, 1, 2, 30)
    assert runs("0 * * * *", NEW_YORK, start, end) == [
        "2026-11-01T01:00:00-04:00",
        "2026-11-01T01:00:00-05:00",
        "2026-11-01T02:00:00-05:00",
    ]


def test_new_york_fixed_hours_run_once_in_the_repeated_hour() -> None:
    start, end = local(NEW_YORK, 2026, 10, 31, 12), local(NEW_YORK, 2026, 11, 1, 12)
    assert runs("30 1 * * *", NEW_YORK, start, end) == ["2026-11-01T01:30:00-04:00"]
    # A list or range of hours is fixed too (it does not start with *).
    assert runs("0,30 1-2 * * *", NEW_YORK, start, end) == [
        "2026-11-01T01:00:00-04:00",
        "2026-11-01T01:30:00-04:00",
        "2026-11-01T02:00:00-05:00",
        "2026-11-01T02:30:00-05:00",
    ]


def test_new_york_spring_forward_runs_a_skipped_fixed_time_at_the_change() -> None:
    start, end = local(NEW_YORK, 2026, 3, 8, 1, 0), local(NEW_YORK, 2026, 3, 8, 3, 30)
    assert runs("30 2 * * *", NEW_YORK, start, end) == ["2026-03-08T03:00:00-04:00"]
    # Two skipped fixed times land on the same instant: one slot.
    assert runs("0,30 2 * * *", NEW_YORK, start, end) == ["2026-03-08T03:00:00-04:00"]
    assert runs("*/30 * * * *", NEW_YORK, start, end) == [
        "2026-03-08T01:30:00-05:00",
        "2026-03-08T03:00:00-04:00",
        "2026-03-08T03:30:00-04:00",
    ]


# -- Australia/Lord_Howe: +11 -> +10:30 on 2026-04-05 (02:00 -> 01:30, 01:30-02:00 shows
# twice) and +10:30 -> +11 on 2026-10-04 (02:00 -> 02:30, 02:00-02:30 never shows).

LORD_HOWE = "Australia/Lord_Howe"


def test_lord_howe_repeated_half_hour_runs_twice_for_a_wildcard_once_for_a_fixed_time() -> None:
    start, end = local(LORD_HOWE, 2026, 4, 5, 1, 20), local(LORD_HOWE, 2026, 4, 5, 2, 10)
    assert runs("*/15 * * * *", LORD_HOWE, start, end) == [
        "2026-04-05T01:30:00+11:00",
        "2026-04-05T01:45:00+11:00",
        "2026-04-05T01:30:00+10:30",
        "2026-04-05T01:45:00+10:30",
        "2026-04-05T02:00:00+10:30",
    ]
    assert runs("45 1 * * *", LORD_HOWE, start, end) == ["2026-04-05T01:45:00+11:00"]


def test_lord_howe_skipped_half_hour() -> None:
    start, end = local(LORD_HOWE, 2026, 10, 4, 1, 50), local(LORD_HOWE, 2026, 10, 4, 2, 50)
    assert runs("15 2 * * *", LORD_HOWE, start, end) == ["2026-10-04T02:30:00+11:00"]
    assert runs("*/15 * * * *", LORD_HOWE, start, end) == [
        "2026-10-04T02:30:00+11:00",
        "2026-10-04T02:45:00+11:00",
    ]


# -- Asia/Tokyo has no DST: every wall time once, evenly spaced, whatever day.


@pytest.mark.parametrize("day", [(2026, 3, 8), (2026, 3, 29), (2026, 10, 25), (2026, 11, 1)])
def test_tokyo_every_15_minutes_is_even_on_other_zones_change_days(day: tuple[int, ...]) -> None:
    start = local("Asia/Tokyo", *day)
    slots = runs("*/15 * * * *", "Asia/Tokyo", start, start + timedelta(days=1))
    assert len(slots) == 96
    assert len({s[:19] for s in slots}) == 96  # no wall time twice
    assert longest_gap("*/15 * * * *", "Asia/Tokyo", start, start + timedelta(days=1)) == (
        timedelta(minutes=15)
    )


# -- The backward walk (what the scheduler's catch-up reads) agrees with the forward one.


@pytest.mark.parametrize(
    ("expr", "zone", "start", "end"),
    [
        ("*/15 * * * *", RIGA, RIGA_BEFORE, RIGA_AFTER),
        ("30 3 * * *", RIGA, local(RIGA, 2021, 10, 29), local(RIGA, 2021, 11, 2)),
        ("*/15 * * * *", LORD_HOWE, local(LORD_HOWE, 2026, 4, 5), local(LORD_HOWE, 2026, 4, 5, 3)),
        ("15 2 * * *", LORD_HOWE, local(LORD_HOWE, 2026, 10, 2), local(LORD_HOWE, 2026, 10, 6)),
        ("0 * * * *", NEW_YORK, local(NEW_YORK, 2026, 11, 1), local(NEW_YORK, 2026, 11, 1, 4)),
    ],
)
def test_catch_up_over_a_change_gets_the_same_slots_as_the_forward_walk(
    expr: str, zone: str, start: datetime, end: datetime
) -> None:
    caught = due_slots(CronSchedule(expr, zone), "all", start, end)
    assert [s.isoformat() for s in caught] == runs(expr, zone, start, end)


def test_the_rule_is_chosen_by_the_minute_and_hour_fields() -> None:
    from jobdef.schedule.cron import dst_rule, follows_real_clock

    assert follows_real_clock("*/15 * * * *")
    assert follows_real_clock("* 3 * * *")  # every minute of 03:xx, as cron does
    assert follows_real_clock("15 */2 * * *")
    assert not follows_real_clock("30 1 * * *")
    assert not follows_real_clock("0 9-17 * * 1-5")
    assert "both passes" in dst_rule("*/15 * * * *")
    assert "once, the first time" in dst_rule("30 1 * * *")
    assert "right after the change" in dst_rule("30 1 * * *")


# -- The scheduler on a real store: each real instant is its own slot and key.


def batch(schedule: str, timezone: str) -> JobPolicy:
    return JobPolicy(
        name="report",
        handler="jobdef.examples.reports:nightly_report",
        mode="batch",
        schedule=schedule,
        timezone=timezone,
        catch_up="all",
        queue="batch",
    )


def test_scheduler_stores_both_passes_with_distinct_slots_and_keys(backend: Backend) -> None:
    policy = batch("*/15 * * * *", RIGA)
    clock = ManualClock(RIGA_BEFORE)
    scheduler = Scheduler(backend, [policy], clock=clock)
    moment = RIGA_BEFORE.astimezone(UTC)
    while moment <= RIGA_AFTER:
        clock.set(moment)
        scheduler.tick()
        moment += timedelta(minutes=5)
    jobs = sorted(backend.list_jobs(job="report", limit=1000), key=lambda job: job.slot or 0.0)
    zone = ZoneInfo(RIGA)
    stored = [datetime.fromtimestamp(job.slot or 0, zone).isoformat() for job in jobs]
    assert stored == runs("*/15 * * * *", RIGA, RIGA_BEFORE, RIGA_AFTER)
    keys = [job.idempotency_key for job in jobs]
    assert len(set(keys)) == len(keys) == 9
    assert "report@2021-10-31T03:15:00+03:00" in keys
    assert "report@2021-10-31T03:15:00+02:00" in keys


def test_slot_keys_differ_for_every_real_instant_of_a_repeated_hour() -> None:
    policy = batch("* * * * *", LORD_HOWE)
    start = local(LORD_HOWE, 2026, 4, 5, 1, 0)
    slots = list(islice(CronSchedule(policy.schedule or "", LORD_HOWE).after(start), 120))
    keys = {slot_key(policy, slot) for slot in slots}
    assert len(keys) == len({slot.timestamp() for slot in slots}) == 120


# -- explain says which rule a batch job follows, where the zone's clock changes.


@pytest.mark.parametrize("fmt", ["text", "markdown", "json"])
def test_explain_states_the_daylight_saving_rule_of_the_line(fmt: str) -> None:
    from jobdef.policy.registry import Registry
    from jobdef.render.explain import explain

    now = local(RIGA, 2021, 10, 30).timestamp()
    wildcard, fixed, tokyo = (
        batch("*/15 * * * *", RIGA),
        batch("30 3 * * *", RIGA),
        batch("30 3 * * *", "Asia/Tokyo"),
    )
    for job, expected in [(wildcard, "both passes"), (fixed, "once, the first time")]:
        text = explain(job, Registry(jobs={"report": job}, channels={}), fmt, now=now)
        assert expected in text
    text = explain(tokyo, Registry(jobs={"report": tokyo}, channels={}), fmt, now=now)
    assert "Daylight saving" not in text  # Tokyo's clock does not change
    ja = explain(fixed, Registry(jobs={"report": fixed}, channels={}), fmt, lang="ja", now=now)
    assert "夏時間" in ja
