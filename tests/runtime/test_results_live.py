"""What a handler returns, held to its sheet's ``result:`` by real worker processes, on
both engines: a value is stored and read back exactly; one too big, not JSON or breaking
the schema is a failed attempt the sheet's ``errors`` retry or bury; ``store: false``
stores nothing; a worker SIGKILLed between a handler's return and the commit of its
completion leaves neither a result without a done job nor a done job without its result.
"""

from __future__ import annotations

import signal
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from runtime_workers import HERE, Workers

from jobdef.backends import open_backend
from jobdef.backends.protocol import Backend
from jobdef.runtime.queue import Queue, connect
from jobdef.sheets.pipeline import load_registry
from support import eventually
from support.stores import ENGINES, engine_db_url

pytestmark = pytest.mark.slow

SHEETS = HERE / "result_sheets"
LONG = 60.0


@pytest.fixture(params=ENGINES)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return engine_db_url(request, tmp_path)


@pytest.fixture
def queue(url: str) -> Iterator[Queue]:
    opened = connect(url, load_registry([SHEETS]))
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def store(url: str, queue: Queue) -> Iterator[Backend]:
    opened = open_backend(url)
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def workers(url: str, tmp_path: Path) -> Iterator[Workers]:
    started = Workers(url, tmp_path, sheets=SHEETS)
    yield started
    started.stop_all()


def _ended(store: Backend, job_id: int) -> bool:
    record = store.get(job_id)
    return record is not None and record.state in ("done", "dead")


def _drain(workers: Workers, store: Backend, ids: list[int]) -> None:
    worker = workers.start("--burst", lease="30s")
    assert worker.wait(LONG) == 0, workers.log()
    assert all(_ended(store, job_id) for job_id in ids), workers.log()


def test_values_are_held_to_the_sheet_and_refusals_are_failed_attempts(
    queue: Queue, store: Backend, workers: Workers
) -> None:
    value = {"total": 7, "lines": [{"sku": "é\u2603", "n": 1.25}, None, True], "nested": {"a": []}}
    kept = queue.enqueue("kept", {"value": value}).job_id
    big = queue.enqueue("kept", {"value": {"total": 1, "pad": "x" * 41_000}}).job_id
    unshaped = queue.enqueue("kept", {"value": {"total": "7"}}).job_id
    unjson = queue.enqueue("unjson", {}).job_id
    fatal = queue.enqueue("refused_fatal", {"value": [1]}).job_id
    dropped = queue.enqueue("dropped", {"value": {"secret": "kept nowhere"}}).job_id
    _drain(workers, store, [kept, big, unshaped, unjson, fatal, dropped])

    done = store.get(kept)
    assert done is not None
    assert (done.state, done.result) == ("done", value)  # exactly, as JSON reads it back
    status = queue.status(done.receipt or "")
    assert status is not None
    assert status.result == value

    dropped_job = store.get(dropped)
    assert dropped_job is not None
    assert (dropped_job.state, dropped_job.result) == ("done", None)

    # errors.default: retry, max_attempts 2: each refusal is retried once, then buried.
    for job_id, why in [
        (big, "bytes as JSON, more than the 40960 allowed by result.max_bytes of "),
        (unshaped, "it breaks result.schema of "),
        (unjson, "it is not JSON (Object of type set is not JSON serializable)"),
    ]:
        record = store.get(job_id)
        assert record is not None
        assert (record.state, record.result) == ("dead", None)
        attempts = store.attempts(job_id)
        assert [a.outcome for a in attempts] == ["retry", "dead"]
        for attempt in attempts:
            assert attempt.error is not None
            assert attempt.error.type == "jobdef.ResultRefused"
            assert attempt.error.message.startswith(
                f"job {job_id} ({record.job}) attempt {attempt.attempt}: return value refused, "
            )
            assert why in attempt.error.message
    # Listed in errors.fatal: buried at the first refusal.
    record = store.get(fatal)
    assert record is not None
    assert record.state == "dead"
    assert [a.outcome for a in store.attempts(fatal)] == ["dead"]
    assert record.last_error is not None
    assert record.last_error.message.endswith(
        "dead: jobdef.ResultRefused is listed in errors.fatal"
    )
    assert "return value refused, it breaks result.schema" in record.last_error.message
    assert "return value refused" in workers.log()


class _Lock:
    """Hold the job's row (PostgreSQL) or the whole file (SQLite) so no worker can commit."""

    def __init__(self, url: str, job_id: int) -> None:
        self.conn: Any
        if url.startswith("sqlite"):
            self.conn = sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None)
            self.conn.execute("BEGIN IMMEDIATE")
        else:
            server, _, schema = url.partition("?schema=")
            self.conn = psycopg.connect(server)
            self.conn.execute(
                f'SELECT 1 FROM "{schema}".jobdef_jobs WHERE id = %s FOR UPDATE', (job_id,)
            )

    def release(self) -> None:
        self.conn.rollback()
        self.conn.close()


def test_a_worker_killed_between_the_return_and_the_commit_keeps_job_and_result_together(
    url: str, queue: Queue, store: Backend, workers: Workers, tmp_path: Path
) -> None:
    gate, mark = tmp_path / "gate", tmp_path / "mark"
    value = {"total": 1, "blob": "y" * 20_000}
    job_id = queue.enqueue("marked", {"value": value, "gate": str(gate), "mark": str(mark)}).job_id
    first = workers.start(name="first", lease="2s")
    eventually(lambda: mark.parent.exists() and _running(store, job_id), LONG, "the job to run")
    lock = _Lock(url, job_id)
    try:
        gate.touch()  # the handler returns now; its completion waits on the lock
        eventually(mark.exists, LONG, "the handler to return")
        time.sleep(0.5)  # the value crosses the pipe; the commit waits on the lock
        first.send_signal(signal.SIGKILL)
        assert first.wait(10) == -signal.SIGKILL
    finally:
        lock.release()
    # Whatever the store holds now, the job and its result go together: PostgreSQL may
    # still finish the completion the dead worker had sent (one statement: the done row
    # and its result at once), or never get it; SQLite's file lock kept it out.
    _together(store, job_id, value)
    # Its lease expires and another worker reclaims it; the next attempt returns again.
    workers.start(name="second", lease="2s")
    eventually(lambda: _ended(store, job_id), LONG, "the job to end")
    done = store.get(job_id)
    assert done is not None
    assert (done.state, done.result) == ("done", value)  # done with its result
    outcomes = [a.outcome for a in store.attempts(job_id)]
    assert outcomes in (["done"], ["reclaimed", "done"]), outcomes
    if url.startswith("sqlite"):
        assert outcomes == ["reclaimed", "done"]


def _together(store: Backend, job_id: int, value: Any) -> None:
    record = store.get(job_id)
    assert record is not None
    assert (record.state, record.result) in (("running", None), ("done", value))


def _running(store: Backend, job_id: int) -> bool:
    record = store.get(job_id)
    return record is not None and record.state == "running"


def test_the_embedded_worker_holds_values_to_the_sheet_too(queue: Queue, store: Backend) -> None:
    from jobdef.runtime.embedded import embedded_worker
    from jobdef.runtime.settings import WorkerSettings

    kept = queue.enqueue("kept", {"value": {"total": 2}}).job_id
    refused = queue.enqueue("refused_fatal", {"value": "no total"}).job_id
    with embedded_worker(queue, settings=WorkerSettings(concurrency=1, lease_seconds=30)):
        eventually(lambda: _ended(store, kept) and _ended(store, refused), LONG, "both to end")
    done, dead = store.get(kept), store.get(refused)
    assert done is not None
    assert dead is not None
    assert (done.state, done.result) == ("done", {"total": 2})
    assert (dead.state, dead.result) == ("dead", None)
    assert dead.last_error is not None
    assert dead.last_error.type == "jobdef.ResultRefused"


def test_workers_killed_at_random_moments_never_split_a_job_from_its_result(
    queue: Queue, store: Backend, workers: Workers
) -> None:
    """Many jobs, each returning a value; a worker SIGKILLed three times mid-drain, at
    whatever point its jobs are (running, returned, being committed); then a last worker
    finishes. Every job ends done with its own value, and at each kill no row holds a
    result without being done, nor is done without it."""
    ids = [
        queue.enqueue("enduring", {"value": {"total": n, "pad": "z" * 2000}}).job_id
        for n in range(300)
    ]
    for round_ in range(3):
        began = _count_ended(store, ids)
        if began == len(ids):
            break  # a fast worker may drain them all before its kill
        worker = workers.start("--concurrency", "2", name=f"k{round_}", lease="1s")
        eventually(
            lambda began=began: _count_ended(store, ids) >= min(len(ids), began + 20),
            LONG,
            "the worker to finish some jobs",
        )
        worker.send_signal(signal.SIGKILL)
        assert worker.wait(10) == -signal.SIGKILL
        for n, job_id in enumerate(ids):
            record = store.get(job_id)
            assert record is not None
            expected = {"total": n, "pad": "z" * 2000}
            assert (record.state == "done") == (record.result == expected), record
            assert record.result in (None, expected)
    # Not --burst: the jobs a killed worker held are reclaimed only once their leases end.
    workers.start(name="last", lease="1s")
    eventually(lambda: _count_ended(store, ids) == len(ids), LONG, "every job to end")
    for n, job_id in enumerate(ids):
        record = store.get(job_id)
        assert record is not None
        assert (record.state, record.result) == ("done", {"total": n, "pad": "z" * 2000})


def _count_ended(store: Backend, ids: list[int]) -> int:
    return sum(1 for job_id in ids if _ended(store, job_id))
