"""The scheduler on a real job store: each slot once across schedulers, DST, catch-up, restart."""

from __future__ import annotations

import multiprocessing
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from jobdef.backends import open_backend
from jobdef.backends.protocol import Backend
from jobdef.backends.records import JobRecord
from jobdef.policy.model import CatchUp, IdempotencyPolicy, JobPolicy
from jobdef.runtime.maintenance.scheduler import Scheduler
from support import ManualClock

pytestmark = pytest.mark.every_engine


def batch(
    schedule: str = "0 * * * *", timezone: str = "UTC", catch_up: CatchUp = "latest"
) -> JobPolicy:
    return JobPolicy(
        name="report",
        handler="jobdef.examples.reports:nightly_report",
        mode="batch",
        schedule=schedule,
        timezone=timezone,
        catch_up=catch_up,
        queue="batch",
        max_attempts=3,
    )


def at(*parts: int, tz: str = "UTC") -> datetime:
    from zoneinfo import ZoneInfo

    return datetime(*parts, tzinfo=ZoneInfo(tz))  # type: ignore[misc]


def every(start: datetime, end: datetime, step: timedelta) -> Iterator[datetime]:
    moment = start
    while moment <= end:
        yield moment
        moment += step


def stored(backend: Backend) -> list[JobRecord]:
    """Scheduled jobs, oldest slot first."""
    jobs = backend.list_jobs(job="report", limit=100_000)
    return sorted(jobs, key=lambda job: job.slot or 0.0)


def slot_times(backend: Backend, tz: str = "UTC") -> list[str]:
    from zoneinfo import ZoneInfo

    zone = ZoneInfo(tz)
    return [
        datetime.fromtimestamp(job.slot, zone).isoformat() for job in stored(backend) if job.slot
    ]


def test_slot_job_carries_the_slot_in_its_key_and_is_due_at_the_slot(backend: Backend) -> None:
    clock = ManualClock(at(2026, 5, 2, 3, 0, 5, tz="Asia/Tokyo"))
    policy = batch("0 3 * * *", "Asia/Tokyo")
    assert Scheduler(backend, [policy], clock=clock).tick() == 1
    (job,) = stored(backend)
    slot = at(2026, 5, 2, 3, tz="Asia/Tokyo").timestamp()
    assert job.idempotency_key == "report@2026-05-02T03:00:00+09:00"
    assert (job.slot, job.run_after, job.queue, job.max_attempts) == (slot, slot, "batch", 3)
    assert job.args == {}


def test_each_slot_job_is_stored_with_a_receipt_token_of_its_own(backend: Backend) -> None:
    """As every enqueue: nobody reads a cron job's receipt, but its row has one."""
    policy = batch("0 * * * *", catch_up="all")
    clock = ManualClock(at(2026, 1, 1, 5, 0, 1))
    Scheduler(backend, [policy], clock=clock).tick()
    clock.advance(3 * 3600)
    Scheduler(backend, [policy], clock=clock).tick()
    tokens = [job.receipt for job in stored(backend)]
    assert len(tokens) == 4
    assert all(token is not None and len(token) == 35 for token in tokens)
    assert len(set(tokens)) == 4
    assert [backend.find_receipt(token).id for token in tokens if token] == [
        job.id for job in stored(backend)
    ]


def test_scheduler_serves_only_batch_jobs(backend: Backend) -> None:
    plain = JobPolicy(name="mail", handler="m:f")
    assert Scheduler(backend, [plain, batch()]).jobs == ["report"]


def test_a_batch_job_that_cannot_be_scheduled_is_refused_and_the_others_run(
    backend: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    needs_args = JobPolicy(
        name="export",
        handler="m:f",
        mode="batch",
        schedule="0 * * * *",
        args_schema={"type": "object", "required": ["day"]},
    )
    keyed = JobPolicy(
        name="keyed", handler="m:f", mode="batch", schedule="0 * * * *",
        idempotency=IdempotencyPolicy(key="{order_id}:sample"),
    )  # fmt: skip
    clock = ManualClock(at(2026, 1, 1, 5, 0, 1))
    scheduler = Scheduler(backend, [needs_args, keyed, batch()], clock=clock)
    assert scheduler.jobs == ["report"]
    assert "requires args day" in scheduler.refused["export"]
    assert "order_id" in scheduler.refused["keyed"]
    assert "not scheduling export" in caplog.text
    assert scheduler.tick() == 1


def _race(url: str, policy: JobPolicy, times: list[float], start: threading.Barrier | None) -> int:
    backend = open_backend(url)
    clock_now = [times[0]]
    scheduler = Scheduler(backend, [policy], clock=lambda: clock_now[0])
    if start is not None:
        start.wait()
    created = 0
    try:
        for moment in times:
            clock_now[0] = moment
            created += scheduler.tick()
    finally:
        backend.close()
    return created


def _race_process(url: str, times: list[float], start: object, out: object) -> None:
    start.wait()  # type: ignore[attr-defined]
    out.put(_race(url, batch("*/5 * * * *", catch_up="all"), times, None))  # type: ignore[attr-defined]


def test_two_scheduler_threads_store_each_slot_once(db_url: str, backend: Backend) -> None:
    policy = batch("*/5 * * * *", catch_up="all")
    start = at(2026, 1, 1)
    times = [m.timestamp() for m in every(start, start + timedelta(hours=6), timedelta(seconds=50))]
    barrier = threading.Barrier(2)
    results: list[int] = []
    threads = [
        threading.Thread(target=lambda: results.append(_race(db_url, policy, times, barrier)))
        for _ in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    slots = [job.slot for job in stored(backend)]
    assert len(slots) == 6 * 12 + 1  # 00:00 .. 06:00 every five minutes
    assert len(set(slots)) == len(slots)
    assert sum(results) == len(slots)


@pytest.mark.slow
def test_two_scheduler_processes_store_each_slot_once(db_url: str, backend: Backend) -> None:
    start = at(2026, 1, 1)
    times = [m.timestamp() for m in every(start, start + timedelta(hours=6), timedelta(seconds=50))]
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(2)
    out = context.Queue()
    processes = [
        context.Process(target=_race_process, args=(db_url, times, barrier, out)) for _ in range(2)
    ]
    for process in processes:
        process.start()
    created = [out.get(timeout=120) for _ in processes]
    for process in processes:
        process.join(timeout=30)
        assert process.exitcode == 0
    slots = [job.slot for job in stored(backend)]
    assert len(slots) == 6 * 12 + 1
    assert len(set(slots)) == len(slots)
    assert sum(created) == len(slots)


def run_through(backend: Backend, policy: JobPolicy, start: datetime, end: datetime) -> None:
    """One scheduler ticking every ten minutes from ``start`` to ``end``."""
    clock = ManualClock(start)
    scheduler = Scheduler(backend, [policy], clock=clock)
    for moment in every(start, end, timedelta(minutes=10)):
        clock.set(moment)
        scheduler.tick()


def test_new_york_spring_forward_runs_the_skipped_slot_once(backend: Backend) -> None:
    tz = "America/New_York"
    run_through(
        backend, batch("30 2 * * *", tz), at(2026, 3, 6, 12, tz=tz), at(2026, 3, 9, 12, tz=tz)
    )
    assert slot_times(backend, tz) == [
        "2026-03-07T02:30:00-05:00",
        "2026-03-08T03:00:00-04:00",
        "2026-03-09T02:30:00-04:00",
    ]


def test_new_york_fall_back_runs_the_repeated_slot_once(backend: Backend) -> None:
    tz = "America/New_York"
    run_through(
        backend, batch("30 1 * * *", tz), at(2026, 10, 31, tz=tz), at(2026, 11, 2, 12, tz=tz)
    )
    assert slot_times(backend, tz) == [
        "2026-10-31T01:30:00-04:00",
        "2026-11-01T01:30:00-04:00",
        "2026-11-02T01:30:00-05:00",
    ]


@pytest.mark.parametrize(
    ("start", "end"), [((2026, 3, 6), (2026, 3, 10)), ((2026, 10, 30), (2026, 11, 3))]
)
def test_tokyo_runs_once_a_day_across_the_us_change_days(
    backend: Backend, start: tuple[int, ...], end: tuple[int, ...]
) -> None:
    tz = "Asia/Tokyo"
    run_through(backend, batch("0 3 * * *", tz), at(*start, tz=tz), at(*end, tz=tz))
    times = slot_times(backend, tz)
    assert len(times) == 4
    assert all(t.endswith("T03:00:00+09:00") for t in times)


@pytest.mark.parametrize(
    ("catch_up", "after_restart"),
    [("all", [3, 4, 5, 6, 7]), ("latest", [7]), ("none", [])],
)
def test_catch_up_after_an_outage(
    backend: Backend, catch_up: CatchUp, after_restart: list[int]
) -> None:
    policy = batch("0 * * * *", catch_up=catch_up)
    # A worker ran from 00:00 to 02:30, then none until 07:20.
    run_through(backend, policy, at(2026, 1, 1, 0, 0, 10), at(2026, 1, 1, 2, 30))
    before = [job.slot for job in stored(backend)]
    assert len(before) == 3
    clock = ManualClock(at(2026, 1, 1, 7, 20))
    restarted = Scheduler(backend, [policy], clock=clock)
    assert restarted.tick() == len(after_restart)
    new = [datetime.fromtimestamp(job.slot, UTC).hour for job in stored(backend)[3:] if job.slot]
    assert new == after_restart
    # Back on time: the next slot runs whatever the mode.
    clock.set(at(2026, 1, 1, 8, 0, 30))
    assert restarted.tick() == 1


def test_restart_does_not_enqueue_a_slot_again(backend: Backend) -> None:
    policy = batch("0 * * * *", catch_up="all")
    clock = ManualClock(at(2026, 1, 1, 5, 0, 1))
    assert Scheduler(backend, [policy], clock=clock).tick() == 1
    assert Scheduler(backend, [policy], clock=clock).tick() == 0
    assert len(stored(backend)) == 1


def test_tick_before_the_next_slot_does_nothing(backend: Backend) -> None:
    clock = ManualClock(at(2026, 1, 1, 5, 0, 1))
    scheduler = Scheduler(backend, [batch()], clock=clock)
    assert scheduler.tick() == 1
    clock.set(at(2026, 1, 1, 5, 59, 59))
    assert scheduler.tick() == 0
    clock.set(at(2026, 1, 1, 6))
    assert scheduler.tick() == 1


def test_on_postgres_only_the_maintenance_lock_holder_schedules(
    postgres_url: str, postgres_schema: str
) -> None:
    from jobdef.backends.protocol import holds_maintenance_lock
    from jobdef.policy.registry import Registry
    from jobdef.runtime.maintenance import MaintenanceContext

    url = f"{postgres_url}?schema={postgres_schema}"
    registry = Registry(jobs={"report": batch("0 * * * *", catch_up="latest")}, channels={})
    clock = ManualClock(at(2026, 1, 1, 0, 0, 10))
    first, second = open_backend(url), open_backend(url)

    def tick(backend: Backend, scheduler: Scheduler) -> int | None:
        """What the worker's loop does: tick maintenance only while holding the lock."""
        return scheduler.tick(clock()) if holds_maintenance_lock(backend) else None

    try:
        leader = Scheduler.service(MaintenanceContext(first, registry, "w1", clock))
        other = Scheduler.service(MaintenanceContext(second, registry, "w2", clock))
        assert tick(first, leader) == 1  # takes the maintenance lock
        clock.set(at(2026, 1, 1, 1, 0, 10))
        assert tick(second, other) is None
        assert tick(first, leader) == 1
        first.close()  # the lock holder goes away before 02:00
        clock.set(at(2026, 1, 1, 3, 0, 10))
        assert tick(second, other) == 1  # took the lock over; latest: 03:00 stands in for 02:00
        hours = [datetime.fromtimestamp(job.slot or 0, UTC).hour for job in stored(second)]
        assert hours == [0, 1, 3]
    finally:
        first.close()
        second.close()


def test_a_scheduler_that_sat_idle_starts_after_the_slots_others_stored(backend: Backend) -> None:
    policy = batch("0 * * * *", catch_up="all")
    clock = ManualClock(at(2026, 1, 1, 0, 0, 10))
    idle, busy = (Scheduler(backend, [policy], clock=clock) for _ in range(2))
    assert idle.tick() == 1
    run_through(backend, policy, at(2026, 1, 1, 0, 10), at(2026, 1, 1, 5, 0, 30))
    # ``idle`` was not ticked from 00:00 to 05:00 (another worker held the lock).
    clock.set(at(2026, 1, 1, 6, 0, 10))
    assert idle.tick() == 1  # only 06:00: 01:00 .. 05:00 were stored by the other
    assert busy.tick() == 0
    assert len(stored(backend)) == 7


def test_new_slots_tell_the_worker_that_jobs_are_runnable(backend: Backend) -> None:
    """So that an idle worker claims a slot at once, not at its next poll."""
    from jobdef.policy.registry import Registry
    from jobdef.runtime.maintenance import MaintenanceContext

    told: list[int] = []
    clock = ManualClock(at(2026, 1, 1, 5, 0, 1))
    registry = Registry(jobs={"report": batch("0 * * * *")}, channels={})
    ctx = MaintenanceContext(backend, registry, "w", clock, made_runnable=lambda: told.append(1))
    scheduler = Scheduler.service(ctx)
    assert scheduler.tick() == 1
    assert told == [1]
    clock.advance(60)
    assert scheduler.tick() == 0  # no new slot: nothing to tell
    assert told == [1]
