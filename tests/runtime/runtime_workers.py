"""The runtime folder's test sheets and its worker processes, for test modules to import.

They live here rather than in ``conftest.py``: several test folders have a
``conftest`` module, and ``from conftest import ...`` gets whichever was imported
first when one pytest run collects more than this folder.
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from jobdef.backends import open_backend
from jobdef.backends.protocol import Backend
from jobdef.policy.registry import Registry
from jobdef.runtime import Worker, WorkerSettings
from support.workers import Processes, worker_command

HERE = Path(__file__).resolve().parent
SHEETS = HERE / "sheets"


class Workers:
    """Worker processes started with `python -m jobdef worker`, killed at teardown."""

    def __init__(self, db_url: str, tmp_path: Path, sheets: Path = SHEETS) -> None:
        self.db_url = db_url
        self.tmp_path = tmp_path
        self.sheets = sheets
        self.processes = Processes(tmp_path, importable=(HERE,))

    def start(self, *extra: str, name: str = "w", lease: str = "1s") -> subprocess.Popen[bytes]:
        command = worker_command(self.db_url, self.sheets, "--lease", lease, *extra)
        return self.processes.start(name, command).process

    def log(self, name: str = "w") -> str:
        return self.processes.log(name)

    def stop_all(self) -> None:
        self.processes.close()


@contextmanager
def running_worker(
    db_url: str, registry: Registry, clock: Callable[[], float] | None = None, **options: Any
) -> Iterator[Worker]:
    """A worker in a thread of this process (its handlers run in child processes).

    ``clock`` is both the worker's and its store's: the store stamps claims and
    refills rate buckets with it.
    """
    backend = open_backend(db_url) if clock is None else open_backend(db_url, clock=clock)
    settings = WorkerSettings(poll_interval=0.02, **options)
    worker = Worker(backend, registry, settings, clock=clock)
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    try:
        yield worker
    finally:
        worker.request_stop()
        thread.join(timeout=30)
        if thread.is_alive():
            worker.request_stop()
            thread.join(timeout=30)
        backend.close()


def max_overlap(backend: Backend, job_ids: list[int], slack: float = 0.0) -> int:
    """The most attempts of these jobs running at one time, from the attempts table.

    ``slack`` seconds are taken off the start of each attempt: on PostgreSQL each
    timestamp is read from the process clock just before its statement, so under
    load a claim can be stamped a few milliseconds before the completion that
    freed its place. A real breach of the limit overlaps for most of a job.
    """
    events = []
    for job_id in job_ids:
        for attempt in backend.attempts(job_id):
            assert attempt.finished_at is not None
            events.append((attempt.started_at + slack, 1))
            events.append((attempt.finished_at, -1))
    running = peak = 0
    for _, change in sorted(events):  # at equal times an end (-1) sorts before a start
        running += change
        peak = max(peak, running)
    return peak
