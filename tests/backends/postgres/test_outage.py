"""A PostgreSQL outage under a real worker process: its loop goes on between tries.

The outage is a database of its own that stops taking connections while every
session on it is ended, as a restart does; the server itself stays up for the
other tests. The worker used to wait inside the failing call for up to the
reconnect timeout (30 s): signals, its children's timeouts and its heartbeats
all waited too.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jobdef.backends.postgres.engine import PostgresBackend
from jobdef.backends.records import NewJob
from support import eventually

from . import proc
from .helpers import query
from .sheets import DEFAULTS, JOB

pytestmark = pytest.mark.slow
SPAWN = multiprocessing.get_context("spawn")
TIMEOUT = 4.0  # the sheet's timeout of the job `stuck`
SCHEMA = "jobdef_outage"


class Outage:
    """A database of its own, and a way to take it away and give it back."""

    def __init__(self, admin_url: str) -> None:
        self.admin_url = admin_url
        self.database = f"jobdef_outage_{uuid.uuid4().hex[:8]}"
        self.url = admin_url.rsplit("/", 1)[0] + "/" + self.database

    def begin(self) -> None:
        query(self.admin_url, f"ALTER DATABASE {self.database} ALLOW_CONNECTIONS false")
        query(
            self.admin_url,
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
            (self.database,),
        )

    def end(self) -> None:
        query(self.admin_url, f"ALTER DATABASE {self.database} ALLOW_CONNECTIONS true")


@pytest.fixture
def outage(postgres_url: str) -> Iterator[Outage]:
    made = Outage(postgres_url)
    query(postgres_url, f"CREATE DATABASE {made.database}")
    try:
        yield made
    finally:
        query(postgres_url, f"DROP DATABASE IF EXISTS {made.database} WITH (FORCE)")


def _sheets(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    job = JOB.format(
        name="stuck",
        handler="pause",
        args="  marker: {type: string}\n  seconds: {type: number}",
    )
    text = DEFAULTS + job + f"timeout: {TIMEOUT:g}s\nmax_attempts: 1\n"
    (folder / "jobs.yaml").write_text(text)
    return folder


def _start_worker(outage: Outage, tmp_path: Path, log: Path) -> Any:
    process = SPAWN.Process(
        target=proc.run_worker,
        args=(outage.url, SCHEMA, str(_sheets(tmp_path / "jobdefs"))),
        kwargs={"concurrency": 1, "lease_seconds": 3.0, "log_file": str(log)},
    )
    process.start()
    return process


def _started_job(outage: Outage, marker: Path) -> tuple[int, int]:
    """Enqueue `stuck` (60 s, past its timeout); once it runs, its id and its child's pid."""
    with PostgresBackend(f"{outage.url}?schema={SCHEMA}") as backend:
        backend.migrate()
        [result] = backend.enqueue(
            [NewJob("stuck", {"marker": str(marker), "seconds": 60.0}, "default")]
        )
    eventually(marker.exists, 60, "the job starts")
    # And the worker maintains: its outbox sender thread runs.
    leases = f"SELECT holder FROM {SCHEMA}.jobdef_leases"
    eventually(lambda: query(outage.url, leases), 30, "the worker maintains")
    return result.id, int(marker.read_text().split()[1])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _lines(log: Path, text: str) -> int:
    return sum(text in line for line in log.read_text().splitlines())


@pytest.fixture
def cleanup() -> Iterator[list[Any]]:
    processes: list[Any] = []
    try:
        yield processes
    finally:
        for process in processes:
            if process.is_alive():
                process.kill()
            process.join()


def test_a_handler_timeout_is_enforced_during_an_outage_and_logged_once(
    outage: Outage, tmp_path: Path, cleanup: list[Any]
) -> None:
    log = tmp_path / "worker.log"
    worker = _start_worker(outage, tmp_path, log)
    cleanup.append(worker)
    job_id, child = _started_job(outage, tmp_path / "marker")
    started = time.monotonic()
    outage.begin()
    try:
        eventually(lambda: not _alive(child), 30, "the timed-out child is killed")
        killed_after = time.monotonic() - started
        time.sleep(3.0)  # several failed tries
    finally:
        outage.end()
    print(f"child killed {killed_after:.2f}s after its start (timeout {TIMEOUT:g}s)")
    assert killed_after <= TIMEOUT + 3.0

    with PostgresBackend(f"{outage.url}?schema={SCHEMA}") as backend:
        eventually(lambda: backend.get(job_id).state == "dead", 30, "the attempt is recorded")
        assert [a.outcome for a in backend.attempts(job_id)] == ["timeout"]
    # One line when the outage begins, one when it ends: from the worker's loop and
    # from its outbox sender thread, each; no traceback.
    # The job is recorded by whichever of the two met the server first: the other one's
    # "works again" may still be on its way to the log.
    eventually(lambda: _lines(log, "jobdef.worker:the job store works again"), 10)
    eventually(lambda: _lines(log, "outbox sender: the job store works again"), 10)
    text = log.read_text()
    assert _lines(log, "jobdef.worker:the job store cannot be used") == 1, text
    assert _lines(log, "jobdef.worker:the job store works again") == 1, text
    assert _lines(log, "outbox sender: the job store cannot be used") == 1, text
    assert _lines(log, "outbox sender: the job store works again") == 1, text
    assert "Traceback" not in log.read_text()
    os.kill(worker.pid, signal.SIGTERM)
    worker.join(30)
    assert worker.exitcode == 0


def test_a_worker_stops_at_once_when_told_to_during_an_outage(
    outage: Outage, tmp_path: Path, cleanup: list[Any]
) -> None:
    log = tmp_path / "worker.log"
    worker = _start_worker(outage, tmp_path, log)
    cleanup.append(worker)
    _job_id, child = _started_job(outage, tmp_path / "marker")
    outage.begin()
    try:
        # The worker heartbeats every second (a 3 s lease): it has met the outage.
        time.sleep(1.5)
        os.kill(worker.pid, signal.SIGTERM)  # drain: the job runs on
        time.sleep(0.5)  # two signals sent at once are delivered as one
        asked = time.monotonic()
        os.kill(worker.pid, signal.SIGTERM)  # stop now
        worker.join(20)
        stopped_after = time.monotonic() - asked
    finally:
        outage.end()
    print(f"worker stopped {stopped_after:.2f}s after a second SIGTERM during an outage")
    assert worker.exitcode is not None
    assert stopped_after <= 5.0
    assert not _alive(child)
