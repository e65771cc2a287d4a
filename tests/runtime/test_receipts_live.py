"""Receipts with real worker processes on both engines: status follows a job from accepted to
its end, wait returns when it ends (PostgreSQL: woken by a notification; SQLite: within one
poll), a retried job has not ended until its last attempt, and an unknown token gets None."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from runtime_workers import HERE, Workers

from jobdef.backends.records import Receipt, RetentionRule
from jobdef.errors import UsageError
from jobdef.runtime.queue import Queue, connect
from jobdef.runtime.receipts import ReceiptStatus
from jobdef.sheets.pipeline import load_registry
from support import eventually

pytestmark = [pytest.mark.every_engine, pytest.mark.slow]  # worker processes

SHEETS = HERE / "receipt_sheets"
LONG = 60.0  # a wait this long that returns sooner was answered, not timed out


@pytest.fixture
def queue(db_url: str) -> Iterator[Queue]:
    opened = connect(db_url, load_registry([SHEETS]))
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def workers(db_url: str, tmp_path: Path) -> Iterator[Workers]:
    started = Workers(db_url, tmp_path, sheets=SHEETS)
    yield started
    started.stop_all()


def _state(queue: Queue, receipt: Receipt | str) -> str | None:
    status = queue.status(receipt)
    return None if status is None else status.state


def test_status_follows_a_job_from_accepted_through_running_to_done(
    queue: Queue, workers: Workers, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    receipt = queue.enqueue("gate", {"path": str(gate)})
    accepted = queue.status(receipt)
    assert accepted is not None
    assert (accepted.state, accepted.attempts, accepted.max_attempts) == ("accepted", 0, 1)
    assert (accepted.job, accepted.title) == ("gate", "Wait for the gate to open")
    assert accepted.next_start == accepted.created_at
    assert (accepted.result, accepted.ended) == (None, False)
    assert queue.status(receipt.token) == accepted  # the token alone, as a browser holds it

    workers.start()
    eventually(lambda: _state(queue, receipt) == "running", LONG, "the job to run")
    running = queue.status(receipt.token)
    assert running is not None
    assert (running.attempts, running.next_start) == (1, None)
    assert running.started_at is not None

    gate.touch()
    done = queue.wait(receipt, LONG)
    assert done is not None
    assert (done.state, done.ended, done.attempts) == ("done", True, 1)
    assert done.result == {"opened": True}
    assert done.finished_at is not None
    assert (done.job_id, done.token) == (receipt.job_id, receipt.token)


def test_wait_returns_soon_after_the_job_ends(
    queue: Queue, workers: Workers, tmp_path: Path, db_url: str
) -> None:
    """The delay from the job's end (its row's finished_at, on the store's clock) to the
    waiter's return, printed: PostgreSQL wakes the waiter by a notification, SQLite's
    waiters read the store every 50 ms."""
    gate = tmp_path / "gate"
    receipt = queue.enqueue("gate", {"path": str(gate)})
    workers.start()
    eventually(lambda: _state(queue, receipt) == "running", LONG, "the job to run")
    answered: list[tuple[ReceiptStatus | None, float]] = []
    waiter = threading.Thread(
        target=lambda: answered.append((queue.wait(receipt, LONG), queue.clock()))
    )
    waiter.start()
    time.sleep(0.3)  # the waiter is waiting (not reading a job that has ended)
    gate.touch()
    waiter.join(LONG + 10)
    [(status, returned_at)] = answered
    assert status is not None
    assert status.state == "done"
    assert status.finished_at is not None
    engine = db_url.partition(":")[0]
    print(
        f"\n{engine}: wait returned {1000 * (returned_at - status.finished_at):.1f} ms "
        "after the job ended"
    )


def test_a_retried_job_has_not_ended_until_its_last_attempt(queue: Queue, workers: Workers) -> None:
    succeeds = queue.enqueue("flaky", {"succeed_on": 3})
    fails = queue.enqueue("flaky", {"succeed_on": 4})  # more than its 3 attempts
    workers.start()
    seen = eventually(
        lambda: (s := queue.status(succeeds)) is not None and s.state == "retry_waiting" and s,
        LONG,
        "the first retry",
    )
    assert seen.next_start is not None
    assert seen.next_start > seen.created_at
    assert not seen.ended
    done = queue.wait(succeeds, LONG)
    dead = queue.wait(fails.token, LONG)
    assert done is not None
    assert dead is not None
    assert (done.state, done.attempts, done.result) == ("done", 3, 3)
    assert (dead.state, dead.attempts, dead.result) == ("dead", 3, None)
    assert queue.backend.resolve(fails.job_id, "handled by hand")
    assert _state(queue, fails) == "failed"


def test_wait_after_the_job_ended_returns_at_once(queue: Queue, workers: Workers) -> None:
    receipt = queue.enqueue("total", {"a": 2, "b": 3})
    cancelled = queue.enqueue("total", {"a": 0, "b": 0}, delay=3600)
    assert queue.backend.cancel(cancelled.job_id)
    workers.start()
    assert queue.wait(receipt, LONG).state == "done"
    for target in (receipt, receipt.token, receipt.job_id, cancelled, cancelled.token):
        started = time.monotonic()
        status = queue.wait(target, LONG)
        assert status is not None
        assert status.state in ("done", "cancelled")
        assert time.monotonic() - started < LONG / 2  # answered, not timed out
    assert queue.status(receipt).result == {"total": 5}


def test_a_cancel_ends_a_wait(queue: Queue) -> None:
    receipt = queue.enqueue("total", {"a": 1, "b": 1})
    answered: list[ReceiptStatus | None] = []
    waiter = threading.Thread(target=lambda: answered.append(queue.wait(receipt, LONG)))
    waiter.start()
    time.sleep(0.3)
    assert queue.backend.cancel(receipt.job_id)
    waiter.join(LONG + 10)
    assert [s.state if s else None for s in answered] == ["cancelled"]


def test_an_unknown_or_pruned_token_gets_none(queue: Queue, workers: Workers) -> None:
    receipt = queue.enqueue("total", {"a": 1, "b": 2})
    other = queue.enqueue("total", {"a": 9, "b": 9}, delay=3600)
    workers.start()
    assert queue.wait(receipt, LONG).state == "done"
    for unknown in ("A" * 23, "not a token", str(receipt.job_id)):
        assert queue.status(unknown) is None
        assert queue.wait(unknown, LONG) is None
    # A receipt of a job that is gone (pruned), by its token or as the Receipt itself.
    assert queue.backend.prune([RetentionRule("total", done=0.0, dead=None)]) == 1
    assert queue.status(receipt) is None
    assert queue.status(receipt.token) is None
    assert queue.wait(receipt, LONG) is None
    assert queue.wait(receipt.token, LONG) is None
    # Another job's receipt with this job's id is not this job's.
    assert queue.wait(Receipt(other.job_id, receipt.token, True), 0.2) is None


def test_wait_that_times_out_returns_the_status_as_it_stands(queue: Queue) -> None:
    receipt = queue.enqueue("total", {"a": 1, "b": 1})  # no worker: it stays queued
    status = queue.wait(receipt, 0.2)
    assert status is not None
    assert (status.state, status.ended) == ("accepted", False)
    assert queue.wait(receipt.token, 0) is not None


def test_wait_async_returns_when_the_job_ends(
    queue: Queue, workers: Workers, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    receipt = queue.enqueue("gate", {"path": str(gate)})
    workers.start()
    eventually(lambda: _state(queue, receipt) == "running", LONG, "the job to run")

    async def main() -> tuple[ReceiptStatus | None, ReceiptStatus | None, int]:
        ticks = 0

        async def tick() -> None:  # the loop keeps running while the waiters wait
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        ticker = asyncio.create_task(tick())
        timed_out = await queue.wait_async(receipt.token, 0.2)
        gate.touch()
        ended = await queue.wait_async(receipt, LONG)
        ticker.cancel()
        return timed_out, ended, ticks

    timed_out, ended, ticks = asyncio.run(main())
    assert timed_out is not None
    assert timed_out.state == "running"
    assert ended is not None
    assert (ended.state, ended.result) == ("done", {"opened": True})
    assert ticks > 5


def test_a_receipt_of_another_kind_or_a_wrong_timeout_is_one_clear_error(queue: Queue) -> None:
    receipt = queue.enqueue("total", {"a": 1, "b": 1})
    for wrong in (3.5, None, b"token", True):
        with pytest.raises(UsageError, match=r"a receipt is a Receipt, its token \(str\) or"):
            queue.status(wrong)  # type: ignore[arg-type]
    for timeout in (-1, float("nan"), "30s", None):
        with pytest.raises(UsageError, match=r"a wait's timeout is seconds, 0 or more"):
            queue.wait(receipt, timeout)  # type: ignore[arg-type]


@pytest.fixture
def pg_queue(postgres_url: str, postgres_schema: str) -> Iterator[Queue]:
    opened = connect(f"{postgres_url}?schema={postgres_schema}", load_registry([SHEETS]))
    try:
        yield opened
    finally:
        opened.close()


def test_a_waiter_is_answered_after_the_waiters_session_was_lost(
    pg_queue: Queue, tmp_path: Path
) -> None:
    """The notification of an end that came while no session listened is lost with the
    session: the waiters' thread listens again and reads every waited job, so the
    waiter is answered all the same."""
    from jobdef.backends.waiters import job_waiters

    receipt = pg_queue.enqueue("total", {"a": 4, "b": 5})
    answered: list[ReceiptStatus | None] = []
    waiter = threading.Thread(target=lambda: answered.append(pg_queue.wait(receipt, LONG)))
    waiter.start()
    hub = job_waiters(pg_queue.backend.url)
    signal = eventually(lambda: hub.waiting == 1 and hub._signal, LONG, "the waiter")
    pid = eventually(lambda: signal.backend_pid, LONG, "the waiters' session")
    with psycopg.connect(pg_queue.backend.conninfo, autocommit=True) as conn:
        conn.execute("SELECT pg_terminate_backend(%s)", [pid])
    workers = Workers(pg_queue.backend.url, tmp_path, sheets=SHEETS)
    try:
        workers.start()
        waiter.join(LONG + 10)
    finally:
        workers.stop_all()
    assert [(s.state, s.result) if s else None for s in answered] == [("done", {"total": 9})]
