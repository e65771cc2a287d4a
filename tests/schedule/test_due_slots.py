"""Which slots run: the next five for docs, and the due ones after an outage per catch_up."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from jobdef.errors import ScheduleError
from jobdef.policy.model import JobPolicy
from jobdef.schedule import CATCH_UP_LIMIT, CronSchedule, due_slots, next_runs
from jobdef.sheets.pipeline import load_registry

TOKYO = ZoneInfo("Asia/Tokyo")
HOURLY = CronSchedule("0 * * * *", "UTC")


def at(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)  # type: ignore[misc]


def hours(slots: list[datetime]) -> list[int]:
    return [slot.hour for slot in slots]


def test_next_runs_of_the_example_nightly_report(example_sheets: Path) -> None:
    policy = load_registry([example_sheets]).job("nightly_report")
    runs = next_runs(policy, at(2026, 5, 1, 12))  # 21:00 in Tokyo
    assert [r.isoformat() for r in runs] == [
        f"2026-05-{day:02d}T03:00:00+09:00" for day in range(2, 7)
    ]


def test_next_runs_takes_epoch_seconds_and_a_count() -> None:
    policy = JobPolicy(name="tick", handler="m:f", mode="batch", schedule="*/10 * * * *")
    runs = next_runs(policy, at(2026, 1, 1).timestamp(), count=3)
    assert [r.minute for r in runs] == [10, 20, 30]


def test_next_runs_refuses_a_naive_now() -> None:
    policy = JobPolicy(name="tick", handler="m:f", mode="batch", schedule="0 * * * *")
    with pytest.raises(ValueError, match="aware datetime"):
        next_runs(policy, datetime(2026, 1, 1))


def test_next_runs_of_a_job_without_schedule_names_the_job() -> None:
    with pytest.raises(ScheduleError, match="job 'plain' has no schedule"):
        next_runs(JobPolicy(name="plain", handler="m:f"), at(2026, 1, 1))


def test_batch_job_with_required_args_is_refused_naming_them() -> None:
    policy = JobPolicy(
        name="export",
        handler="m:f",
        mode="batch",
        schedule="0 * * * *",
        args_schema={"type": "object", "required": ["day"]},
    )
    with pytest.raises(ScheduleError, match="'export' requires args day"):
        next_runs(policy, at(2026, 1, 1))


# A worker ran until 02:00 (slot 02:00 enqueued), then none ran until 07:20.
LAST = at(2026, 1, 1, 2)
BACK = at(2026, 1, 1, 7, 20)


def test_catch_up_all_runs_every_missed_slot_oldest_first() -> None:
    assert hours(due_slots(HOURLY, "all", LAST, BACK)) == [3, 4, 5, 6, 7]


def test_catch_up_latest_runs_only_the_newest_missed_slot() -> None:
    assert hours(due_slots(HOURLY, "latest", LAST, BACK)) == [7]


def test_catch_up_none_drops_missed_slots() -> None:
    assert due_slots(HOURLY, "none", LAST, BACK) == []


def test_catch_up_none_still_runs_a_slot_that_is_due_on_time() -> None:
    assert hours(due_slots(HOURLY, "none", LAST, at(2026, 1, 1, 7, 0, 30))) == [7]


def test_catch_up_all_is_bounded_to_the_newest_slots() -> None:
    a_year_later = LAST + timedelta(days=365)
    slots = due_slots(HOURLY, "all", LAST, a_year_later)
    assert len(slots) == CATCH_UP_LIMIT
    assert slots[-1] == a_year_later
    assert slots[0] == a_year_later - timedelta(hours=CATCH_UP_LIMIT - 1)
    assert len(due_slots(HOURLY, "all", LAST, a_year_later, limit=3)) == 3


@pytest.mark.parametrize("mode", ["none", "latest", "all"])
def test_nothing_is_due_twice(mode: str) -> None:
    assert due_slots(HOURLY, mode, at(2026, 1, 1, 7), BACK) == []  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", ["none", "latest", "all"])
def test_a_new_sheet_does_not_backfill_from_before_it_existed(mode: str) -> None:
    # Never scheduled: only a slot within the grace period of now runs.
    assert hours(due_slots(HOURLY, mode, None, at(2026, 1, 1, 7, 2))) == [7]  # type: ignore[arg-type]
    assert due_slots(HOURLY, mode, None, at(2026, 1, 1, 7, 30)) == []  # type: ignore[arg-type]


def test_catch_up_across_the_new_york_spring_change_counts_the_skipped_slot_once() -> None:
    schedule = CronSchedule("30 2 * * *", "America/New_York")
    slots = due_slots(schedule, "all", at(2026, 3, 6, 12), at(2026, 3, 10, 12))
    assert [s.isoformat() for s in slots] == [
        "2026-03-07T02:30:00-05:00",
        "2026-03-08T03:00:00-04:00",
        "2026-03-09T02:30:00-04:00",
        "2026-03-10T02:30:00-04:00",
    ]
