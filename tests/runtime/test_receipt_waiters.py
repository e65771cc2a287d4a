"""A thousand waiters cost a bounded number of statements, on both engines, with threads
and with asyncio tasks: their jobs are read in shared statements, and between ends only
the engine's poll runs (SQLite: one statement per 50 ms for all; PostgreSQL: none, the
ends are told).

Every statement this process sends is counted where the engine's driver sends it:
SQLite's trace callback on each connection made during the test, psycopg's cursor on
PostgreSQL. The workers that run the jobs are other processes and are not counted.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from runtime_workers import HERE, Workers

from jobdef.backends import waiters
from jobdef.backends.records import Receipt
from jobdef.runtime.queue import Queue, connect
from jobdef.runtime.receipts import ReceiptStatus
from jobdef.sheets.pipeline import load_registry
from support import eventually
from support.stores import engine_db_url

SHEETS = HERE / "receipt_sheets"
WAITERS = 1000
LONG = 120.0
IDLE = 1.0  # seconds of waiting with no job ending, counted on their own
POLL = {"sqlite": 0.05, "postgres": 5.0}  # the engines' poll of every waited job


class Statements:
    """Counts every statement this process sends to the store from now on."""

    def __init__(self) -> None:
        self.count = 0
        self._lock = threading.Lock()

    def add(self, *_: Any) -> None:
        with self._lock:
            self.count += 1


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return engine_db_url(request, tmp_path)


@pytest.fixture
def engine(url: str) -> str:
    return "sqlite" if url.startswith("sqlite:") else "postgres"


@pytest.fixture
def queue(url: str) -> Iterator[Queue]:
    opened = connect(url, load_registry([SHEETS]))
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def statements(engine: str, monkeypatch: pytest.MonkeyPatch) -> Statements:
    counted = Statements()
    if engine == "sqlite":
        real_connect = sqlite3.connect

        def connect_traced(*args: Any, **kwargs: Any) -> sqlite3.Connection:
            conn = real_connect(*args, **kwargs)
            conn.set_trace_callback(counted.add)
            return conn

        monkeypatch.setattr(sqlite3, "connect", connect_traced)
    else:
        import psycopg

        real_execute = psycopg.Cursor.execute

        def execute_counted(self: Any, *args: Any, **kwargs: Any) -> Any:
            counted.add()
            return real_execute(self, *args, **kwargs)

        monkeypatch.setattr(psycopg.Cursor, "execute", execute_counted)
    return counted


def _hub(queue: Queue) -> waiters.JobWaiters:
    return waiters.job_waiters(queue.backend.url)


def _phases(
    queue: Queue, statements: Statements, workers: Workers, receipts: list[Receipt]
) -> tuple[int, int]:
    """Statements while the waiters register, while they wait with nothing ending for
    IDLE seconds, and while the workers run every job."""
    eventually(lambda: _hub(queue).waiting == len(receipts), LONG, "every waiter to register")
    time.sleep(0.2)  # the last registrations' statements have run
    registering = statements.count
    time.sleep(IDLE)
    idle = statements.count - registering
    workers.start()
    workers.start(name="w2")
    return registering, idle


def _check(
    engine: str,
    statuses: list[ReceiptStatus | None],
    receipts: list[Receipt],
    *,
    registering: int,
    idle: int,
    ending: int,
    how: str,
) -> None:
    print(
        f"\n{engine}, {len(receipts)} waiters ({how}): {registering} statements to register, "
        f"{idle} in {IDLE:.0f}s of waiting, {ending} while every job ran and ended"
    )
    assert [s.state if s else None for s in statuses] == ["done"] * len(receipts)
    assert [s.result for s in statuses if s] == [{"total": i + 1} for i in range(len(receipts))]
    # Registering: shared statements, a few per round, far fewer than one per waiter.
    assert registering <= len(receipts) // 10
    # Waiting with nothing ending: the engine's poll only, whatever the number of waiters.
    assert idle <= IDLE / POLL[engine] + 3
    # The ends: one statement per round of ends read together, fewer than one per waiter.
    assert ending <= len(receipts) // 2


def test_a_thousand_waiting_threads_cost_a_bounded_number_of_statements(
    engine: str, queue: Queue, statements: Statements, url: str, tmp_path: Path
) -> None:
    receipts = queue.enqueue_many("total", [{"a": i, "b": 1} for i in range(WAITERS)])
    before = statements.count
    statuses: list[ReceiptStatus | None] = [None] * WAITERS

    def wait(index: int) -> None:
        statuses[index] = queue.wait(receipts[index], LONG)

    threads = [threading.Thread(target=wait, args=(i,)) for i in range(WAITERS)]
    workers = Workers(url, tmp_path, sheets=SHEETS)
    try:
        for thread in threads:
            thread.start()
        registering, idle = _phases(queue, statements, workers, receipts)
        started_ending = statements.count
        for thread in threads:
            thread.join(LONG)
        ending = statements.count - started_ending
    finally:
        workers.stop_all()
    _check(
        engine,
        statuses,
        receipts,
        registering=registering - before,
        idle=idle,
        ending=ending,
        how="threads",
    )


def test_a_thousand_waiting_tasks_cost_a_bounded_number_of_statements(
    engine: str, queue: Queue, statements: Statements, url: str, tmp_path: Path
) -> None:
    receipts = queue.enqueue_many("total", [{"a": i, "b": 1} for i in range(WAITERS)])
    before = statements.count
    workers = Workers(url, tmp_path, sheets=SHEETS)
    counts: dict[str, int] = {}

    async def main() -> list[ReceiptStatus | None]:
        tasks = [asyncio.create_task(queue.wait_async(r, LONG)) for r in receipts]
        # The phases' sleeps block this loop's thread, never the waiters' thread.
        loop = asyncio.get_running_loop()
        registering, idle = await loop.run_in_executor(
            None, _phases, queue, statements, workers, receipts
        )
        counts.update(registering=registering, idle=idle, started_ending=statements.count)
        return list(await asyncio.gather(*tasks))

    try:
        statuses = asyncio.run(main())
        ending = statements.count - counts["started_ending"]
    finally:
        workers.stop_all()
    _check(
        engine,
        statuses,
        receipts,
        registering=counts["registering"] - before,
        idle=counts["idle"],
        ending=ending,
        how="asyncio tasks",
    )
