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
from dataclasses import dataclass
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

pytestmark = pytest.mark.every_engine

SHEETS = HERE / "receipt_sheets"
WAITERS = 1000
LONG = 120.0
IDLE = 1.0  # seconds of waiting with no job ending, counted on their own
POLL = {"sqlite": 0.05, "postgres": 5.0}  # the engines' poll of every waited job


class Statements:
    """Counts every statement this process sends to the store from now on."""

    def __init__(self) -> None:
        self.count = 0
        self.before = 0  # the count when the phase being measured began
        self._lock = threading.Lock()

    def add(self, *_: Any) -> None:
        with self._lock:
            self.count += 1


@pytest.fixture
def engine(db_url: str) -> str:
    return "sqlite" if db_url.startswith("sqlite:") else "postgres"


@pytest.fixture
def queue(db_url: str) -> Iterator[Queue]:
    opened = connect(db_url, load_registry([SHEETS]))
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


@dataclass
class Phase:
    """The statements sent during one phase of a test, and how long it lasted."""

    statements: int
    seconds: float


def _phases(
    queue: Queue, statements: Statements, workers: Workers, receipts: list[Receipt], begun: float
) -> tuple[Phase, Phase]:
    """The phases before the jobs run: the waiters registering (from ``begun``, when the
    first started, with ``statements.count`` then in ``statements.before``), and IDLE
    seconds of waiting with nothing ending. Then the workers start."""
    eventually(lambda: _hub(queue).waiting == len(receipts), LONG, "every waiter to register")
    time.sleep(0.2)  # the last registrations' statements have run
    registered = statements.count
    registering = Phase(registered - statements.before, time.monotonic() - begun)
    started = time.monotonic()
    time.sleep(IDLE)
    idle = Phase(statements.count - registered, time.monotonic() - started)
    workers.start()
    workers.start(name="w2")
    return registering, idle


def _rounds(phase: Phase) -> float:
    """How many rounds of statements the waiters' thread may start in ``phase`` at most."""
    return phase.seconds / waiters.ROUND_GAP + 1


def _check(
    engine: str,
    statuses: list[ReceiptStatus | None],
    receipts: list[Receipt],
    phases: dict[str, Phase],
    how: str,
) -> None:
    shown = ", ".join(
        f"{name}: {p.statements} statements in {p.seconds:.2f}s" for name, p in phases.items()
    )
    print(f"\n{engine}, {len(receipts)} waiters ({how}): {shown}")
    assert [s.state if s else None for s in statuses] == ["done"] * len(receipts)
    assert [s.result for s in statuses if s] == [{"total": i + 1} for i in range(len(receipts))]
    # Registering and ending: shared statements, at most a read of the new waiters and
    # one of the ended jobs per round (plus a session's few), however many waiters; so
    # fewer than one per waiter.
    for name in ("registering", "ending"):
        phase = phases[name]
        assert phase.statements <= 2 * _rounds(phase) + 5, name
        assert phase.statements < len(receipts), name
    # Waiting with nothing ending: the engine's poll only, whatever the number of waiters.
    idle = phases["idle"]
    assert idle.statements <= idle.seconds / POLL[engine] + 3


@pytest.mark.slow
def test_a_thousand_waiting_threads_cost_a_bounded_number_of_statements(
    engine: str, queue: Queue, statements: Statements, db_url: str, tmp_path: Path
) -> None:
    receipts = queue.enqueue_many("total", [{"a": i, "b": 1} for i in range(WAITERS)])
    statuses: list[ReceiptStatus | None] = [None] * WAITERS

    def wait(index: int) -> None:
        statuses[index] = queue.wait(receipts[index], LONG)

    threads = [threading.Thread(target=wait, args=(i,)) for i in range(WAITERS)]
    workers = Workers(db_url, tmp_path, sheets=SHEETS)
    try:
        statements.before, begun = statements.count, time.monotonic()
        for thread in threads:
            thread.start()
        registering, idle = _phases(queue, statements, workers, receipts, begun)
        counted, started = statements.count, time.monotonic()
        for thread in threads:
            thread.join(LONG)
        ending = Phase(statements.count - counted, time.monotonic() - started)
    finally:
        workers.stop_all()
    phases = {"registering": registering, "idle": idle, "ending": ending}
    _check(engine, statuses, receipts, phases, "threads")


@pytest.mark.slow
def test_a_thousand_waiting_tasks_cost_a_bounded_number_of_statements(
    engine: str, queue: Queue, statements: Statements, db_url: str, tmp_path: Path
) -> None:
    receipts = queue.enqueue_many("total", [{"a": i, "b": 1} for i in range(WAITERS)])
    workers = Workers(db_url, tmp_path, sheets=SHEETS)
    phases: dict[str, Phase] = {}

    async def main() -> list[ReceiptStatus | None]:
        statements.before, begun = statements.count, time.monotonic()
        tasks = [asyncio.create_task(queue.wait_async(r, LONG)) for r in receipts]
        # The phases' sleeps block a thread of the loop's executor, never the loop.
        loop = asyncio.get_running_loop()
        phases["registering"], phases["idle"] = await loop.run_in_executor(
            None, _phases, queue, statements, workers, receipts, begun
        )
        counted, started = statements.count, time.monotonic()
        done = list(await asyncio.gather(*tasks))
        phases["ending"] = Phase(statements.count - counted, time.monotonic() - started)
        return done

    try:
        statuses = asyncio.run(main())
    finally:
        workers.stop_all()
    _check(engine, statuses, receipts, phases, "asyncio tasks")
