"""A full disk under a running worker and under the CLI: nothing lost, nothing run twice.

The job database sits on a real tmpfs of a few megabytes, filled to the last
byte while a worker process runs. Mounting needs root (as on CI machines);
elsewhere the tests skip, and under ``CI=true`` they fail instead.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from runtime_workers import SHEETS, Workers

from jobdef.backends import open_backend
from jobdef.backends.protocol import Backend
from jobdef.cli import main
from jobdef.policy.registry import Registry
from jobdef.runtime import Queue
from support import eventually

DISK_SIZE = "8m"


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A tmpfs of DISK_SIZE mounted below ``tmp_path``, unmounted afterwards."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={DISK_SIZE}", "tmpfs", str(disk)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        reason = f"cannot mount a small tmpfs: {mounted.stderr.strip() or 'not root'}"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true requires the full-disk tests: {reason}")
        pytest.skip(reason)
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


@pytest.fixture
def db_url(small_disk: Path) -> str:
    return f"sqlite:///{small_disk / 'jobs.db'}"


def fill(disk: Path) -> Path:
    """Write a file until the disk has no byte left; returns it (remove it to free the disk)."""
    filler = disk / "filler"
    chunk = b"\0" * 65536
    with filler.open("wb", buffering=0) as stream:
        try:
            while True:
                stream.write(chunk)
        except OSError:
            pass
        try:
            while True:
                stream.write(b"\0")
        except OSError:
            pass
    return filler


@pytest.mark.slow
def test_a_worker_waits_out_a_full_disk_and_records_every_job_once(
    small_disk: Path,
    db_url: str,
    backend: Backend,
    registry: Registry,
    workers: Workers,
) -> None:
    queue = Queue(backend, registry)
    jobs = [queue.enqueue("sleep", {"seconds": 0.05}).id for _ in range(120)]
    worker = workers.start("--concurrency", "2", lease="60s")

    def done() -> int:
        return sum(backend.get(job_id).state == "done" for job_id in jobs)  # type: ignore[union-attr]

    eventually(lambda: done() >= 10, what="the worker has finished some jobs")
    filler = fill(small_disk)
    eventually(
        lambda: "the job store cannot be used" in workers.log(),
        what="the worker has met the full disk",
    )
    time.sleep(1.0)
    assert worker.poll() is None, workers.log()
    assert done() < len(jobs)

    filler.unlink()
    eventually(lambda: done() == len(jobs), timeout=60, what="every job is done")
    assert "the job store works again" in workers.log()
    # Each job ran once: no attempt was lost with the disk, none was run again.
    assert [len(backend.attempts(job_id)) for job_id in jobs] == [1] * len(jobs)
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(30) == 0
    assert "Traceback" not in workers.log()


def test_enqueue_on_a_full_disk_says_so_and_stores_nothing(
    small_disk: Path, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["enqueue", "noop", "--args", '{"n": 1}', "--db", db_url, "--sheets", str(SHEETS)]
    open_backend(db_url).close()  # the database exists; its WAL and index files do not
    filler = fill(small_disk)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "free some space" in err
    assert "Traceback" not in err
    filler.unlink()
    store = open_backend(db_url)
    try:
        assert store.list_jobs() == []
    finally:
        store.close()
    assert main(argv) == 0


def test_a_worker_stopped_while_the_disk_is_full_exits_cleanly_and_loses_nothing(
    small_disk: Path,
    db_url: str,
    backend: Backend,
    registry: Registry,
    workers: Workers,
) -> None:
    queue = Queue(backend, registry)
    jobs = [queue.enqueue("sleep", {"seconds": 0.05}).id for _ in range(60)]
    worker = workers.start("--concurrency", "2", "--grace", "2s", lease="60s")
    eventually(
        lambda: any(backend.get(j).state == "done" for j in jobs),  # type: ignore[union-attr]
        what="the worker has finished a job",
    )
    filler = fill(small_disk)
    eventually(lambda: "the job store cannot be used" in workers.log(), what="the full disk")
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(60) == 0, workers.log()
    assert "Traceback" not in workers.log()
    assert workers.log().count("could not release") <= 1  # one line, not one per job
    filler.unlink()
    # What it could not record is still leased, so it is reclaimed, never lost.
    states = [backend.get(j).state for j in jobs]  # type: ignore[union-attr]
    assert set(states) <= {"done", "running", "queued"}
    assert "running" in states or "queued" in states


def test_a_burst_worker_whose_last_call_ends_an_outage_says_the_store_works_again(
    backend: Backend,
    registry: Registry,
    small_disk: Path,
    workers: Workers,
) -> None:
    """Its handler processes finish what it holds while the disk is full; the call that
    records them, once there is room, finds nothing more to claim and the worker exits:
    that call ended the outage, and the log says so before the exit."""
    queue = Queue(backend, registry)
    jobs = [queue.enqueue("sleep", {"seconds": 0.3}).id for _ in range(4)]
    worker = workers.start("--burst", "--concurrency", "2", lease="60s")
    eventually(
        lambda: all(backend.get(job_id).state == "running" for job_id in jobs),  # type: ignore[union-attr]
        what="the worker has claimed every job",
    )
    filler = fill(small_disk)
    eventually(
        lambda: "the job store cannot be used" in workers.log(),
        what="the worker has met the full disk",
    )
    time.sleep(1.5)  # the handlers end meanwhile: their results wait in the worker
    filler.unlink()
    assert worker.wait(60) == 0, workers.log()
    assert "the job store works again" in workers.log(), workers.log()
    assert [backend.get(job_id).state for job_id in jobs] == ["done"] * 4  # type: ignore[union-attr]
