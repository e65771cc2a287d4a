"""Hosts whose clocks disagree share leases safely: PostgreSQL's engine keeps the server's time.

A real worker process whose wall clock is two minutes ahead maintains (it
reclaims expired leases) while a healthy worker runs a job that heart-beats.
With each host's own clock, the skewed maintainer saw the live lease as two
minutes overdue, reclaimed the job, and the healthy worker's completion was
refused.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobdef.backends.postgres.clock import ServerClock
from jobdef.backends.postgres.engine import PostgresBackend
from jobdef.backends.records import NewJob
from jobdef.errors import BackendError
from support import eventually

from .helpers import query
from .sheets import write_sheets
from .test_worker import Workers

pytestmark = pytest.mark.slow

AHEAD = 120.0  # seconds the skewed host's clock is ahead


@pytest.fixture
def fleet(postgres_url: str, pg_backend: PostgresBackend, tmp_path: Path) -> Iterator[Workers]:
    started = Workers(postgres_url, pg_backend.schema, write_sheets(tmp_path / "jobdefs"))
    try:
        yield started
    finally:
        started.stop_all()


def _holder(backend: PostgresBackend) -> str:
    rows = query(
        backend.conninfo,
        f'SELECT holder FROM "{backend.schema}".jobdef_leases WHERE name = %s',
        ("maintenance",),
    )
    return str(rows[0][0]) if rows else ""


def test_a_maintainer_whose_clock_is_ahead_does_not_reclaim_a_live_job(
    fleet: Workers, pg_backend: PostgresBackend, tmp_path: Path
) -> None:
    # The skewed worker serves another queue: it only maintains.
    skewed = fleet.start(concurrency=1, clock_skew=AHEAD, queues=["elsewhere"])
    eventually(lambda: f":{skewed.pid}:" in _holder(pg_backend), 60, "the skewed one maintains")
    fleet.start(concurrency=1, lease_seconds=3.0)
    marker = tmp_path / "marker"
    # 8 s: more than twice the lease, so the job lives on its heartbeats alone.
    [job] = pg_backend.enqueue(
        [NewJob("pause", {"marker": str(marker), "seconds": 8.0}, "default")]
    )
    eventually(lambda: pg_backend.get(job.id).state not in ("queued", "running"), 60, "the end")
    assert f":{skewed.pid}:" in _holder(pg_backend)  # it maintained all along
    assert [a.outcome for a in pg_backend.attempts(job.id)] == ["done"]
    os.kill(skewed.pid, signal.SIGTERM)


def test_the_server_clock_follows_the_server_not_this_hosts_wall_clock(
    pg_backend: PostgresBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    (server,) = query(pg_backend.conninfo, "SELECT extract(epoch FROM clock_timestamp())")[0]
    clock = ServerClock(pg_backend._server_time)
    monkeypatch.setattr("time.time", lambda: 0.0)  # a wall clock far off
    assert abs(clock() - float(server)) < 5.0


def test_the_server_clock_keeps_its_reading_while_the_server_is_out() -> None:
    readings = iter([1_000.0])

    def read() -> float:
        try:
            return next(readings)
        except StopIteration:
            raise BackendError("the server is out") from None

    clock = ServerClock(read, resync=0.0)
    first = clock()
    assert 1_000.0 <= first < 1_001.0
    assert first <= clock() < 1_001.0  # the failed reading kept the offset
    with pytest.raises(BackendError):
        ServerClock(read)()  # never read: nothing to give


def test_a_reading_with_a_slow_round_trip_is_taken_again_and_the_quickest_kept() -> None:
    """A reading is off by up to half its round trip: one taken while the machine was
    busy (here an answer 80 ms late) would put this host's times 40 ms off."""
    server_offset = 1_000_000.0
    delays = iter([0.08, 0.0])
    reads: list[float] = []

    def read() -> float:
        now = time.monotonic() + server_offset
        time.sleep(next(delays, 0.0))  # the answer's way back
        reads.append(now)
        return now

    clock = ServerClock(read)
    assert abs(clock() - (time.monotonic() + server_offset)) < 0.005
    assert len(reads) == 2  # the slow one, then a quick one that ended it
