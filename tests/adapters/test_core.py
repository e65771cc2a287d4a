"""The adapters' shared core on a real Redis and a real SQLite store, on a hand-moved
clock: the deadline, duplicates, the dedupe window, lost attempts and one burial."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import redis
from conformance import Cell, write_sheets

from jobdef.adapters.core import AlreadyBuried, SheetRuntime, task_id_for
from jobdef.adapters.store import RunStore
from jobdef.backends import open_backend
from jobdef.backends.records import ErrorInfo
from jobdef.runtime.classify import class_names
from jobdef.sheets.pipeline import load_registry
from support import ManualClock

START = 1_800_000_000.0
ERROR = ErrorInfo("ConnectionError", "down")


@pytest.fixture
def runtime(tmp_path: Path, redis_url: str, prefix: str) -> SheetRuntime:
    cells = (
        Cell(
            "slow_sync", "strategy: fixed, initial: 10s, jitter: none", ("retry",), 3, "5s", "35s"
        ),
        Cell("keyed", "strategy: fixed, initial: 1s, jitter: none", ("ok",)),
    )
    sheets = write_sheets(tmp_path / "jobdefs", cells, prefix)
    keyed = sheets / "keyed.yaml"
    keyed.write_text(
        keyed.read_text() + "idempotency: {key: '{cell}', dedupe_window: 1m}\n", encoding="utf-8"
    )
    database = f"sqlite:///{tmp_path / 'jobdef.db'}"
    store = RunStore(redis.Redis.from_url(redis_url), prefix)
    return SheetRuntime(
        "celery",
        load_registry([sheets]),
        database,
        store,
        clock=ManualClock(START),
        rng=random.Random(7),
        environ={"JOBDEF_TEST_HOOK": "http://127.0.0.1:9/hook"},
    )


def test_a_retry_that_would_start_past_the_deadline_buries_the_job(runtime: SheetRuntime) -> None:
    clock = runtime.clock
    assert isinstance(clock, ManualClock)
    prepared = runtime.prepare("slow_sync", {"cell": "a", "script": ["retry"]})
    assert prepared.deadline_at == START + 35
    assert runtime.open_run(prepared)
    policy, names = prepared.policy, class_names(ConnectionError)

    first = runtime.begin(policy, prepared.task_id)
    clock.advance(5)
    decision = runtime.failed(
        policy, prepared.task_id, first.attempt, names, ERROR, started_at=START, worker="w"
    )
    assert (decision.action, decision.delay) == ("retry", 10.0)

    clock.advance(10)
    second = runtime.begin(policy, prepared.task_id)
    assert second.attempt == 2
    clock.advance(5)  # 20 s in: the next attempt would start at 30 s, before the deadline
    assert (
        runtime.failed(
            policy, prepared.task_id, 2, names, ERROR, started_at=START + 15, worker="w"
        ).action
        == "retry"
    )

    clock.advance(10)
    runtime.begin(policy, prepared.task_id)
    clock.advance(1)  # 31 s in: the third attempt failed, attempts are used up
    decision = runtime.failed(policy, prepared.task_id, 3, names, ERROR, started_at=0, worker="w")
    assert decision.action == "dead"


def test_the_deadline_alone_buries_a_job_that_has_attempts_left(runtime: SheetRuntime) -> None:
    clock = runtime.clock
    assert isinstance(clock, ManualClock)
    prepared = runtime.prepare("slow_sync", {"cell": "b", "script": ["retry"]})
    runtime.open_run(prepared)
    attempt = runtime.begin(prepared.policy, prepared.task_id).attempt
    clock.advance(26)  # a slow first attempt: now + 10 s is past the 35 s deadline
    decision = runtime.failed(
        prepared.policy,
        prepared.task_id,
        attempt,
        class_names(ConnectionError),
        ERROR,
        started_at=START,
        worker="w",
    )
    assert decision.action == "dead"
    assert "after the deadline of 35s" in decision.reason


def test_a_lost_attempt_is_counted_and_the_burial_is_stored_once(runtime: SheetRuntime) -> None:
    prepared = runtime.prepare("slow_sync", {"cell": "c", "script": ["die"]})
    runtime.open_run(prepared)
    policy = prepared.policy
    for attempt in (1, 2, 3):
        begun = runtime.begin(policy, prepared.task_id)
        if attempt > 1:
            assert begun.lost is not None  # the previous delivery never ended
            assert begun.lost.action == "retry"
            begun = runtime.begin(policy, prepared.task_id)
        assert begun.attempt == attempt
    lost = runtime.begin(policy, prepared.task_id)  # the third delivery comes back too
    assert lost.lost is not None
    assert lost.lost.action == "dead"
    assert lost.lost.reason == "attempts used up (3 of 3)"
    args = {"cell": "c", "script": ["die"]}
    record = runtime.bury(policy, prepared.task_id, args, lost.lost, ERROR)
    backend = open_backend(runtime.database_url)
    try:
        assert [a.outcome for a in backend.attempts(record.id)] == ["reclaimed"] * 3
        assert len(backend.list_jobs(state="dead")) == 1
    finally:
        backend.close()
    # A redelivery of the buried run's last message (the worker died before its ack)
    # runs nothing; a new enqueue under the same task id is a new run.
    with pytest.raises(AlreadyBuried):
        runtime.begin(policy, prepared.task_id)
    assert runtime.open_run(prepared)
    assert runtime.begin(policy, prepared.task_id).attempt == 1


def test_duplicates_are_refused_while_active_and_within_the_dedupe_window(
    runtime: SheetRuntime,
) -> None:
    first = runtime.prepare("keyed", {"cell": "order-7", "script": ["ok"]})
    again = runtime.prepare("keyed", {"cell": "order-7", "script": ["ok"]})
    other = runtime.prepare("keyed", {"cell": "order-8", "script": ["ok"]})
    assert first.task_id == again.task_id == task_id_for(first.policy, "order-7")
    assert other.task_id != first.task_id
    assert runtime.open_run(first)
    assert not runtime.open_run(again)
    assert runtime.open_run(other)
    runtime.begin(first.policy, first.task_id)
    runtime.succeeded(first.policy, first.task_id)
    assert not runtime.open_run(again)  # done a moment ago, within the 1 minute window


def test_freeing_a_stale_run_never_deletes_the_run_another_producer_opened(
    redis_url: str, prefix: str
) -> None:
    """Two producers find the same run unable to go on: the first frees it and opens a new
    one; the second's free, decided on the old run it read, must leave the new one alone
    (before, it deleted it, and both producers sent a run for one key)."""
    first = RunStore(redis.Redis.from_url(redis_url), prefix)
    second = RunStore(redis.Redis.from_url(redis_url), prefix)
    assert first.open("t1", "job", 100.0, None, 600)
    stale = second.load("t1")
    assert stale is not None
    assert first.forget("t1", 100.0)
    assert first.open("t1", "job", 200.0, None, 600)
    assert not second.forget("t1", stale.created_at)
    kept = first.load("t1")
    assert kept is not None
    assert kept.created_at == 200.0
    assert not second.open("t1", "job", 300.0, None, 600)  # the new run holds the key
